"""Session failures as the domain names them; the protocol layer maps each to its JSON-RPC code (R-ERR)."""

from __future__ import annotations

__all__ = [
    "AgentNotAllowed",
    "ApprovalNotFound",
    "BadWorkspace",
    "PromptTooLong",
    "SessionBusy",
    "SessionChanged",
    "SessionError",
    "SessionLimit",
    "SessionNotFound",
    "SessionNotOwned",
    "UnknownAgent",
]


class SessionError(Exception):
    message = "session error"

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or self.message)
        self.message = message or self.message


class SessionNotFound(SessionError):
    message = "Session not found"


class SessionChanged(SessionNotFound):
    """The session an operation was bound to was closed or recreated meanwhile (R-FILE-6)."""

    message = "The session was closed or recreated"


class SessionLimit(SessionError):
    message = "Live-session limit reached"


class SessionBusy(SessionError):
    message = "A turn is already running on this session"


class SessionNotOwned(SessionError):
    message = "The session belongs to another principal"


class UnknownAgent(SessionError):
    message = "Unknown agent"


class AgentNotAllowed(SessionError):
    message = "The principal may not use this agent"


class BadWorkspace(SessionError):
    message = "cwd must be an existing absolute directory the principal may use"


class ApprovalNotFound(SessionError):
    message = "No pending approval with that requestId"


class PromptTooLong(SessionError):
    """A prompt longer than `[limits] max_prompt_chars`; `field` names it as the caller's surface spells it."""

    def __init__(self, limit: int, field: str = "prompt") -> None:
        super().__init__(f"String should have at most {limit} characters ([limits] max_prompt_chars)")
        self.limit = limit
        self.field = field
