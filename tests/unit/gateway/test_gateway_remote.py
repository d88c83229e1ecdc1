"""The `[wss]` listener's pure parts (R-SVC-4): which credential a peer presented, and when it may not start.
The listener itself is proven end to end in tests/e2e/test_e2e_wss.py."""

from __future__ import annotations

import pytest

from app.config.reload import AT_START
from app.config.schema import Wss, convert
from gateway.remote import presented_token
from rpc.transports.websocket import MAX_TOKEN_CHARS

TOKEN = "zc_" + "a" * 64


@pytest.mark.req("R-SVC-4")
@pytest.mark.parametrize(
    ("query", "authorization", "expected"),
    [
        (TOKEN, None, TOKEN),  # zerocode: wss://HOST:PORT/?token=zc_…
        (None, f"Bearer {TOKEN}", TOKEN),  # other clients
        (TOKEN, "Bearer zc_other", TOKEN),  # the URL's wins: it is what zerocode's user wrote
        (None, None, None),
        ("", None, None),
        ("   ", f"Bearer {TOKEN}", None),  # an empty query token is refused, not replaced
        ("x" * (MAX_TOKEN_CHARS + 1), None, None),
        (None, f"Basic {TOKEN}", None),
    ],
)
def test_presented_token(query: str | None, authorization: str | None, expected: str | None) -> None:
    assert presented_token(query, authorization) == expected


@pytest.mark.req("R-SVC-4")
def test_off_by_default_and_tls_required_when_enabled() -> None:
    default = convert({}).wss
    assert default == Wss() and default.enabled is False and default.start_problem() is None
    assert Wss(enabled=False, tls_cert=None).start_problem() is None
    assert Wss(enabled=True, tls_cert="c.pem", tls_key="k.pem").start_problem() is None
    for half in (Wss(enabled=True), Wss(enabled=True, tls_cert="c.pem"), Wss(enabled=True, tls_key="k.pem")):
        problem = half.start_problem()
        assert problem is not None and "tls_cert" in problem and "\n" not in problem


@pytest.mark.req("R-SVC-4")
@pytest.mark.parametrize("prop", ["wss.enabled", "wss.host", "wss.port", "wss.tls_cert", "wss.tls_key"])
def test_every_wss_key_applies_at_the_next_start(prop: str) -> None:
    assert prop.startswith(AT_START)
