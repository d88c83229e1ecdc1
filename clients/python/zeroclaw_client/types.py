"""The daemon's types, as the OpenRPC document names them (generated in `_generated`): a result, an update, a
daemon request's params, a param's choices (`SessionApproveParamsDecision`)."""

from __future__ import annotations

from ._generated import *  # noqa: F403 - the generated module's `__all__`
from ._generated import __all__ as __all__
