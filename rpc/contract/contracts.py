"""What each method answers, beyond what the registry declares to dispatch it: its summary, its result model, the
errors it can answer besides those every method can, and the daemon→client traffic it causes. With the registry
(params, grant, local-only) this is the contract `rpc.discover` publishes (rpc/contract/openrpc.py).

Kept beside the registry rather than in it: the result models are needed only when a document is built, and a
daemon that is never asked for one never builds them (start-up imports nothing of this). A unit test holds the
two together: every registered method has a contract and every contract a method (test_openrpc.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rpc.contract import results as r

__all__ = ["CONTRACTS", "Contract"]

Model = Any  # a Struct, another type msgspec describes, or a function that makes one on first use


@dataclass(frozen=True, slots=True)
class Contract:
    summary: str
    result: Model  # None: a notification the client sends, never answered
    errors: tuple[str, ...] = ()  # kinds (`rpc.core.error_kinds`) it answers besides those every method can
    notifications: tuple[str, ...] = ()  # daemon→client notifications it causes on the caller's connection
    server_requests: tuple[str, ...] = ()  # daemon→client requests it may make
    storage: bool = False  # it reads or writes the database: storage_unavailable, resources_exhausted

    def result_models(self) -> tuple[Any, ...]:
        """The result's models: one, or the alternatives it may be."""
        result = self.result() if callable(self.result) and not isinstance(self.result, type) else self.result
        return result if isinstance(result, tuple) else (result,)


_SESSION = ("session_not_found", "session_changed", "session_not_owned")


# -- the methods -----------------------------------------------------------------------------------

UPDATES = ("session/update",)


def _daemon_contracts() -> dict[str, Contract]:
    """The daemon, pairing and config methods."""
    c = Contract
    return {
        "initialize": c(
            "Open the conversation: protocol version, credential, capabilities",
            r.Initialized,
            ("auth_required", "version_mismatch"),
            storage=True,
        ),
        "rpc.discover": c("This OpenRPC document (answered before initialize too)", r.OpenRpcDocument),
        "status": c("The daemon's status", r.Status),
        "system/metrics": c("The daemon's metrics in the Prometheus text format 0.0.4", str),
        "pairing/create": c("Pair a user: a new bearer token, shown once", r.PairedToken, ("forbidden",), storage=True),
        "pairing/code": c("A one-time 6-digit code a browser trades for a token at POST /pair", r.PairingCode),
        "pairing/list": c("The active paired tokens (admin: everyone's)", r.TokenList, storage=True),
        "pairing/revoke": c("Revoke a paired token", r.TokenRevoked, storage=True),
        "config/get": c("The config with secrets masked, or one property's value", _config_get_result),
        "config/set": c("Set one config property (written to config.toml atomically)", r.ConfigSet),
        "config/delete": c("Remove one config property (back to its default)", r.ConfigDeleted),
        "config/set-many": c("Set several config properties in one commit", r.ConfigSetMany),
        "config/sections": c("The config's sections, for a settings screen", r.ConfigSections),
        "config/list": c("The config's leaves and their values (secrets masked)", r.ConfigEntries),
        "config/map-keys": c("The entry names of one map section of the config", r.ConfigMapKeys),
        "config/templates": c("The config's map sections, for adding an entry", r.ConfigTemplates),
    }


def _session_contracts() -> dict[str, Contract]:
    """The session, agent, log and file methods."""
    c = Contract
    return {
        "session/new": c(
            "Open a session, or resume one by its id; this connection then watches it",
            r.SessionOpened,
            ("forbidden", "session_limit", *_SESSION),
            UPDATES,
            storage=True,
        ),
        "session/prompt": c(
            "Run one turn; its progress streams as session/update, and it answers when the turn ends",
            r.PromptResult,
            ("forbidden", "session_limit", "session_busy", *_SESSION),
            UPDATES,
            ("elicitation/create",),
            storage=True,
        ),
        "session/attach": c(
            "Follow a session: the retained updates after afterSeq, then every live one, whoever prompts",
            r.SessionAttached,
            ("session_limit", *_SESSION),
            UPDATES,
            storage=True,
        ),
        "session/detach": c("Stop following a session", r.SessionDetached, ("session_not_owned",)),
        "session/cancel": c("Cancel the running turn (a no-op when none runs)", r.Cancelled, _SESSION),
        "session/approve": c("Answer a tool's approval_request", r.Approved, _SESSION),
        "session/list": c("The caller's sessions (an admin's: everyone's)", r.SessionList, storage=True),
        "session/list-acp": c("The caller's ACP sessions", r.SessionList, storage=True),
        "session/messages": c("A page of a session's visible transcript", r.Messages, _SESSION, storage=True),
        "session/close": c("Close a session: kept, resumable by session/new", r.Closed, _SESSION, storage=True),
        "session/kill": c("Kill a session: stopped and no longer resumable", r.Killed, _SESSION, storage=True),
        "session/delete": c("Delete a session and its transcript", r.Deleted, _SESSION, storage=True),
        "agents/status": c("The configured agents, as the caller may use them", r.AgentList, storage=True),
        "logs/subscribe": c("Receive the daemon's log records as logs/event", r.LogSubscription, (), ("logs/event",)),
        "file/attach": c(
            "Attach small files to a session in one call (base64)",
            r.attached,
            ("forbidden", "limit_exceeded", *_SESSION),
            storage=True,
        ),
        "file/upload/begin": c(
            "Begin a chunked upload to a session", r.upload_begun, ("forbidden", "limit_exceeded", *_SESSION)
        ),
        "file/upload/chunk": c(
            "Send the next chunk of an upload", r.ChunkReceived, ("upload_not_found", "limit_exceeded")
        ),
        "file/upload/commit": c(
            "Finish an upload: checked, stored, attached to its session",
            r.attach_entry,
            ("upload_not_found", "limit_exceeded", *_SESSION),
            storage=True,
        ),
    }


def _config_get_result() -> tuple[Any, ...]:
    from app.config.schema import Config

    return (Config, r.ConfigProp)  # the whole config, or {prop, value} with `prop`


CONTRACTS: dict[str, Contract] = _daemon_contracts() | _session_contracts()
