"""Session failures as the domain names them; the protocol layer maps each to its JSON-RPC code (R-ERR)."""

from __future__ import annotations

__all__ = [
    "AgentNotAllowed",
    "ApprovalNotFound",
    "BadWorkspace",
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
