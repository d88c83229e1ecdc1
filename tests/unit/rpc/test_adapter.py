"""The one way a dialect runs a method differently (`Adaptation`, `MethodSpec.adapted`), and how a connection's
dialect is chosen at `initialize` (issue 38 §1: R-ZC-1, R-EDIT-1)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from rpc.core.boundary import ErrorBoundary
from rpc.core.dialect import STANDARD
from rpc.core.dispatcher import DaemonState
from rpc.core.registry import Adaptation, AfterReply, MethodSpec, NoParams, Params, Registry
from rpc.dialects import DIALECTS
from rpc.transports.base import Peer


class Doubled(Params, frozen=True):
    n: int = 1


def _spec(handler: Any) -> MethodSpec[Any]:
    return MethodSpec("m/x", handler, NoParams, "sessions:read", local_only=True)


def test_an_adapted_entry_keeps_the_method_s_name_grant_flags_and_answer_counter() -> None:
    spec = _spec(lambda ctx, params: {"n": 1})
    adapted = spec.adapted(Adaptation(params=Doubled, shape=lambda ctx, params, result: {"n": result["n"] * 2}))
    assert (adapted.name, adapted.grant, adapted.local_only, adapted.params) == ("m/x", "sessions:read", True, Doubled)
    assert adapted.answered is spec.answered and adapted.contract is None
    assert adapted.handler(None, Doubled()) == {"n": 2}
    assert spec.adapted(None) is spec


def test_a_result_that_has_to_wait_is_shaped_once_it_comes_and_after_reply_keeps_its_action() -> None:
    async def later() -> dict[str, int]:
        return {"n": 3}

    done: list[str] = []
    sometimes = _spec(lambda ctx, params: later())  # a plain handler that has to wait this time
    adapted = sometimes.adapted(Adaptation(shape=lambda ctx, params, result: {"shaped": result["n"]}))
    assert not adapted.is_async
    assert asyncio.run(adapted.handler(None, NoParams())) == {"shaped": 3}

    async def opened(ctx: Any, params: Any) -> AfterReply:
        return AfterReply({"n": 4}, lambda: done.append("then"))

    wrapped = _spec(opened).adapted(Adaptation(shape=lambda ctx, params, result: {"shaped": result["n"]}))
    assert wrapped.is_async
    reply = asyncio.run(wrapped.handler(None, NoParams()))
    assert isinstance(reply, AfterReply) and reply.result == {"shaped": 4}
    reply.then()
    assert done == ["then"]


def test_recover_answers_an_error_its_own_way_or_raises_another() -> None:
    def failing(ctx: Any, params: Any) -> None:
        raise LookupError("gone")

    def recover(ctx: Any, params: Any, exc: Exception) -> Any:
        if isinstance(exc, LookupError):
            return {"acknowledged": True}
        raise exc

    assert _spec(failing).adapted(Adaptation(recover=recover)).handler(None, NoParams()) == {"acknowledged": True}

    def other(ctx: Any, params: Any, exc: Exception) -> Any:
        raise ValueError("mapped") from None

    with pytest.raises(ValueError, match="mapped"):
        _spec(failing).adapted(Adaptation(recover=other)).handler(None, NoParams())


def test_a_handler_of_the_dialect_s_own_replaces_the_method_s() -> None:
    async def own(ctx: Any, params: Any) -> str:
        return "own"

    adapted = _spec(lambda ctx, params: "standard").adapted(Adaptation(handler=own))
    assert adapted.is_async and asyncio.run(adapted.handler(None, NoParams())) == "own"


@pytest.mark.req("R-ZC-1")
def test_the_listener_s_dialect_wins_else_the_first_that_claims_the_params_else_the_standard_one() -> None:
    errors = ErrorBoundary(SimpleNamespace(record=lambda *a: None))
    state = DaemonState(Registry(), errors, tuple(DIALECTS.values()))
    acp, zerocode = DIALECTS["acp"], DIALECTS["zerocode"]
    local = Peer("unix:test", uid=0)
    assert state.dialect_for(local, {"protocolVersion": 1}) is STANDARD
    assert state.dialect_for(local, {"protocol_version": 1, "env": {}}) is zerocode
    assert state.dialect_for(local, {"protocolVersion": 1, "_meta": {"zeroclaw.acp": {}}}) is acp
    both = {"protocol_version": 1, "env": {}, "_meta": {"zeroclaw.acp": {"agent": "a"}}}
    assert state.dialect_for(local, both) is acp  # the table's order decides
    assert state.dialect_for(Peer("ws:remote", remote=True, dialect=zerocode), {"protocolVersion": 1}) is zerocode
    assert DaemonState(Registry(), errors).dialect_for(local, both) is STANDARD  # a daemon serving none
