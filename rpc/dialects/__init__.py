"""The dialects a daemon serves besides the standard one, by name: the composition root's table (app/daemon.py
hands its values to the dispatcher; a listener that speaks one dialect gives its peers that one, `Peer.dialect`).

An `initialize` asks for the first dialect here that `claims` its params, else it gets the standard one
(rpc/core/dialect.py). A new dialect is a package beside these two, and one line here.
"""

from __future__ import annotations

from rpc.core.dialect import Dialect
from rpc.dialects.acp import ACP
from rpc.dialects.zerocode import ZEROCODE

__all__ = ["DIALECTS"]

DIALECTS: dict[str, Dialect] = {"acp": ACP, "zerocode": ZEROCODE}
