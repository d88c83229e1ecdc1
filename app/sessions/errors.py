"""Session failures as the domain names them: one class per concept, raised alike by the store and the registry.
The protocol layer maps each concept to its JSON-RPC code once (`rpc/methods/session.py`, R-ERR).

    SessionError
     ├── SessionNotFound (also LookupError)   -32000  no such session for this caller (`session_id`, `mode`)
     │    ├── SessionKilled                   -32000  tombstone: never rehydrated (R-ACP-9)
     │    ├── SessionClosed                   -32000  a closed chat session is gone (R-ACP-8)
     │    └── SessionChanged                  -32000  `session_changed`: closed or recreated meanwhile (R-FILE-6)
     ├── SessionNotOwned                      -32003  the session belongs to another principal (`session_id`)
     ├── SessionLimit                         -32001
     ├── SessionBusy                          -32002
     ├── UnknownAgent, BadWorkspace,          -32602  naming the field
     │   ApprovalNotFound, PromptTooLong,
     │   WrongSessionKind,                           (`sessionId`: not a chat session of the webhook's agent)
     │   BadCursor                                   (`cursor`: malformed, or another list's, R-MULTI-4)
     │   NoRunningTurn                               (`sessionId`: nothing to steer, R-BRANCH-3)
     └── RowNotFound (also LookupError)       unmapped: a transcript index the store does not have is a bug
    AgentNotAllowed is an `app.auth.policy.Forbidden` (-32012 with `agent: true`), not a SessionError.

`message` is the fixed sentence the wire carries; `str()` may add the session id for the log.
Database failures (and injected `StorageFault`s) are sqlalchemy.exc.SQLAlchemyError, not part of this tree.
"""

from __future__ import annotations

from app.auth.policy import Forbidden
from app.sessions.mode import SessionMode

__all__ = [
    "AgentNotAllowed",
    "ApprovalNotFound",
    "BadCursor",
    "BadForkPoint",
    "BadRollback",
    "BadWorkspace",
    "NoRunningTurn",
    "PromptTooLong",
    "RowNotFound",
    "SessionBusy",
    "SessionChanged",
    "SessionClosed",
    "SessionError",
    "SessionKilled",
    "SessionLimit",
    "SessionNotFound",
    "SessionNotOwned",
    "UnknownAgent",
    "WrongSessionKind",
]


class SessionError(Exception):
    """A session rule refused the call; `message` is the wire's, `detail` says more for logs and `data`."""

    message = "session error"

    def __init__(self, message: str | None = None, *, detail: str | None = None) -> None:
        super().__init__(detail or message or self.message)
        self.message = message or self.message


class SessionNotFound(SessionError, LookupError):
    """No such session for this caller. The store says which (`session_id`, `mode`); `kind` is the wire's."""

    message = "Session not found"
    kind = "session_not_found"

    def __init__(
        self,
        message: str | None = None,
        *,
        session_id: str | None = None,
        mode: SessionMode | None = None,
        detail: str | None = None,
    ) -> None:
        if detail is None and session_id is not None:
            detail = f"no {mode or SessionMode.DURABLE} session {session_id!r}"
        super().__init__(message, detail=detail)
        self.session_id = session_id
        self.mode = mode


class SessionKilled(SessionNotFound):
    """A killed session (R-ACP-9): its history stays readable, it is never brought back."""

    def __init__(self, message: str | None = None, *, session_id: str, mode: SessionMode | None = None) -> None:
        super().__init__(message, session_id=session_id, mode=mode, detail=f"session {session_id!r} was killed")


class SessionClosed(SessionNotFound):
    """A closed chat session (R-ACP-8): gone for turns; a durable one stays resumable."""

    def __init__(self, message: str | None = None, *, session_id: str) -> None:
        detail = f"chat session {session_id!r} was closed"
        super().__init__(message, session_id=session_id, mode=SessionMode.CHAT, detail=detail)


class SessionChanged(SessionNotFound):
    """The session an operation was bound to was closed or recreated meanwhile (R-FILE-6)."""

    message = "The session was closed or recreated"
    kind = "session_changed"


class SessionNotOwned(SessionError):
    """The session belongs to another principal: the registry's owner check, or the store's `create` on an id
    another principal owns (`session_id`)."""

    message = "The session belongs to another principal"

    def __init__(self, message: str | None = None, *, session_id: str | None = None) -> None:
        detail = None if session_id is None else f"session {session_id!r} belongs to another principal"
        super().__init__(message, detail=detail)
        self.session_id = session_id


class RowNotFound(SessionError, LookupError):
    """A transcript row index the session does not have."""

    def __init__(self, session_id: str, index: int) -> None:
        super().__init__(detail=f"session {session_id!r} has no transcript row {index}")
        self.session_id = session_id
        self.index = index


class SessionLimit(SessionError):
    """`max_sessions` live sessions, every one busy or attached (SPEC §5): -32001."""

    message = "Live-session limit reached"


class SessionBusy(SessionError):
    """A turn already runs on the session (R-SES-2): -32002."""

    message = "A turn is already running on this session"


class UnknownAgent(SessionError):
    """No agent of that alias, or its provider is not configured."""

    message = "Unknown agent"


class AgentNotAllowed(Forbidden):
    """The principal may not use this agent: a `Forbidden` of the policy (-32012, `data.agent: true`)."""

    message = "The principal may not use this agent"

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or self.message, agent=True)


class BadWorkspace(SessionError):
    """A `cwd` that is not an existing absolute directory the principal may use."""

    message = "cwd must be an existing absolute directory the principal may use"


class ApprovalNotFound(SessionError):
    """An approval answer for a request id the session never gave."""

    message = "No pending approval with that requestId"


class BadCursor(SessionError):
    """A `session/list` cursor that is malformed or was made by another list (owner, mode, query, killed)."""

    message = "cursor is malformed or belongs to another list"


class WrongSessionKind(SessionError):
    """A webhook named a session it cannot run a turn on: an ACP session (`not_chat_session`), or a chat session of
    another agent (`agent_mismatch`)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class PromptTooLong(SessionError):
    """A prompt longer than `[limits] max_prompt_chars`; `field` names it as the caller's surface spells it."""

    def __init__(self, limit: int, field: str = "prompt") -> None:
        super().__init__(f"String should have at most {limit} characters ([limits] max_prompt_chars)")
        self.limit = limit
        self.field = field


class BadForkPoint(SessionError):
    """`session/fork`'s `atIndex` is not the index of a user prompt row of the parent (R-BRANCH-1)."""

    message = "atIndex is not the index of a user prompt row"


class BadRollback(SessionError):
    """`session/rollback`'s `turns` is not between 1 and the session's completed turns (R-BRANCH-2)."""

    message = "turns is out of range"


class NoRunningTurn(SessionError):
    """`session/steer` on a session where no turn is running (R-BRANCH-3): the client prompts instead."""

    message = "No turn is running on this session to steer; send session/prompt instead"
