"""The OpenRPC document (R-DISC-1) and the page generated from it (R-DISC-2), in process: built from the registry
that dispatches, valid against the OpenRPC 1.3 meta-schema (the `@open-rpc/spec` package's, with jsonschema),
and built only when asked."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest
from js_tools import json_file
from jsonschema import Draft7Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT7

from app import __version__
from app.cli.docs_command import page, write_page
from rpc.contract.openrpc import openrpc_document
from rpc.core.error_kinds import ERROR_KINDS
from rpc.methods import build_registry

pytestmark = pytest.mark.req("R-DISC-1")

REPO = Path(__file__).resolve().parents[3]
REGISTRY = build_registry()
DOCUMENT = openrpc_document(REGISTRY, version="test")
METHODS = {m["name"]: m for m in DOCUMENT["methods"]}


def test_every_registered_method_has_a_contract_on_its_registry_line() -> None:
    assert [spec.name for spec in REGISTRY.specs() if spec.contract is None] == []
    assert list(METHODS) == REGISTRY.names()


def test_the_document_validates_against_the_openrpc_1_3_meta_schema() -> None:
    meta = json_file("@open-rpc/spec/dist/1_3/schema.json")
    json_schema_meta = json_file("@json-schema-tools/meta-schema/schema.json")
    resources = Registry().with_resource(
        "https://meta.json-schema.tools", Resource.from_contents(json_schema_meta, default_specification=DRAFT7)
    )
    errors = sorted(Draft7Validator(meta, registry=resources).iter_errors(DOCUMENT), key=str)
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:10])
    assert DOCUMENT["openrpc"] == "1.3.2" and DOCUMENT["info"] == {
        "title": "zeroclaw",
        "version": "test",
        "description": DOCUMENT["info"]["description"],
    }


def test_every_schema_in_the_document_is_a_valid_json_schema() -> None:
    for schema in DOCUMENT["components"]["schemas"].values():
        Draft7Validator.check_schema(schema)
    for method in DOCUMENT["methods"]:
        for param in method["params"]:
            Draft7Validator.check_schema(param["schema"])
        Draft7Validator.check_schema(method["result"]["schema"])


def test_params_are_the_models_fields_by_name() -> None:
    """One content descriptor per field of the params model that validates the call, camelCase, required as the
    model says; a field the peer cannot set (`initialize`'s derived `zerocode`) is not offered."""
    for name, method in METHODS.items():
        spec = REGISTRY.get(name)
        assert spec is not None
        assert method["paramStructure"] == "by-name"
        fields = [f for f in msgspec.structs.fields(spec.params) if f.name not in spec.params.derived_fields]
        assert [p["name"] for p in method["params"]] == [f.encode_name for f in fields], name
        assert [p["required"] for p in method["params"]] == [f.required for f in fields], name
    new = {p["name"]: p for p in METHODS["session/new"]["params"]}
    assert new["agentAlias"]["schema"] == {
        "title": "SessionNewParamsAgentAlias",
        "type": "string",
        "minLength": 1,
        "maxLength": 64,
        "default": "default",
    }
    assert "zerocode" not in {p["name"] for p in METHODS["initialize"]["params"]}


@pytest.mark.req("R-ECO-3")
def test_every_schema_a_generator_names_has_a_title() -> None:
    """Types get names, not hashes: every component, every inline param, result, notification and server-request
    schema and every error's `data` has a `title`; a `$ref` is named by its target."""
    schemas = DOCUMENT["components"]["schemas"]
    assert all(schema["title"] == name for name, schema in schemas.items())
    tops = [p["schema"] for m in DOCUMENT["methods"] for p in m["params"]]
    tops += [m["result"]["schema"] for m in DOCUMENT["methods"]]
    tops += [
        t[key]
        for t in DOCUMENT["x-notifications"] + DOCUMENT["x-server-requests"]
        for key in ("params", "result")
        if key in t
    ]
    tops += [e["data"] for e in DOCUMENT["components"]["errors"].values()]
    untitled = [s for s in tops if "title" not in s and not ("$ref" in s and s["$ref"].rsplit("/", 1)[1] in schemas)]
    assert untitled == []
    new = {p["name"]: p["schema"]["title"] for p in METHODS["session/new"]["params"]}
    assert new["agentAlias"] == "SessionNewParamsAgentAlias"
    row = schemas["SessionRow"]["properties"]
    assert row["title"] == {
        "title": "SessionRowTitle",
        "anyOf": [
            {"title": "SessionRowTitleString", "type": "string"},
            {"title": "SessionRowTitleNull", "type": "null"},
        ],
    }


def _subschemas(schema: Any) -> Any:
    """Every schema inside `schema` (properties, items, map values, branches), and itself."""
    yield schema
    for sub in schema.get("properties", {}).values():
        yield from _subschemas(sub)
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            yield from _subschemas(schema[key])
    for key in ("anyOf", "oneOf"):
        for sub in schema.get(key, ()):
            yield from _subschemas(sub)


@pytest.mark.req("R-ECO-3")
def test_every_schema_inside_has_a_title_and_no_title_names_two_schemas() -> None:
    import json

    tops = list(DOCUMENT["components"]["schemas"].values())
    tops += [p["schema"] for m in DOCUMENT["methods"] for p in m["params"]] + [
        m["result"]["schema"] for m in METHODS.values()
    ]
    tops += [t["params"] for t in DOCUMENT["x-notifications"] + DOCUMENT["x-server-requests"]]
    tops += [e["data"] for e in DOCUMENT["components"]["errors"].values()]
    named: dict[str, set[str]] = {}
    for schema in (sub for top in tops for sub in _subschemas(top)):
        if "$ref" not in schema:
            named.setdefault(schema["title"], set()).add(json.dumps(schema, sort_keys=True))
        if schema.get("type") == "array":
            assert "items" in schema, schema
    assert [title for title, schemas in named.items() if len(schemas) > 1] == []
    assert METHODS["config/get"]["result"]["schema"]["title"] == "ConfigGetResult"
    assert METHODS["session/prompt"]["result"]["schema"] == {"$ref": "#/components/schemas/PromptResult"}
    updates = {n["name"]: n for n in DOCUMENT["x-notifications"]}["session/update"]
    assert updates["params"]["title"] == "SessionUpdateParams"
    assert DOCUMENT["components"]["errors"]["session_busy"]["data"]["title"] == "SessionBusyErrorData"


def test_grants_local_only_and_errors_follow_the_declarations() -> None:
    for name, method in METHODS.items():
        spec = REGISTRY.get(name)
        assert spec is not None
        assert method["x-grant"] == spec.grant and method["x-local-only"] is spec.local_only, name
        kinds = [e["$ref"].rsplit("/", 1)[1] for e in method["errors"]]
        assert {"invalid_params", "internal_error"} <= set(kinds), name
        assert ("auth_required" in kinds) is (spec.requires_init or name == "initialize"), name
        assert ("forbidden" in kinds) is (spec.grant is not None), name
        assert ("local_only" in kinds) is spec.local_only, name
    assert METHODS["file/upload/begin"]["x-local-only"] is True
    assert METHODS["rpc.discover"]["x-grant"] is None and METHODS["initialize"]["x-grant"] is None
    errors = DOCUMENT["components"]["errors"]
    assert set(errors) == set(ERROR_KINDS)
    assert errors["session_busy"]["code"] == -32002 and errors["local_only"]["code"] == -32012
    assert errors["forbidden"]["data"]["properties"]["kind"] == {
        "title": "ForbiddenErrorDataKind",
        "const": "forbidden",
    }


def test_daemon_to_client_traffic_is_declared_as_extensions() -> None:
    extensions = {e["name"]: e for e in DOCUMENT["x-extensions"]}
    assert set(extensions) == {"x-grant", "x-local-only", "x-notifications", "x-server-requests"}
    assert all(e["restricted"] == ["methodObject"] for e in extensions.values())
    notifications = {n["name"]: n for n in DOCUMENT["x-notifications"]}
    assert set(notifications) == {"session/update", "logs/event"}
    update_types = []
    for branch in notifications["session/update"]["params"]["oneOf"]:
        schema = DOCUMENT["components"]["schemas"][branch["$ref"].rsplit("/", 1)[1]]
        update_types.append(schema["properties"]["type"]["enum"][0])
    assert update_types == [
        "agent_message_chunk",
        "agent_thought_chunk",
        "tool_call",
        "tool_result",
        "approval_request",
        "approval_resolved",
        "turn_complete",
        "history_trimmed",
        "config_changed",
        "usage",
        "tool_progress",
        "rolled_back",
        "user_message",
    ]
    trimmed = DOCUMENT["components"]["schemas"]["HistoryTrimmedUpdate"]["properties"]
    assert "keptTurns" not in trimmed and "droppedMessages" in trimmed  # the standard wire's fields only
    (ask,) = DOCUMENT["x-server-requests"]
    assert ask["name"] == "elicitation/create" and "result" in ask
    assert [n["name"] for n in METHODS["session/prompt"]["x-notifications"]] == ["session/update"]
    assert [r["name"] for r in METHODS["session/prompt"]["x-server-requests"]] == ["elicitation/create"]


def test_config_secrets_read_as_the_mask_in_config_get_results() -> None:
    provider = DOCUMENT["components"]["schemas"]["Provider"]["properties"]["api_key"]
    assert "writeOnly" not in str(DOCUMENT["components"]["schemas"])
    assert '"***"' in str(provider).replace("'", '"')


def test_the_document_is_built_on_first_use_not_at_start_up() -> None:
    code = (
        "import sys, app.daemon, gateway.app\n"
        "lazy = ('rpc.contract.openrpc', 'rpc.core.error_kinds', 'rpc.contract.traffic',"
        " 'rpc.contract.methods_page')\n"
        "print(sorted(m for m in lazy if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert done.stdout.strip() == "[]"


@pytest.mark.req("R-DISC-2")
def test_the_committed_methods_page_is_the_generated_one() -> None:
    committed = (REPO / "docs" / "methods.md").read_text(encoding="utf-8")
    assert committed == page("methods"), "run `zeroclaw docs methods --output docs/methods.md`"
    assert "### `session/prompt`" in committed and "*grant `sessions:execute`*" in committed


@pytest.mark.req("R-DISC-2")
def test_docs_check_fails_on_a_page_that_differs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "methods.md"
    assert write_page("methods", str(good)) == 0
    assert write_page("methods", None, check=str(good)) == 0
    good.write_text(good.read_text().replace("session/prompt", "session/prompted", 1))
    assert write_page("methods", None, check=str(good)) == 1
    assert "is not what this version generates" in capsys.readouterr().err


@pytest.mark.req("R-DISC-2")
def test_docs_openrpc_check_compares_the_contract_not_the_servers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """issue 38 §5.12: a document saved from a daemon (`/openrpc.json`, `rpc.discover`) has `servers`, which
    `zeroclaw docs openrpc` leaves out: `--check` compares the rest, so it passes; a contract change still fails."""
    import json

    served: dict[str, Any] = json.loads(page("openrpc"))
    served["servers"] = [{"name": "local", "url": "unix:daemon.sock"}, {"name": "gateway", "url": "ws://h:1/rpc"}]
    saved = tmp_path / "openrpc.json"
    saved.write_text(json.dumps(served, indent=1))  # another layout too: the JSON is compared, not the bytes
    assert write_page("openrpc", None, check=str(saved)) == 0
    served["methods"] = served["methods"][1:]
    saved.write_text(json.dumps(served))
    assert write_page("openrpc", None, check=str(saved)) == 1
    assert "is not the contract (all but `servers`) of what this version generates" in capsys.readouterr().err
    saved.write_text("not json")
    assert write_page("openrpc", None, check=str(saved)) == 1


def test_the_openrpc_page_is_the_document_of_this_version() -> None:
    import json

    document: dict[str, Any] = json.loads(page("openrpc"))
    assert document["info"]["version"] == __version__
    assert [m["name"] for m in document["methods"]] == REGISTRY.names()


def test_a_method_registered_without_a_contract_is_listed_with_any_result() -> None:
    """An embedding's (or a test's) own method is still served and listed, its result left open."""
    from rpc.core.registry import NoParams

    registry = build_registry()
    registry.method("test/extra", params=NoParams, grant="system:read")(lambda ctx, params: {})
    document = openrpc_document(registry, version="test")
    (extra,) = [m for m in document["methods"] if m["name"] == "test/extra"]
    assert (
        extra["result"] == {"name": "result", "schema": {"title": "TestExtraResult"}}
        and extra["x-grant"] == "system:read"
    )


def test_a_client_notification_is_listed_without_a_result() -> None:
    from rpc.core.registry import Contract, NoParams

    registry = build_registry()
    registry.method("test/notice", params=NoParams, grant=None, contract=Contract("A notice", None))(
        lambda ctx, params: None
    )
    document = openrpc_document(registry, version="test")
    (notice,) = [m for m in document["methods"] if m["name"] == "test/notice"]
    assert "result" not in notice and notice["summary"] == "A notice"
