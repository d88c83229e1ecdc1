"""Fixtures for the end-to-end tests; the harness itself is `e2e_harness.py`."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from e2e_harness import Daemon, DaemonFactory
from litellm_proxy import fault_proxy, litellm  # noqa: F401 - fixtures: LiteLLM's proxy, once per run (R-MODEL-7)


@pytest.fixture
def daemon_factory() -> Iterator[DaemonFactory]:
    factory = DaemonFactory()
    try:
        yield factory
    finally:
        factory.close()


@pytest.fixture
def daemon(daemon_factory: DaemonFactory) -> Daemon:
    return daemon_factory.start()


@pytest.fixture(scope="module")
def shared_daemon() -> Iterator[Daemon]:
    factory = DaemonFactory()
    try:
        yield factory.start()
    finally:
        factory.close()
