"""`rpc.discover` and `GET /openrpc.json` on a real daemon (R-DISC-1): answered before `initialize` on the socket
and the WebSocket, the same document on both and over HTTP, listing exactly the methods the daemon answers,
valid for `@open-rpc/schema-utils-js` (validation, dereferencing, and `MethodCallValidator` on every params object
the e2e suites sent: tests/fixtures/wire_samples.jsonl), and enough to drive the daemon with a client made from
it alone. The CLI's `zeroclaw rpc --list` reads it too."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
from typing import Any

import httpx
import pytest
from e2e_harness import READY_RE, Daemon, DaemonFactory, error_of, zeroclaw_command
from js_tools import run_node
from jsonschema import Draft202012Validator
from openrpc_client import OpenRpcClient
from websockets.asyncio.client import connect
from wire_recorder import FIXTURE

from rpc.core.wire import camel

pytestmark = pytest.mark.req("R-DISC-1")

TIMEOUT = 10.0


def start(factory: DaemonFactory) -> tuple[Daemon, str]:
    d = factory.start(None, no_gateway=False, args=["--gateway-port", "0"])
    assert d.ready_line is not None
    m = READY_RE.match(d.ready_line)
    assert m is not None and m["gateway"] != "off", d.ready_line
    return d, m["gateway"]


async def discover(d: Daemon) -> dict[str, Any]:
    async with await d.connect() as c:
        document: dict[str, Any] = await c.call("rpc.discover")  # the first call: no initialize
    return document


async def test_answered_before_initialize_the_same_on_every_surface(daemon_factory: DaemonFactory) -> None:
    d, url = start(daemon_factory)
    document = await discover(d)
    assert document["openrpc"] == "1.3.2" and document["info"]["title"] == "zeroclaw"
    servers = {s["name"]: s["url"] for s in document["servers"]}
    assert servers == {"local": "unix:daemon.sock", "gateway": "ws" + url.removeprefix("http") + "/rpc"}
    assert str(d.config_dir) not in json.dumps(document)  # served without a token: no path of the user's
    async with httpx.AsyncClient(base_url=url, trust_env=False) as http:
        served = await http.get("/openrpc.json")  # no token, as /openapi.json
    assert served.status_code == 200 and served.headers["content-type"] == "application/json"
    assert served.json() == document
    async with connect(servers["gateway"], proxy=None) as ws:  # no token: rpc.discover needs none
        await ws.send(json.dumps({"jsonrpc": "2.0", "method": "rpc.discover", "id": 1}))
        answer = json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT))
        assert answer["result"] == document
        await ws.send(json.dumps({"jsonrpc": "2.0", "method": "status", "id": 2}))
        refused = json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT))
        assert refused["error"]["code"] == -32010  # everything else still needs initialize


@pytest.mark.req("R-DISC-2")
async def test_the_served_document_passes_docs_openrpc_check(daemon_factory: DaemonFactory, tmp_path: Any) -> None:
    """issue 38 §5.12: `/openrpc.json` adds `servers` to what `zeroclaw docs openrpc` prints; `--check` compares
    the contract, so the served document of this version passes it."""
    d, url = start(daemon_factory)
    async with httpx.AsyncClient(base_url=url, trust_env=False) as http:
        served = (await http.get("/openrpc.json")).content
    assert "servers" in json.loads(served)
    printed = subprocess.run([*zeroclaw_command(), "docs", "openrpc"], capture_output=True, check=True, env=d.env)
    assert "servers" not in json.loads(printed.stdout)
    saved = tmp_path / "openrpc.json"
    saved.write_bytes(served)
    checked = subprocess.run(
        [*zeroclaw_command(), "docs", "openrpc", "--check", str(saved)], capture_output=True, text=True, env=d.env
    )
    assert checked.returncode == 0, checked.stderr


USERS = """
[users.ops]
permission_profiles = []
"""
# Params that make a call succeed where `{}` would not, so its result is checked live too.
GOOD_PARAMS = {"config/map-keys": {"path": "agents"}, "pairing/code": {"user": "ops"}}


async def test_the_methods_listed_are_the_methods_answered(daemon_factory: DaemonFactory) -> None:
    """Each listed method is called (with no params) and none answers -32601; each result validates against
    the document; names not listed answer -32601; `initialize`'s `methods` is the same list."""
    d = daemon_factory.start(USERS)
    document = await discover(d)
    listed = [m["name"] for m in document["methods"]]
    results = {m["name"]: m["result"]["schema"] for m in document["methods"]}
    answered = set()
    async with await d.connect() as c:
        init = await c.initialize()
        assert init["methods"] == listed
        for name in listed:
            response = await c.request(name, GOOD_PARAMS.get(name, {}), timeout=TIMEOUT)
            assert response.get("error", {}).get("code") != -32601, (name, response)
            if "result" in response:
                schema = {**results[name], "components": document["components"]}
                Draft202012Validator(schema).validate(response["result"])
                answered.add(name)
        assert answered >= {"status", "rpc.discover", "config/get", "config/map-keys", "pairing/code", "session/list"}
        for name in ("rpc.discovery", "session/nope", "Status", "rpc.discover/", "file/upload"):
            code, data = error_of(await c.request(name, {}))
            assert (code, data["kind"]) == (-32601, "method_not_found"), name


async def test_schema_utils_validates_the_document_and_every_recorded_call(daemon_factory: DaemonFactory) -> None:
    d = daemon_factory.start()
    document = await discover(d)
    samples = [json.loads(line) for line in FIXTURE.read_text().splitlines()]
    names = {m["name"]: {p["name"] for p in m["params"]} for m in document["methods"]}
    calls = [
        {"method": s["method"], "params": _spelled(s["value"], names[s["method"]])}
        for s in samples
        if s["kind"] == "params"
    ]
    assert len({c["method"] for c in calls}) >= 25, "the fixture holds params of most methods"
    report = run_node("validate_openrpc.mjs", {"document": document, "calls": calls})
    assert report["valid"] is True, report["valid"]
    assert report["dereferenced"] is True
    failed = [c for c in report["calls"] if c["errors"]]
    assert not failed, failed[:3]
    # and it does refuse what the daemon refuses
    bad = run_node(
        "validate_openrpc.mjs",
        {
            "document": document,
            "calls": [
                {"method": "session/new", "params": {"agentAlias": ""}},
                {"method": "session/prompt", "params": {"sessionId": "s"}},
            ],
        },
    )
    assert all(c["errors"] for c in bad["calls"]), bad["calls"]


def _spelled(params: Any, names: set[str]) -> Any:
    """`params` with each key in the document's spelling: a field's other spelling (camelCase or snake_case) is
    accepted too (R-WIRE-8, docs/protocol.md), and the document names one. Entries of a list of objects
    (`file/attach`'s `files`) are spelled in the method's style."""
    if not isinstance(params, dict):
        return params
    snake_family = any("_" in name for name in names)
    out = {}
    for key, value in params.items():
        out[next((k for k in (key, _snake(key), camel(key)) if k in names), key)] = _entries(value, snake_family)
    return out


def _entries(value: Any, snake_family: bool) -> Any:
    if isinstance(value, list):
        return [
            {(_snake(k) if snake_family else camel(k)): v for k, v in item.items()} if isinstance(item, dict) else item
            for item in value
        ]
    return value


def _snake(key: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", key).lower()


async def test_a_client_made_from_the_document_drives_a_session(daemon_factory: DaemonFactory) -> None:
    d = daemon_factory.start()
    document = await discover(d)
    async with await d.connect() as c:
        client = OpenRpcClient(c, document)
        init = await client.initialize(protocolVersion=1, clientInfo={"name": "openrpc-client"})
        assert init["principal"]["admin"] is True
        opened = await client.session_new(sessionId="from-the-document")
        assert opened["sessionId"] == "from-the-document"
        done = await client.session_prompt(sessionId="from-the-document", prompt="hello")
        assert done["stopReason"] == "end_turn"
        updates = [n["params"]["type"] for n in client.notifications() if n["method"] == "session/update"]
        assert updates[-1] == "turn_complete" and "agent_message_chunk" in updates
        listed = await client.session_list()
        assert [s["sessionId"] for s in listed["sessions"]] == ["from-the-document"]
        with pytest.raises(AssertionError, match="needs sessionId"):
            await client.session_prompt(prompt="no session")  # refused by the document before the wire
        with pytest.raises(KeyError):
            _ = client.session_nope


async def test_rpc_list_prints_every_method_from_the_daemon(daemon: Daemon) -> None:
    done = subprocess.run(
        [*zeroclaw_command(), "rpc", "--list", "--config-dir", str(daemon.config_dir)],
        env=daemon.env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    document = await discover(daemon)
    assert [line.split()[0] for line in lines] == [m["name"] for m in document["methods"]]
    begin = next(line for line in lines if line.startswith("file/upload/begin "))
    assert begin.endswith("(local only)") and "Begin a chunked upload" in begin
