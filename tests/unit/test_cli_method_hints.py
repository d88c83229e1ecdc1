"""The CLI's hints about a typed method (issue 38 §5.9): the params example derives from the method's own params
(valid for it, never a key it does not take), and a mistyped name gets the served one it is closest to."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from app.cli.hints import error_line
from app.cli.method_hints import did_you_mean, local_methods, params_example

METHODS = local_methods()


@pytest.mark.req("R-CLI")
@pytest.mark.parametrize("method", METHODS, ids=[m["name"] for m in METHODS])
def test_every_methods_example_is_params_it_takes(method: dict[str, Any]) -> None:
    example = json.loads(params_example(method["name"], METHODS))
    params = {p["name"]: p for p in method["params"]}
    assert set(example) <= set(params), (example, sorted(params))
    assert {name for name, p in params.items() if p.get("required")} <= set(example)
    for name, value in example.items():
        schema = params[name]["schema"]
        if "$ref" not in json.dumps(schema):  # an object named by reference is shown as `{}`, to fill in
            jsonschema.validate(value, schema)


@pytest.mark.req("R-CLI")
def test_session_list_example_has_no_session_id() -> None:
    assert params_example("session/list", METHODS) == '{"includeKilled": true}'
    assert params_example("session/attach", METHODS) == '{"sessionId": "s1"}'
    assert params_example("no/such-method", METHODS) == "{}"


@pytest.mark.req("R-CLI")
def test_a_mistyped_method_is_matched_to_the_one_meant() -> None:
    names = [m["name"] for m in METHODS]
    assert did_you_mean("sesion/list", names) == "session/list"
    assert did_you_mean("session/promt", names) == "session/prompt"
    assert did_you_mean("session/list", names) is None  # served: nothing to suggest
    assert did_you_mean("frobnicate", names) is None
    error = {"code": -32601, "message": "Method not found"}
    assert error_line(error, None, meant="session/list") == (
        "zeroclaw: Method not found (-32601); did you mean `session/list`? "
        "`zeroclaw rpc --list` lists the methods this daemon serves"
    )
    assert (
        error_line(error, None)
        == "zeroclaw: Method not found (-32601); `zeroclaw rpc --list` lists the methods this daemon serves"
    )
