"""Every answer the e2e suites saw validates against what the OpenRPC document says of it (R-DISC-1): each result
against its method's result schema, each notification and daemon request against the `x-notifications` and
`x-server-requests` entries, each error against the method's declared errors (its kind listed, its `data` of the
declared shape). The samples are recorded from the suites (tests/e2e/wire_recorder.py: one per distinct shape, the
standard dialect's) into tests/fixtures/wire_samples.jsonl; re-record after a change to an answer's shape."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from rpc.contract.openrpc import openrpc_document
from rpc.methods import build_registry

pytestmark = pytest.mark.req("R-DISC-1")

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "wire_samples.jsonl"  # tests/e2e/wire_recorder.py
DOCUMENT = openrpc_document(build_registry(), version="test")
METHODS = {m["name"]: m for m in DOCUMENT["methods"]}
NOTIFICATIONS = {n["name"]: n for n in DOCUMENT["x-notifications"]}
REQUESTS = {r["name"]: r for r in DOCUMENT["x-server-requests"]}
SAMPLES = [json.loads(line) for line in FIXTURE.read_text().splitlines()]


def _samples(kind: str) -> list[Any]:
    return [pytest.param(s["method"], s["value"], id=s["method"]) for s in SAMPLES if s["kind"] == kind]


def _validate(schema: dict[str, Any], value: Any) -> None:
    Draft202012Validator({**schema, "components": DOCUMENT["components"]}).validate(value)


@pytest.mark.parametrize(("method", "result"), _samples("result"))
def test_a_recorded_result_is_what_the_document_says(method: str, result: Any) -> None:
    _validate(METHODS[method]["result"]["schema"], result)


@pytest.mark.parametrize(("method", "params"), _samples("notification"))
def test_a_recorded_notification_is_declared(method: str, params: Any) -> None:
    _validate(NOTIFICATIONS[method]["params"], params)


@pytest.mark.parametrize(("method", "params"), _samples("server_request"))
def test_a_recorded_daemon_request_is_declared(method: str, params: Any) -> None:
    _validate(REQUESTS[method]["params"], params)


@pytest.mark.parametrize(("method", "error"), _samples("error"))
def test_a_recorded_error_is_one_the_method_declares(method: str, error: dict[str, Any]) -> None:
    if method not in METHODS:
        assert error["code"] == -32601  # a name the suites made up
        return
    kind = error["data"]["kind"]
    declared = {ref["$ref"].rsplit("/", 1)[1] for ref in METHODS[method]["errors"]}
    assert kind in declared, f"{method} answered {kind}, which its contract does not list"
    shape = DOCUMENT["components"]["errors"][kind]
    assert error["code"] == shape["code"]
    _validate(shape["data"], error["data"])


def test_the_samples_cover_the_surface() -> None:
    """The suites saw a result of every method, and every kind of session/update a turn streams."""
    seen = {s["method"] for s in SAMPLES if s["kind"] == "result"}
    assert seen == set(METHODS), sorted(set(METHODS) - seen)
    types = {s["value"]["type"] for s in SAMPLES if s["kind"] == "notification" and s["method"] == "session/update"}
    assert {"agent_message_chunk", "tool_call", "tool_result", "approval_request", "turn_complete"} <= types
