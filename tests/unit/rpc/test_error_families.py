"""One domain exception per concept, one mapper entry per concept (issue 14), and the wire unchanged: each
domain failure answers the exact `{code, message, data}` (and HTTP status) it answered before the families were
merged."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from app.audit import AuditLog
from app.auth.policy import Forbidden as PolicyForbidden
from app.sessions import errors as domain
from gateway.errors import from_rpc_error
from rpc.core.boundary import ErrorBoundary
from rpc.methods import ERROR_MAPPERS

pytestmark = pytest.mark.req("R-ERR")

NOT_FOUND = {"code": -32000, "message": "Session not found", "data": {"kind": "session_not_found"}}
NOT_OWNED = {
    "code": -32003,
    "message": "The session belongs to another principal",
    "data": {"kind": "session_not_owned"},
}

CASES: list[tuple[Exception, dict[str, Any], int]] = [
    (domain.SessionNotFound(), NOT_FOUND, 404),
    (domain.SessionNotFound(session_id="s1", mode="chat"), NOT_FOUND, 404),  # as the store raises it
    (domain.SessionKilled(session_id="s1"), NOT_FOUND, 404),
    (domain.SessionClosed(session_id="s1"), NOT_FOUND, 404),
    (
        domain.SessionKilled("The session was killed", session_id="s1"),  # as the registry raises it
        {"code": -32000, "message": "The session was killed", "data": {"kind": "session_not_found"}},
        404,
    ),
    (
        domain.SessionChanged(),
        {"code": -32000, "message": "The session was closed or recreated", "data": {"kind": "session_changed"}},
        404,
    ),
    (domain.SessionNotOwned(), NOT_OWNED, 403),
    (domain.SessionNotOwned(session_id="s1"), NOT_OWNED, 403),  # as the store's `create` raises it
    (
        domain.AgentNotAllowed(),
        {
            "code": -32012,
            "message": "The principal may not use this agent",
            "data": {"kind": "forbidden", "agent": True},
        },
        403,
    ),
    (
        PolicyForbidden("config path not writable", prop="limits.x", index=2),
        {
            "code": -32012,
            "message": "config path not writable",
            "data": {"kind": "forbidden", "prop": "limits.x", "index": 2},
        },
        403,
    ),
    (
        domain.SessionLimit(),
        {"code": -32001, "message": "Live-session limit reached", "data": {"kind": "session_limit"}},
        429,
    ),
]


def server() -> ErrorBoundary:
    """The daemon's error boundary, with every method family's mapper (as `app.daemon` installs them)."""
    rpc = ErrorBoundary(AuditLog(None))
    for mapper in ERROR_MAPPERS:
        rpc.add_mapper(mapper)
    return rpc


@pytest.mark.parametrize(
    ("exc", "wire", "status"), CASES, ids=lambda v: type(v).__name__ if isinstance(v, Exception) else ""
)
def test_domain_error_answers_the_same_wire_error(exc: Exception, wire: dict[str, Any], status: int) -> None:
    error = server().to_rpc_error(exc)
    assert orjson.dumps(error.to_error()) == orjson.dumps(wire)  # byte-identical, key order included
    assert from_rpc_error(error).status == status


def test_one_class_per_concept() -> None:
    assert issubclass(domain.SessionKilled, domain.SessionNotFound)
    assert issubclass(domain.SessionClosed, domain.SessionNotFound)
    assert issubclass(domain.SessionChanged, domain.SessionNotFound)
    assert issubclass(domain.SessionNotFound, LookupError)
    assert issubclass(domain.AgentNotAllowed, PolicyForbidden)


def test_store_raised_errors_keep_their_detail_for_the_log() -> None:
    missing = domain.SessionNotFound(session_id="s1", mode="chat")
    assert (missing.session_id, missing.mode, str(missing)) == ("s1", "chat", "no chat session 's1'")
    assert str(domain.SessionNotOwned(session_id="s1")) == "session 's1' belongs to another principal"
    assert str(domain.SessionKilled(session_id="s1")) == "session 's1' was killed"
    assert str(domain.SessionClosed(session_id="s1")) == "chat session 's1' was closed"


def test_row_not_found_is_not_a_wire_error() -> None:
    assert all(mapper(domain.RowNotFound("s1", 3)) is None for mapper in ERROR_MAPPERS)
