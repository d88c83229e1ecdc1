"""The ACP methods (R-EDIT-2..4): params and results in ACP's shape around the standard handlers.

A method ACP and the standard protocol share (`session/new`, `session/prompt`, `session/cancel`, `session/list`,
`session/close`) is ACP's handler over the standard one, with ACP's params and error codes (`ADAPTATIONS`). The methods
only ACP has (`session/load`, `session/resume`, `session/set_config_option`, `session/set_model`) are this dialect's
own (`OWN_METHODS`), never in the standard registry, so the standard contract is unchanged. Both go through the
registry's one adapter (`rpc.core.registry.Adaptation`).
"""

from __future__ import annotations

import asyncio
from contextlib import suppress
from typing import TYPE_CHECKING, Annotated, Any

import orjson
from msgspec import Meta

from app.agents.providers.models import list_models
from app.sessions.errors import SessionError
from app.sessions.errors import SessionNotFound as DomainSessionNotFound
from app.sessions.lifecycle.bring_up import stored
from app.sessions.mode import SessionMode
from app.sessions.settings import SessionSettings, effective
from app.storage.timestamps import iso_z
from rpc.core.envelope import encode_notifications
from rpc.core.errors import InternalError, InvalidParams, InvalidRequest, RpcError
from rpc.core.registry import Adaptation, AfterReply, Handler, MethodSpec, Params, Registry, SessionId
from rpc.core.session_bridge import sink_for
from rpc.dialects.acp.content import prompt_text
from rpc.dialects.acp.peer import peer_of
from rpc.dialects.acp.updates import text_update, tool_call_start, tool_call_update
from rpc.methods import mcp, session

if TYPE_CHECKING:
    from app.sessions.store.types import TranscriptRow
    from rpc.core.context import CallContext

__all__ = ["ADAPTATIONS", "OWN_METHODS", "AcpAuthRequired", "acp_error"]

LIST_PAGE = 50
LIST_WAIT = 3.0  # seconds a session's model choices may take to list (`models/list`), else its model alone
REPLAY_PAGE = 1000
_STOP_REASONS = {"end_turn": "end_turn", "max_turns": "max_turn_requests", "cancelled": "cancelled"}

Path = Annotated[str, Meta(min_length=1, max_length=4096)]


class ResourceNotFound(RpcError):
    code, kind, default_message = -32002, "resource_not_found", "Session not found"


class AcpAuthRequired(RpcError):
    code, kind, default_message = -32000, "auth_required", "Authentication required"


# -- params


class NewParams(Params, frozen=True):
    cwd: Path
    mcp_servers: list[Any] = []


class LoadParams(Params, frozen=True):
    session_id: SessionId
    cwd: Path | None = None
    mcp_servers: list[Any] = []


class SessionParams(Params, frozen=True):
    session_id: SessionId


class PromptParams(Params, frozen=True):
    session_id: SessionId
    prompt: list[dict[str, Any]]


class ListParams(Params, frozen=True):
    cwd: Path | None = None
    cursor: Annotated[str, Meta(min_length=1, max_length=1024)] | None = None


class ConfigParams(Params, frozen=True):
    session_id: SessionId
    config_id: Annotated[str, Meta(max_length=64)]
    value: Any = None


class ModelParams(Params, frozen=True):
    session_id: SessionId
    model_id: Annotated[str, Meta(min_length=1, max_length=255)]


def initialized_again(ctx: CallContext, params: Params) -> None:
    raise InvalidRequest("initialize was already called on this connection", kind="already_initialized")


# -- sessions


def config_options(ctx: CallContext, current: str) -> list[dict[str, Any]]:
    """The session's agent as ACP's select option `agent` (category `model`): those the principal may use."""
    principal = ctx.principal
    agents = [alias for alias in ctx.services.config.agents if principal.may_use_agent(alias)]
    return [
        {
            "id": "agent",
            "name": "Agent",
            "description": "The zeroclaw agent (provider, model and tools) that answers in this session",
            "category": "model",
            "type": "select",
            "currentValue": current,
            "options": [{"value": alias, "name": alias} for alias in agents],
        }
    ]


async def _models(ctx: CallContext, agent: str) -> tuple[list[tuple[str, str]], bool]:
    """The (id, name) of the models agent `agent`'s provider serves (R-MODEL-3), and whether it could list them."""
    configured = ctx.services.config.agents.get(agent)
    provider = None if configured is None else ctx.services.config.providers.get(configured.provider)
    if configured is None or provider is None:
        return [], False
    try:  # a provider slow to list its models must not hold up `session/new` for long
        listing = await asyncio.wait_for(list_models(configured.provider, provider, model=configured.model), LIST_WAIT)
    except TimeoutError:
        return [], False
    return [(m.id, m.display_name or m.id) for m in listing.models], listing.error is None


async def session_options(ctx: CallContext, agent: str, model: str | None) -> dict[str, Any]:
    """A session's `configOptions` (its agent; its model among its provider's, R-MODEL-4) and its `models` (the
    model state ACP's `session/set_model` goes with) for a session on `agent` running `model`."""
    options = config_options(ctx, agent)
    if model is None:  # a provider with no model configured: nothing to choose from
        return {"configOptions": options}
    models, _complete = await _models(ctx, agent)
    if all(m != model for m, _name in models):
        models.insert(0, (model, model))
    options.append(
        {
            "id": "model",
            "name": "Model",
            "description": "The model the agent's provider runs for this session",
            "category": "model",
            "type": "select",
            "currentValue": model,
            "options": [{"value": m, "name": name} for m, name in models],
        }
    )
    state = {"currentModelId": model, "availableModels": [{"modelId": m, "name": name} for m, name in models]}
    return {"configOptions": options, "models": state}


async def new(ctx: CallContext, params: NewParams) -> AfterReply:
    agent = peer_of(ctx.client).agent
    new_params = session.NewParams(agent_alias=agent, cwd=params.cwd, mode="acp", mcp_servers=params.mcp_servers)
    opened = await session.new(ctx, new_params)
    sid, model = opened.result["sessionId"], opened.result.get("model")
    return AfterReply({"sessionId": sid, **await session_options(ctx, agent, model)}, opened.then)


async def prompt(ctx: CallContext, params: PromptParams) -> dict[str, Any]:
    text = prompt_text(params.prompt)
    answer = await session.prompt(ctx, session.PromptParams(session_id=params.session_id, prompt=text))
    stop = answer["stopReason"]
    if stop == "failed":  # a provider failure is an error with its reason (R-EDIT-3)
        reason = str(answer.get("content") or "")[:1000]
        raise InternalError("The agent's turn failed", kind="turn_failed", reason=reason)
    return {"stopReason": _STOP_REASONS.get(stop, "end_turn")}


def cancel(ctx: CallContext, params: SessionParams) -> None:
    """R-EDIT-4: per session, a no-op when idle; the turn's pending permission requests are withdrawn."""
    with suppress(SessionError):
        ctx.services.sessions.turns.cancel(ctx.principal, params.session_id)
    peer_of(ctx.client).withdraw(params.session_id)


async def close(ctx: CallContext, params: SessionParams) -> dict[str, Any]:
    await session.close(ctx, session.SessionParams(session_id=params.session_id))
    return {}


async def list_sessions(ctx: CallContext, params: ListParams) -> dict[str, Any]:
    """The principal's ACP sessions, newest activity first, a page at a time (the native list's cursors)."""
    sessions = ctx.services.sessions
    query, after = sessions.reading.list_query(ctx.principal, mode=SessionMode.DURABLE, cursor=params.cursor)
    lists = sessions.store.lists
    page = lists.kept_page(query, after, LIST_PAGE) or await lists.page(query, after, LIST_PAGE)
    listed = []
    for record in page.records:
        if params.cwd is not None and record.workspace_dir != params.cwd:
            continue
        entry = {"sessionId": record.session_id, "cwd": record.workspace_dir, "updatedAt": iso_z(record.last_activity)}
        if record.title is not None:
            entry["title"] = record.title
        listed.append(entry)
    result: dict[str, Any] = {"sessions": listed}
    last = page.last
    if last is not None:
        from app.sessions.list_pages import encode_cursor

        result["nextCursor"] = encode_cursor(query, last)
    return result


async def _attach(ctx: CallContext, session_id: str) -> AfterReply:
    """Open a stored (or live) ACP session for this client; watched once the answer is on its way."""
    sessions = ctx.services.sessions
    live = sessions.live.get(session_id)
    if (live is None or live.mode != SessionMode.DURABLE) and await sessions.store.get(session_id) is None:
        raise DomainSessionNotFound
    opened = await sessions.open(ctx.principal, session_id=session_id, mode=SessionMode.DURABLE)
    sink = sink_for(ctx)
    return AfterReply({}, lambda: opened.session.watch(sink))


async def load(ctx: CallContext, params: LoadParams) -> AfterReply:
    """R-EDIT-3: the visible transcript as `session/update`s, all sent before the answer."""
    servers = mcp.session_servers(ctx, params.mcp_servers)  # R-MCP-2
    attached = await _attach(ctx, params.session_id)
    mcp.give_session_servers(ctx, params.session_id, servers)
    await ctx.client.send_encoded(await _replay(ctx, params.session_id))
    live = ctx.services.sessions.live[params.session_id]
    model, _temperature = effective(ctx.services.config, live.agent_alias, live.model, live.temperature)
    return AfterReply(await session_options(ctx, live.agent_alias, model), attached.then)


async def resume(ctx: CallContext, params: LoadParams) -> AfterReply:
    servers = mcp.session_servers(ctx, params.mcp_servers)  # R-MCP-2
    attached = await _attach(ctx, params.session_id)
    mcp.give_session_servers(ctx, params.session_id, servers)
    return attached


async def fork(ctx: CallContext, params: LoadParams) -> AfterReply:
    """R-BRANCH-4: the whole session forked into a new one of the caller's, opened for this client as
    `session/new` opens one (`cwd` and `mcpServers` as `session/load` takes them: the child keeps the parent's)."""
    forked = await ctx.services.sessions.branching.fork(ctx.principal, params.session_id)
    child = forked.record.session_id
    attached = await _attach(ctx, child)
    live = ctx.services.sessions.live[child]
    model, _temperature = effective(ctx.services.config, live.agent_alias, live.model, live.temperature)
    return AfterReply({"sessionId": child, **await session_options(ctx, live.agent_alias, model)}, attached.then)


async def set_config_option(ctx: CallContext, params: ConfigParams) -> dict[str, Any]:
    """`agent`: the session's agent, among those the principal may use; `model`: its model, among its provider's
    (R-MODEL-4). Both stored with the session (`session/configure`), in force from its next provider step."""
    value = params.value
    if params.config_id == "agent":
        if not isinstance(value, str) or not any(o["value"] == value for o in config_options(ctx, "")[0]["options"]):
            raise InvalidParams(errors=[{"field": "value", "type": "unknown_agent", "message": "Unknown agent"}])
        settings = await ctx.services.sessions.configure(ctx.principal, params.session_id, agent_alias=value)
    elif params.config_id == "model":
        settings = await _set_model(ctx, params.session_id, value, "value")
    else:
        raise InvalidParams(errors=[{"field": "configId", "type": "unknown_option", "message": "Unknown option"}])
    answer = await session_options(ctx, settings.agent_alias, settings.model)
    return {"configOptions": answer["configOptions"]}


async def set_model(ctx: CallContext, params: ModelParams) -> dict[str, Any]:
    """ACP's `session/set_model`: the session's model, as the `model` config option sets it."""
    await _set_model(ctx, params.session_id, params.model_id, "modelId")
    return {}


async def _set_model(ctx: CallContext, session_id: str, value: Any, field: str) -> SessionSettings:
    """Store `value` as the session's model: one its agent's provider lists (any, when it could not list)."""
    sessions = ctx.services.sessions
    live = sessions.live.get(session_id)
    record = None if live is not None else await stored(sessions.store, session_id, (SessionMode.DURABLE,))
    agent = live.agent_alias if live is not None else record.agent_alias if record is not None else None
    if agent is None:
        raise DomainSessionNotFound
    models, complete = await _models(ctx, agent)
    if not isinstance(value, str) or not value or len(value) > 255 or (complete and all(m != value for m, _ in models)):
        raise InvalidParams(errors=[{"field": field, "type": "unknown_model", "message": "Unknown model"}])
    return await sessions.configure(ctx.principal, session_id, model=value)


async def _replay(ctx: CallContext, session_id: str) -> list[bytes]:
    rows: list[TranscriptRow] = []
    before: int | None = None
    while True:
        page, _total, _ = await ctx.services.sessions.reading.messages(
            ctx.principal, session_id, limit=REPLAY_PAGE, before=before
        )
        rows[:0] = page
        if len(page) < REPLAY_PAGE or page[0].index == 0:
            break
        before = page[0].index
    updates = [update for row in rows if (update := _row_update(session_id, row)) is not None]
    return encode_notifications("session/update", updates)


_ROW_UPDATES = {"user": "user_message_chunk", "assistant": "agent_message_chunk", "thought": "agent_thought_chunk"}


def _row_update(session_id: str, row: TranscriptRow) -> dict[str, Any] | None:
    kind = _ROW_UPDATES.get(row.role)
    if kind is not None:
        return text_update(session_id, kind, row.content)
    if row.role == "tool_call" and row.tool_call_id is not None:
        try:
            raw_input = orjson.loads(row.content)
        except orjson.JSONDecodeError:
            raw_input = row.content
        return tool_call_start(session_id, row.tool_call_id, row.name or "tool", raw_input)
    if row.role == "tool_result" and row.tool_call_id is not None:
        return tool_call_update(session_id, row.tool_call_id, row.content)
    return None  # markers


# -- errors


def acp_error(exc: Exception) -> Exception:
    """Our error as ACP codes it: an unknown (or another's) session is `-32002`, auth `-32000`."""
    if isinstance(exc, SessionError):
        exc = session.map_session_error(exc) or exc
    if not isinstance(exc, RpcError):
        return exc
    if exc.code in (-32000, -32003):
        return ResourceNotFound(exc.message if exc.code == -32000 else None)
    if exc.code == -32010:
        return AcpAuthRequired(exc.message)
    if exc.code == -32002:  # session_busy: ACP has no code of its own for it
        return InvalidRequest(exc.message, kind="session_busy")
    return exc


def _as_acp_error(ctx: CallContext, params: Params, exc: Exception) -> Any:
    raise acp_error(exc) from None


# name → (handler, params model): ACP's way of a method the standard registry has
_SHARED: dict[str, tuple[Handler[Any], type[Params]]] = {
    "initialize": (initialized_again, Params),
    "session/new": (new, NewParams),
    "session/prompt": (prompt, PromptParams),
    "session/cancel": (cancel, SessionParams),
    "session/close": (close, SessionParams),
    "session/list": (list_sessions, ListParams),
}
ADAPTATIONS: dict[str, Adaptation] = {
    name: Adaptation(params=model, handler=handler, recover=_as_acp_error) for name, (handler, model) in _SHARED.items()
}
# ACP's own methods, declared as any method is (a registry of their own), never in the standard registry (so the
# standard contract is unchanged), each with ACP's error codes
_OWN = Registry()
_OWN.method("session/load", params=LoadParams, grant="sessions:create")(load)
_OWN.method("session/resume", params=LoadParams, grant="sessions:create")(resume)
_OWN.method("session/fork", params=LoadParams, grant="sessions:create")(fork)
_OWN.method("session/set_config_option", params=ConfigParams, grant="sessions:update")(set_config_option)
_OWN.method("session/set_model", params=ModelParams, grant="sessions:update")(set_model)
OWN_METHODS: dict[str, MethodSpec[Any]] = {
    spec.name: spec.adapted(Adaptation(recover=_as_acp_error)) for spec in _OWN.specs()
}
