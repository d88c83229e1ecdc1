"""`/openapi.json` is generated from the params and result models (R-GW-2, gateway/openapi/): every answer
is described (no bare `object`), every operation lists the statuses it can answer, the constraints are the
models' own, and the result models describe what a running gateway really answers (so they cannot drift)."""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

import httpx
import msgspec
import pytest
from gateway_env import Env
from jsonschema import Draft202012Validator

from app.config.props import MAX_PROP_CHARS
from app.services import DaemonStatus
from gateway.openapi import models as m
from gateway.openapi.document import openapi_spec
from gateway.openapi.ecosystem import SSE_EVENT
from gateway.rest.pairing import PairBody
from rpc.methods import config as config_methods
from rpc.methods.session import MessagesParams

SPEC = openapi_spec("test")
A = TypeVar("A", bound=msgspec.Struct)
OPERATIONS = [(f"{verb.upper()} {path}", op) for path, item in SPEC["paths"].items() for verb, op in item.items()]
REST = [(label, op) for label, op in OPERATIONS if label not in ("GET /rpc", "GET /acp")]


def _resolve(schema: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if ref is None:
        return schema
    resolved: dict[str, Any] = SPEC["components"]["schemas"][ref.rsplit("/", 1)[1]]
    return resolved


def _described(schema: dict[str, Any]) -> bool:
    schema = _resolve(schema)
    if "anyOf" in schema:
        return all(_described(branch) for branch in schema["anyOf"])
    return schema.get("type") == "object" and bool(schema.get("properties"))


def _answer_schema(label: str, status: str) -> dict[str, Any]:
    op = dict(OPERATIONS)[label]
    schema: dict[str, Any] = op["responses"][status]["content"]["application/json"]["schema"]
    return schema


def _properties(model: type[msgspec.Struct]) -> dict[str, Any]:
    """A params model's properties as msgspec states them (the document's source)."""
    schema = msgspec.json.schema(model)
    properties: dict[str, Any] = schema["$defs"][model.__name__]["properties"]
    return properties


def _answer(model: type[A], body: Any) -> A:
    """`body` as the result `model` (strict, unknown keys refused): what the document says of it holds."""
    return msgspec.convert(body, model)


def _check(label: str, status: int, body: Any) -> None:
    """`body` against the document's schema of that answer."""
    schema = {**_answer_schema(label, str(status)), "components": SPEC["components"]}
    errors = [e.message for e in Draft202012Validator(schema).iter_errors(body)]
    assert not errors, (label, status, errors)


_TEXT = {"schema": {"type": "string"}}


@pytest.mark.req("R-GW-2")
@pytest.mark.parametrize(("label", "op"), REST, ids=[label for label, _ in REST])
def test_no_answer_is_a_bare_object(label: str, op: dict[str, Any]) -> None:
    ok = [s for s in op["responses"] if s.startswith("2")]
    assert ok, label
    for status in ok:
        content = op["responses"][status]["content"]
        if "application/json" not in content:  # GET /metrics: Prometheus text; the SSE stream: events
            assert content in ({"text/plain": _TEXT}, {"text/event-stream": {"schema": SSE_EVENT}}), (label, status)
            continue
        assert _described(content["application/json"]["schema"]), (label, status)


@pytest.mark.req("R-GW-2")
@pytest.mark.parametrize(("label", "op"), OPERATIONS, ids=[label for label, _ in OPERATIONS])
def test_every_operation_lists_the_statuses_it_can_answer(label: str, op: dict[str, Any]) -> None:
    statuses = set(op["responses"])
    assert {"400", "413"} <= statuses, label  # the Host guard and the body limit stand before every route
    if op["security"]:
        assert {"401", "403", "503"} <= statuses, label  # the token is resolved (storage) and the grant checked
    for status, response in op["responses"].items():
        if int(status) >= 400:
            schema = response["content"]["application/json"]["schema"]
            if " /v1/" in label and status != "413":  # the OpenAI-compatible routes answer OpenAI's error shape
                schema = schema["anyOf"][0] if status == "400" else {"$ref": "#/components/schemas/ErrorAnswer"}
            assert schema == {"$ref": "#/components/schemas/ErrorAnswer"}


@pytest.mark.req("R-GW-2")
def test_limits_are_the_models_own() -> None:
    paths = SPEC["paths"]
    (get_prop,) = paths["/api/config"]["get"]["parameters"]
    (put_prop,) = paths["/api/config/{prop}"]["put"]["parameters"]
    # One property-path limit: the domain's (app/config/props.py), which the RPC params models reference.
    assert get_prop["schema"]["maxLength"] == put_prop["schema"]["maxLength"] == MAX_PROP_CHARS
    for model in (config_methods.GetParams, config_methods.SetParams, config_methods.DeleteParams):
        prop = _properties(model)["prop"]
        assert prop.get("maxLength", MAX_PROP_CHARS) == MAX_PROP_CHARS, model
    pattern = _properties(MessagesParams)["sessionId"]["pattern"]
    for path in ("/api/sessions/{id}/messages", "/api/sessions/{id}/prompt", "/api/sessions/{id}/usage"):
        (item,) = paths[path].values()
        assert item["parameters"][0]["schema"]["pattern"] == pattern
    # `POST /pair` is validated with the very model the document states (gateway/rest/pairing.py).
    pair = paths["/pair"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert pair["properties"] == _properties(PairBody)
    webhook = paths["/webhook/{agent}"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert webhook["properties"]["sessionId"]["anyOf"][0]["pattern"] == pattern


@pytest.mark.req("R-GW-2")
async def test_real_answers_match_the_result_models(client: httpx.AsyncClient, env: Env) -> None:
    _, token = await env.token("boss")
    auth = {"Authorization": f"Bearer {token}"}
    boss = env.services.auth.policy().for_user("boss")
    assert boss is not None
    sid = (await env.services.sessions.open(boss, session_id="drift")).session.session_id

    health = await client.get("/health")
    _answer(m.Health, health.json())
    _check("GET /health", 200, health.json())
    document = await client.get("/openapi.json")
    _answer(m.OpenApiDocument, document.json())
    _check("GET /openapi.json", 200, document.json())

    code = env.codes.issue("boss")
    paired = await client.post("/pair", headers={"X-Pairing-Code": code}, json={"label": "drift"})
    assert paired.status_code == 201, paired.text
    _answer(m.PairedToken, paired.json())
    _check("POST /pair", 201, paired.json())

    status = await client.get("/api/status", headers=auth)
    _answer(m.Status, status.json())
    _check("GET /api/status", 200, status.json())
    env.services.gateway_url = "http://127.0.0.1:42617"  # the answer with a gateway
    status = await client.get("/api/status", headers=auth)
    _answer(m.Status, status.json())
    assert status.json()["gateway"] == {"url": "http://127.0.0.1:42617"}
    _check("GET /api/status", 200, status.json())

    whole = await client.get("/api/config", headers=auth)
    _check("GET /api/config", 200, whole.json())
    one = await client.get("/api/config", params={"prop": "limits.max_sessions"}, headers=auth)
    _answer(m.ConfigProp, one.json())
    _check("GET /api/config", 200, one.json())
    put = await client.put("/api/config/limits.max_sessions", json={"value": 8}, headers=auth)
    _answer(m.ConfigSet, put.json())
    _check("PUT /api/config/{prop}", 200, put.json())

    for text in ("hello", "/bash true"):  # the second one is a tool call (rejected): rows with toolCallId, name
        prompt = await client.post(f"/api/sessions/{sid}/prompt", json={"prompt": text}, headers=auth)
        assert prompt.status_code == 200, prompt.text
        _answer(m.PromptResult, prompt.json())
        _check("POST /api/sessions/{id}/prompt", 200, prompt.json())
    messages = await client.get(f"/api/sessions/{sid}/messages", headers=auth)
    rows = _answer(m.Messages, messages.json()).messages
    assert any(row.tool_call_id for row in rows), messages.json()
    _check("GET /api/sessions/{id}/messages", 200, messages.json())
    usage = await client.get(f"/api/sessions/{sid}/usage", headers=auth)  # R-MODEL-5
    counted = _answer(m.SessionUsage, usage.json())
    assert [turn.index for turn in counted.turns] == [0, 1] and counted.total.input_tokens > 0, usage.json()
    _check("GET /api/sessions/{id}/usage", 200, usage.json())
    listed = await client.get("/api/sessions", params={"includeKilled": "true"}, headers=auth)
    assert _answer(m.SessionList, listed.json()).sessions
    _check("GET /api/sessions", 200, listed.json())
    hook = await client.post("/webhook/default", json={"message": "hi"}, headers=auth)
    assert hook.status_code == 200, hook.text
    _answer(m.WebhookResult, hook.json())
    _check("POST /webhook/{agent}", 200, hook.json())

    denied = await client.get("/api/status")
    _answer(m.ErrorAnswer, denied.json())
    _check("GET /api/status", 401, denied.json())


@pytest.mark.req("R-GW-2")
@pytest.mark.parametrize("gateway_url", [None, "http://127.0.0.1:42617"])
async def test_the_status_schema_is_the_status_answer(
    client: httpx.AsyncClient, env: Env, gateway_url: str | None
) -> None:
    """The `Status` schema is derived from `DaemonStatus` (gateway/openapi/models.py): its properties are the keys
    of the real `status` answer (the domain's and the protocol layer's), in their order, all required."""
    _, token = await env.token("boss")
    env.services.gateway_url = gateway_url
    status = await client.get("/api/status", headers={"Authorization": f"Bearer {token}"})
    assert status.status_code == 200, status.text
    schema = SPEC["components"]["schemas"]["Status"]
    assert list(status.json()) == list(schema["properties"]) == schema["required"]


def test_a_field_added_to_daemon_status_is_in_the_status_schema() -> None:
    @dataclasses.dataclass(frozen=True)
    class Wider(DaemonStatus):
        disk_free_bytes: int | None = None

    wider = m.wire_model(Wider, name="Status", extra=m.STATUS_PROTOCOL_FIELDS)
    properties = list(msgspec.json.schema(wider)["$defs"]["Status"]["properties"])
    *domain, protocol_version, connections = SPEC["components"]["schemas"]["Status"]["properties"]
    assert properties == [*domain, "diskFreeBytes", protocol_version, connections]
