"""The params models (rpc/core/registry.py): msgspec Structs read with both spellings of every key (R-WIRE-8), strict
JSON typing, and errors that name the first failing field, never its value (R-WIRE-4; docs/protocol.md)."""

from __future__ import annotations

from typing import Any

import pytest

from rpc.core.errors import InvalidParams
from rpc.core.registry import validate
from rpc.dialects.zerocode.dialect import ZEROCODE, ZeroCodeHello
from rpc.methods import build_registry
from rpc.methods.files import AttachParams
from rpc.methods.lifecycle import InitializeParams
from rpc.methods.session import MessagesParams, PromptParams

REGISTRY = build_registry()


def _error(model: type[Any], data: dict[str, Any], *, strict: bool = True) -> dict[str, str]:
    with pytest.raises(InvalidParams) as caught:
        validate(model, data, strict=strict)
    (error,) = caught.value.data["errors"]
    assert set(error) == {"field", "type", "message"}
    return dict(error)


@pytest.mark.req("R-WIRE-8")
def test_either_spelling_of_every_key_and_nested_ones() -> None:
    for data in ({"sessionId": "s1", "prompt": "p"}, {"session_id": "s1", "prompt": "p"}):
        assert validate(PromptParams, data) == PromptParams(session_id="s1", prompt="p")
    attach = validate(AttachParams, {"sessionId": "s1", "files": [{"dataB64": "AA==", "mime_type": "text/plain"}]})
    assert attach.files[0].data_b64 == "AA==" and attach.files[0].mime_type == "text/plain"
    assert validate(MessagesParams, {"session_id": "s1", "beforeIndex": 3, "unknown": 1}).before == 3


@pytest.mark.req("R-WIRE-8")
def test_two_spellings_of_one_field_the_first_spelling_wins() -> None:
    assert validate(PromptParams, {"session_id": "b", "sessionId": "a", "prompt": "p"}).session_id == "a"
    assert validate(MessagesParams, {"sessionId": "s", "before_index": 2, "before": 1}).before == 1


@pytest.mark.req("R-WIRE-4")
def test_errors_name_the_first_field_never_the_value() -> None:
    assert _error(PromptParams, {"prompt": "p"})["field"] == "sessionId"
    error = _error(MessagesParams, {"session_id": "s", "limit": "secret-7"})
    assert error == {"field": "limit", "type": "int_type", "message": "Expected `int`, got `str`"}
    assert _error(MessagesParams, {"sessionId": "s", "limit": 10_001})["type"] == "less_than_equal"
    # The file/* family names its fields in snake_case, as its outputs are (R-WIRE-8).
    assert _error(AttachParams, {"sessionId": "s", "files": [{"mimeType": "x"}]})["field"] == "files.0.data_b64"
    assert "secret" not in str(_error(ZeroCodeHello, {"env": {"KEY": 5}}))


@pytest.mark.req("R-WIRE-4")
def test_typing_is_strict_except_for_query_strings() -> None:
    assert _error(InitializeParams, {"protocolVersion": "1"})["field"] == "protocolVersion"
    assert _error(MessagesParams, {"sessionId": "s", "limit": 5.0})["type"] == "int_type"
    lax = validate(MessagesParams, {"sessionId": "s", "limit": "5", "before": "2"}, strict=False)
    assert (lax.limit, lax.before) == (5, 2)
    assert _error(MessagesParams, {"sessionId": "s", "limit": "x"}, strict=False)["field"] == "limit"


@pytest.mark.req("R-WIRE-4")
@pytest.mark.parametrize("key", ["sessionId", "tuiId"])
def test_a_trailing_newline_does_not_pass_an_anchored_pattern(key: str) -> None:
    """Python's `$` matches before a final newline (pydantic's Rust regex did not): `whole` keeps it refused."""
    model = PromptParams if key == "sessionId" else ZeroCodeHello
    assert _error(model, {key: "abc\n", "prompt": "p"})["type"] == "string_pattern_mismatch"


@pytest.mark.req("R-ZC-1")
def test_the_zerocode_dialect_is_asked_for_by_the_frames_spelling_never_by_a_key() -> None:
    """The standard params carry no dialect field: the dialect reads the params as sent (`sent`, never a key)."""
    spec = REGISTRY.get("initialize")
    assert spec is not None
    assert not ZEROCODE.claims(spec.params_from({"protocolVersion": 1, "zerocode": True}).sent)  # type: ignore[attr-defined]
    assert ZEROCODE.claims(spec.params_from({"protocol_version": 1, "tui_id": "t1"}).sent)  # type: ignore[attr-defined]
    assert not ZEROCODE.claims(spec.params_from(None).sent)  # type: ignore[attr-defined]
    raw = {"protocolVersion": 1, "sent": {"env": {}}}
    assert spec.params_from(raw).sent == raw  # type: ignore[attr-defined]  # what was sent, whatever it says
    shown = repr(spec.params_from({"protocolVersion": 1, "authToken": "zc_secret", "env": {"K": "secret"}}))
    assert "secret" not in shown
    assert "secret" not in repr(ZEROCODE.hello({"protocol_version": 1, "env": {"K": "secret"}}))
    assert set(InitializeParams.__struct_encode_fields__) == {
        "protocolVersion",
        "clientInfo",
        "clientCapabilities",
        "authToken",
        "sent",
    }


def test_no_params_is_one_shared_frozen_instance() -> None:
    spec = REGISTRY.get("session/list")
    assert spec is not None
    empty = spec.params_from(None)
    assert empty is spec.params_from({}) is spec.params_from([])
    with pytest.raises(AttributeError):
        empty.include_killed = True  # type: ignore[misc]
