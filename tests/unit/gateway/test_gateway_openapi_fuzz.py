"""Fuzz the gateway against its own `/openapi.json` with schemathesis (R-GW-2, R-GW-6).

Every documented operation is called with generated requests, valid and invalid ones, carrying a real admin
bearer token, and every answer goes through schemathesis' standard checks: never a 5xx, only documented status
codes, bodies and content types as documented, 405 for an undocumented method, 401 without the token.

The daemon side (services over a temp SQLite database, assembled as the daemon does, and a real uvicorn on
127.0.0.1 port 0) runs on an event loop in a thread of its own, because schemathesis sends its requests
synchronously. (Its ASGI transport would run the app on yet another event loop, apart from the one that owns
the database and the live sessions.) The `Host` header is then the server's own `127.0.0.1:<port>`, which is
allowed. Each operation gets a fresh daemon, so a config change made by fuzzing `PUT /api/config/{prop}` never
leaks into another operation's run.

Nothing is excluded. `POST /api/sessions/{id}/prompt` and `POST /webhook/{agent}` run real turns on the offline
scripted provider; a generated prompt that happens to read `/bash …` cannot run a command, because the agent
does not auto-approve `bash` and an HTTP turn with no client watching the session rejects the approval at once
(the fixture checks exactly that before fuzzing). `/write` and `/read` stay inside the session workspace, under
the temp directory. `GET /rpc` is a WebSocket endpoint: only its plain-HTTP answers can be checked (see CONFIG).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Iterator
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
import schemathesis
from gateway_env import BASE_TOML, Env, build_env, close_env
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from app.auth.pairing_codes import PairingCodes
from app.files.service import FileService, staging_dir_for
from gateway.server import GatewayHandle, start_gateway
from rpc.transports.websocket import ws_max_size

T = TypeVar("T")

MAX_EXAMPLES = 25  # per operation and generation mode; the whole module takes about 10 s

# A live ACP session and a stored (not live) chat session of the admin: a random id is nearly always 404, so
# `flatmap_case` steers part of the valid cases' path parameters to values that exist, and the success answers
# are checked as well.
LIVE_SESSION = "fuzz-live"
CHAT_SESSION = "fuzz-chat"
STEER = {
    "id": [LIVE_SESSION, CHAT_SESSION],
    "agent": ["default"],
    "prop": ["agents.default.system_prompt"],  # a string property: most generated values set it
}
BASH_MARKER = "bash-ran"
STREAMS = {"GET /api/sessions/{id}/events"}  # Server-Sent Events

FUZZ_TOML = (
    BASE_TOML
    + """
[tools]
approval_timeout_secs = 5  # a bound, should an approval ever wait: REST rejects it at once (checked below)

[agents.default]
"""
)

# Explicit, so that no `schemathesis.toml` lying around changes the run. The standard checks, with two
# adjustments of the status codes that the request-validity checks expect:
# * the body limit (64 KiB for every request, R-GW-6) counts bytes of JSON, which a schema cannot state, so a
#   documented 413 is a right answer to any request with a body;
# * some operations validate against state that the document cannot list (which config properties exist and
#   their types; whether a session id names a chat session of that agent; attachments naming this session's
#   uploads; whether an opaque `cursor` is one this list gave out; which agents exist, for `PATCH
#   /api/sessions/{id}` and `GET /api/models`), so a schema-valid request may get a documented 400 there.
CONFIG = f"""
[generation]
max-examples = {MAX_EXAMPLES}
deterministic = true

[checks.positive_data_acceptance]
expected-statuses = ["2xx", "401", "403", "404", "409", "413", "429"]

[checks.negative_data_rejection]
expected-statuses = ["400", "401", "403", "404", "405", "409", "413", "429"]

[[operations]]
include-name = [
    "GET /api/config", "PUT /api/config/{{prop}}", "POST /api/sessions/{{id}}/prompt", "POST /webhook/{{agent}}",
    "GET /api/sessions", "PATCH /api/sessions/{{id}}", "GET /api/models",
    "POST /api/sessions/{{id}}/fork", "POST /api/sessions/{{id}}/rollback", "POST /api/sessions/{{id}}/steer",
]
checks.positive_data_acceptance.expected-statuses = ["2xx", "400", "401", "403", "404", "409", "413", "429"]

# schemathesis speaks plain HTTP only and cannot make the WebSocket handshake: what is checked is the documented
# answer to a request without an upgrade (426), to another method (405) and to everything else it sends.
[[operations]]
include-name = "GET /rpc"
checks.positive_data_acceptance.expected-statuses = ["426"]

[[operations]]
include-name = "GET /acp"
checks.positive_data_acceptance.expected-statuses = ["426"]
"""


class LoopThread:
    """An event loop running in a thread: the daemon side of the test."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="fuzz-daemon", daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 60.0) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()


class Gateway:
    def __init__(self, daemon: LoopThread, env: Env, handle: GatewayHandle, token: str) -> None:
        self.daemon = daemon
        self.env = env
        self.handle = handle
        self.token = token
        self.headers = {"Authorization": f"Bearer {token}"}

    def issue_code(self) -> str:
        async def issue() -> str:  # on the daemon's loop, like everything else that touches its state
            return self.env.codes.issue("boss")

        return self.daemon.run(issue())


async def _start(tmp: Path) -> tuple[Env, GatewayHandle, str]:
    # Pairing's lockout (5 wrong codes: every request 429 for 5 minutes) would end the fuzzing of `POST /pair`
    # after its first few cases; it has tests of its own (test_gateway_pairing.py), so here it never comes.
    env = await build_env(tmp, FUZZ_TOML, PairingCodes(max_failures=1_000_000))
    store = env.services.config_store
    env.services.files = FileService(  # as `app.daemon` does: attachments are checked by the files service
        env.services.sessions, lambda: store.current.limits, staging_dir=staging_dir_for(env.services.paths.data_dir)
    )
    handle = await start_gateway(
        env.app, host="127.0.0.1", port=0, ws_max_size=ws_max_size(env.services.config.limits.max_frame_bytes)
    )
    _, token = await env.token("boss")
    boss = env.services.auth.policy().for_user("boss")
    assert boss is not None
    sessions = env.services.sessions
    opened = await sessions.open(boss, session_id=LIVE_SESSION)
    await sessions.open(boss, session_id=CHAT_SESSION, mode="chat", surface="gateway")
    sessions.release(CHAT_SESSION)  # stored, not live: a webhook conversation between two calls
    # What makes fuzzing the prompt routes safe: a `/bash` prompt over REST is rejected, and nothing runs.
    async with httpx.AsyncClient(base_url=handle.url, headers={"Authorization": f"Bearer {token}"}) as client:
        body = {"prompt": f"/bash touch {BASH_MARKER}"}
        response = await client.post(f"/api/sessions/{LIVE_SESSION}/prompt", json=body)
    assert response.status_code == 200, response.text
    assert "rejected" in response.json()["content"]
    assert not (opened.session.workspace / BASH_MARKER).exists()
    return env, handle, token


async def _stop(env: Env, handle: GatewayHandle) -> None:
    await handle.close()
    await close_env(env)


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[Gateway]:
    daemon = LoopThread()
    try:
        env, handle, token = daemon.run(_start(tmp_path / "cfg"))
        try:
            yield Gateway(daemon, env, handle, token)
        finally:
            daemon.run(_stop(env, handle))
    finally:
        daemon.stop()


@pytest.fixture
def gateway_schema(gateway: Gateway) -> Any:
    # The token as the document's `bearer` scheme, not only as a header: schemathesis then knows the auth is the
    # test's own on every operation (an operation with a header parameter of its own, such as `Last-Event-ID`,
    # otherwise counts the Authorization header as generated) and probes that it is enforced.
    auth = f'\n[auth.openapi.bearer]\nbearer = "{gateway.token}"\n'
    schema = schemathesis.openapi.from_url(
        f"{gateway.handle.url}/openapi.json", config=schemathesis.Config.from_str(CONFIG + auth)
    )
    schema.config.update(headers=gateway.headers)

    @schema.hook
    def flatmap_case(context: Any, case: Any) -> Any:
        if case.meta is None or case.meta.generation.mode.is_negative:
            return st.just(case)  # a negative case keeps its violation where the generator made it
        path = case.path_parameters or {}
        for name, values in STEER.items():
            if name in path:
                return st.sampled_from([*values, path[name]]).map(partial(_set_path_parameter, case, name))
        if case.operation.label == "POST /pair" and isinstance(case.body, dict) and "user" in case.body:
            # a `user` that is not the code's user (boss, see the test) counts as a wrong code
            return st.sampled_from(["boss", case.body["user"]]).map(partial(_set_pairing_user, case))
        return st.just(case)

    return schema


def _set_path_parameter(case: Any, name: str, value: str) -> Any:
    case.path_parameters = {**case.path_parameters, name: value}
    return case


def _set_pairing_user(case: Any, user: Any) -> Any:
    case.body = {**case.body, "user": user}
    return case


schema = schemathesis.pytest.from_fixture("gateway_schema")


@pytest.mark.req("R-GW-2")
@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.function_scoped_fixture],
)
def test_every_operation_answers_as_documented(case: Any, gateway: Gateway) -> None:
    code = (case.headers or {}).get("X-Pairing-Code")
    positive = case.meta is not None and case.meta.generation.mode.is_positive
    if case.operation.label == "POST /pair" and positive and code is not None and int(code) % 2 == 0:
        case.headers["X-Pairing-Code"] = gateway.issue_code()  # half of them real, so that 201 is checked too
    # An event stream does not end: schemathesis reads it for the timeout and checks what came (the refusals
    # before it starts, and a gap event, are answered at once).
    case.call_and_validate(timeout=1 if case.operation.label in STREAMS else 30)
