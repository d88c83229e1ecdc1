"""One ACP client's state on the daemon (R-EDIT-4, R-EDIT-5): its default agent and its permission requests.

An `approval_request` shown to an ACP client becomes `session/request_permission` (options `allow_once`,
`allow_always`, `reject_once`, `reject_always`; the "always" ones last for the session, R-GUARD-3), asked in a
task of its own, so a pending permission never blocks another session or another call. Its answer approves or
rejects through the session service, as `session/approve` does; an unknown option, `cancelled`, an error or no
answer is a reject. The request is withdrawn (`$/cancel_request`) when its session's turn is cancelled, or when
the approval is settled elsewhere (another client, the timeout).
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Mapping
from contextlib import suppress
from typing import TYPE_CHECKING, Any

from app.sessions.errors import SessionError

if TYPE_CHECKING:
    from app.sessions.events import ApprovalRequest
    from app.sessions.registry import SessionRegistry
    from rpc.core.context import Authority, ClientChannel

__all__ = ["CANCEL_REQUEST", "PERMISSION_OPTIONS", "AcpPeer", "peer_of"]

log = logging.getLogger("zeroclaw.rpc")

CANCEL_REQUEST = "$/cancel_request"
PERMISSION_OPTIONS = [
    {"optionId": "allow_once", "name": "Allow once", "kind": "allow_once"},
    {"optionId": "allow_always", "name": "Always allow", "kind": "allow_always"},
    {"optionId": "reject_once", "name": "Reject", "kind": "reject_once"},
    {"optionId": "reject_always", "name": "Always reject", "kind": "reject_always"},
]
_DECISIONS = {
    "allow_once": "allow_once",
    "allow_always": "allow_always",
    "reject_once": "reject",
    "reject_always": "reject_always",
}


class AcpPeer:
    """Kept per connection (`peer_of`) for as long as the connection lives."""

    def __init__(self) -> None:
        self.agent = "default"  # the agent of `session/new` (`--agent`, `?agent=`)
        # (session, approval) → the task asking the client
        self._asking: dict[tuple[str, str], asyncio.Task[None]] = {}
        self._last_tool_call: dict[str, str] = {}  # session → the tool call an approval is about

    def tool_called(self, session_id: str, tool_call_id: str) -> None:
        self._last_tool_call[session_id] = tool_call_id

    def ask_permission(
        self, client: ClientChannel, authority: Authority, sessions: SessionRegistry, event: ApprovalRequest
    ) -> None:
        key = (event["session_id"], event["request_id"])
        task = asyncio.get_running_loop().create_task(self._ask(client, authority, sessions, event))
        self._asking[key] = task
        task.add_done_callback(lambda _: self._asking.pop(key, None))

    def withdraw(self, session_id: str) -> None:
        """Take back every permission request of `session_id` (its turn was cancelled): none is answered."""
        for (sid, _), task in list(self._asking.items()):
            if sid == session_id:
                task.cancel()

    async def _ask(
        self, client: ClientChannel, authority: Authority, sessions: SessionRegistry, event: ApprovalRequest
    ) -> None:
        session_id, request_id = event["session_id"], event["request_id"]
        live = sessions.live.get(session_id)
        pending = live.approvals.get(request_id) if live is not None else None
        if pending is None or pending.done():
            return
        tool_call_id = self._last_tool_call.get(session_id, request_id)
        params = {
            "sessionId": session_id,
            "toolCall": {
                "toolCallId": tool_call_id,
                "title": event["tool_name"],
                "status": "pending",
                "rawInput": event["arguments"],
            },
            "options": PERMISSION_OPTIONS,
        }
        ask = asyncio.ensure_future(
            client.request("session/request_permission", params, timeout=event["timeout_secs"], withdraw=CANCEL_REQUEST)
        )
        try:
            await asyncio.wait({ask, pending}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not ask.done():
                # Settled elsewhere, or this task was cancelled: the client is told to stop asking.
                ask.cancel()
                with suppress(BaseException):
                    await ask
        if pending.done() or ask.cancelled():
            return
        decision = _decision(ask.exception() or ask.result())
        principal = authority.principal
        if principal is None:
            return
        with suppress(SessionError):  # answered meanwhile, or the session went away
            sessions.turns.approve(principal, session_id, request_id, decision)


def _decision(answer: object) -> str:
    """`RequestPermissionResponse.outcome` as our decision: anything but a known option selected is a reject."""
    if isinstance(answer, Mapping):
        outcome = answer.get("outcome")
        if isinstance(outcome, Mapping) and outcome.get("outcome") == "selected":
            option = outcome.get("optionId")
            if isinstance(option, str):
                return _DECISIONS.get(option, "reject")
    return "reject"


_PEERS: weakref.WeakKeyDictionary[Any, AcpPeer] = weakref.WeakKeyDictionary()


def peer_of(client: object) -> AcpPeer:
    """The state of the ACP client on `client` (made by its first use)."""
    peer = _PEERS.get(client)
    if peer is None:
        peer = _PEERS[client] = AcpPeer()
    return peer
