"""Who may use a session (R-SES-1) and which sessions a webhook may drive (R-GW-3): rules every surface shares."""

from __future__ import annotations

from app.auth.policy import Principal
from app.sessions.errors import SessionNotOwned, WrongSessionKind
from app.sessions.mode import SessionMode

__all__ = ["check_chat", "check_owner"]


def check_owner(principal: Principal, owner: str) -> None:
    if not principal.admin and principal.id != owner:
        raise SessionNotOwned


def check_chat(principal: Principal, owner: str, mode: SessionMode, agent_alias: str, agent: str) -> None:
    """A webhook's session: the caller's, a chat one, of the agent the webhook names."""
    check_owner(principal, owner)
    if mode != SessionMode.CHAT:
        raise WrongSessionKind("not_chat_session", "The session is an ACP session; webhooks run chat sessions")
    if agent_alias != agent:
        raise WrongSessionKind("agent_mismatch", "The chat session belongs to another agent")
