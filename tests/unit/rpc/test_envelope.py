"""Frame classification and validation (R-WIRE-3, R-WIRE-4, R-BIDI-3, R-ERR): `rpc.core.envelope`.

`parse(line)` returns a `Request` (id `NO_ID` for a notification), a `Response` (an answer to one of the
daemon's own requests), a `Reject` (answer with this error under this id) or `None` (drop silently: a
malformed response-shaped frame is never answered).
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from rpc.core.envelope import (
    NO_ID,
    ExactId,
    Reject,
    Request,
    Response,
    encode_error,
    encode_notification,
    encode_request,
    encode_result,
    is_valid_id,
    parse,
)
from rpc.core.errors import InvalidRequest, MethodNotFound, ParseError, VersionMismatch

PARSE_ERROR = -32700
INVALID_REQUEST = -32600


def reject(line: bytes) -> Reject:
    out = parse(line)
    assert isinstance(out, Reject), out
    return out


def assert_reject(line: bytes, code: int, rid: Any) -> Reject:
    out = reject(line)
    assert out.error.code == code
    assert out.id == rid
    assert type(out.id) is type(rid)
    kind = {PARSE_ERROR: "parse_error", INVALID_REQUEST: "invalid_request"}[code]
    assert out.error.to_error()["data"]["kind"] == kind
    return out


# ------------------------------------------------------------------------------------- valid requests


@pytest.mark.req("R-WIRE-3")
@pytest.mark.parametrize(
    ("line", "method", "params", "rid"),
    [
        (b'{"jsonrpc":"2.0","method":"status","id":1}', "status", None, 1),
        (b'{"jsonrpc":"2.0","method":"status","params":{},"id":2}', "status", {}, 2),
        (b'{"jsonrpc":"2.0","method":"status","params":[],"id":"a"}', "status", [], "a"),
        (
            b'{"jsonrpc":"2.0","method":"x","params":[1,{"b":2}],"id":"zc-out-0"}',
            "x",
            [1, {"b": 2}],
            "zc-out-0",
        ),
        (b'{"jsonrpc":"2.0","method":"x","params":{"a":null},"id":null}', "x", {"a": None}, None),
        (b'{"jsonrpc":"2.0","method":"x","id":1.5}', "x", None, ExactId("1.5")),
        (b'{"jsonrpc":"2.0","method":"x","id":-7}', "x", None, -7),
        (b'{"jsonrpc":"2.0","method":"x","id":0}', "x", None, 0),
        (b'{"jsonrpc":"2.0","method":"x","id":""}', "x", None, ""),
        (
            b'{"id":9,"params":{"protocolVersion":1},"method":"initialize","jsonrpc":"2.0"}',
            "initialize",
            {"protocolVersion": 1},
            9,
        ),
        (b'  {"jsonrpc":"2.0","method":"x","id":1}  ', "x", None, 1),
        (b'{"jsonrpc":"2.0","method":"","id":1}', "", None, 1),
        (b'{"jsonrpc":"2.0","method":"x","id":1,"extra":true}', "x", None, 1),
    ],
)
def test_valid_request(line: bytes, method: str, params: Any, rid: Any) -> None:
    out = parse(line)
    assert isinstance(out, Request)
    assert out.method == method
    assert out.params == params
    assert out.id == rid
    assert type(out.id) is type(rid)
    assert not out.is_notification


@pytest.mark.req("R-WIRE-3")
def test_explicit_null_id_is_a_request_not_a_notification() -> None:
    out = parse(b'{"jsonrpc":"2.0","method":"status","id":null}')
    assert isinstance(out, Request)
    assert out.id is None
    assert out.id is not NO_ID
    assert not out.is_notification


@pytest.mark.req("R-WIRE-3")
@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc":"2.0","method":"status"}',
        b'{"jsonrpc":"2.0","method":"status","params":{}}',
        b'{"jsonrpc":"2.0","method":"session/update","params":[1]}',
    ],
)
def test_notification(line: bytes) -> None:
    out = parse(line)
    assert isinstance(out, Request)
    assert out.id is NO_ID
    assert out.is_notification


@pytest.mark.req("R-WIRE-3")
def test_no_id_repr_is_readable() -> None:
    assert repr(NO_ID) == "NO_ID"


# ---------------------------------------------------------------------------------------- parse errors


@pytest.mark.req("R-WIRE-3")
@pytest.mark.parametrize(
    "line",
    [
        b"{",
        b'{"jsonrpc":"2.0","method":"status","id":1',
        b"not json",
        b'{"jsonrpc":"2.0","method":"status","id":1}}',
        b"{'jsonrpc':'2.0'}",
        b'{"jsonrpc":"2.0","method":"x","id":NaN}',
        b'{"jsonrpc":"2.0","method":"x","id":1e400}',
        b'{"jsonrpc":"2.0","method":"\xff","id":1}',  # invalid UTF-8
        b'{"jsonrpc":"2.0","method":"\xc3","id":1}',  # truncated UTF-8 sequence
        b'{"jsonrpc":"2.0","method":"\\ud800","id":1}',  # lone surrogate escape
        b"\xef\xbb\xbf{}",  # BOM
        b"",
        b"[" * 5000,
    ],
    ids=lambda b: repr(b[:40]),
)
def test_invalid_json_or_utf8_is_a_parse_error_with_null_id(line: bytes) -> None:
    assert_reject(line, PARSE_ERROR, None)


@pytest.mark.req("R-WIRE-3")
def test_parse_error_message_does_not_echo_the_frame() -> None:
    out = reject(b'{"secret":"hunter2"')
    assert "hunter2" not in orjson.dumps(out.error.to_error()).decode()


# -------------------------------------------------------------------------------- malformed requests


@pytest.mark.req("R-WIRE-3")
@pytest.mark.parametrize(
    ("line", "rid"),
    [
        # jsonrpc wrong or missing: answered under the frame's own id when that id is valid
        (b'{"jsonrpc":"1.0","method":"status","id":5}', 5),
        (b'{"method":"status","id":"q"}', "q"),
        (b'{"jsonrpc":2.0,"method":"status","id":6}', 6),
        (b'{"jsonrpc":"2.0 ","method":"status","id":7}', 7),
        (b'{"jsonrpc":null,"method":"status","id":null}', None),
        (b'{"jsonrpc":"1.0","method":"status"}', None),
        # params present but not an object/array
        (b'{"jsonrpc":"2.0","method":"status","params":true,"id":8}', 8),
        (b'{"jsonrpc":"2.0","method":"status","params":null,"id":9}', 9),
        (b'{"jsonrpc":"2.0","method":"status","params":null,"id":"s"}', "s"),
        (b'{"jsonrpc":"2.0","method":"status","params":null}', None),
        (b'{"jsonrpc":"2.0","method":"status","params":true}', None),
        (b'{"jsonrpc":"2.0","method":"status","params":1,"id":10}', 10),
        (b'{"jsonrpc":"2.0","method":"status","params":"a","id":11}', 11),
        (b'{"jsonrpc":"2.0","method":"status","params":1.5,"id":1.25}', ExactId("1.25")),
        # invalid id: answered with id null
        (b'{"jsonrpc":"2.0","method":"status","id":true}', None),
        (b'{"jsonrpc":"2.0","method":"status","id":false}', None),
        (b'{"jsonrpc":"2.0","method":"status","id":{}}', None),
        (b'{"jsonrpc":"2.0","method":"status","id":[1]}', None),
        (b'{"jsonrpc":"1.0","method":"status","id":true}', None),
        (b'{"jsonrpc":"2.0","method":"status","params":null,"id":[]}', None),
    ],
)
def test_malformed_request(line: bytes, rid: Any) -> None:
    assert_reject(line, INVALID_REQUEST, rid)


# ----------------------------------------------------------------------------- direction-ambiguous


@pytest.mark.req("R-WIRE-3")
@pytest.mark.parametrize(
    "line",
    [
        b"null",
        b"[]",
        b'[{"jsonrpc":"2.0","method":"status","id":1}]',  # batches are not supported
        b"1",
        b'"str"',
        b"true",
        b"{}",
        b'{"jsonrpc":"2.0"}',
        b'{"jsonrpc":"2.0","id":3}',
        b'{"jsonrpc":"2.0","id":3,"params":{}}',
        b'{"jsonrpc":"2.0","method":null,"id":4}',
        b'{"jsonrpc":"2.0","method":1,"id":4}',
        b'{"jsonrpc":"2.0","method":["status"],"id":4}',
        b'{"jsonrpc":"2.0","method":{},"id":4}',
        b'{"jsonrpc":"2.0","method":"status","result":1,"id":4}',
        b'{"jsonrpc":"2.0","method":"status","result":null,"id":4}',
        b'{"jsonrpc":"2.0","method":"status","error":{"code":1,"message":"m"},"id":4}',
        b'{"jsonrpc":"2.0","method":null,"result":1,"id":4}',
        b'{"jsonrpc":"1.0","method":null}',
    ],
)
def test_direction_ambiguous_is_invalid_request_with_null_id(line: bytes) -> None:
    assert_reject(line, INVALID_REQUEST, None)


# -------------------------------------------------------------------------------------- responses


@pytest.mark.req("R-BIDI-3")
@pytest.mark.parametrize(
    ("line", "rid", "result", "error"),
    [
        (
            b'{"jsonrpc":"2.0","result":{"action":"accept","content":{"answer":"yes"}},"id":"zc-out-0"}',
            "zc-out-0",
            {"action": "accept", "content": {"answer": "yes"}},
            None,
        ),
        (b'{"jsonrpc":"2.0","result":null,"id":"zc-out-1"}', "zc-out-1", None, None),
        (b'{"jsonrpc":"2.0","result":0,"id":3}', 3, 0, None),
        (b'{"jsonrpc":"2.0","result":[],"id":null}', None, [], None),
        (
            b'{"jsonrpc":"2.0","error":{"code":-1,"message":"no"},"id":"zc-out-2"}',
            "zc-out-2",
            None,
            {"code": -1, "message": "no"},
        ),
        (
            b'{"jsonrpc":"2.0","error":{"code":5,"message":"","data":null},"id":1.5}',
            1.5,
            None,
            {"code": 5, "message": "", "data": None},
        ),
        (
            b'{"jsonrpc":"2.0","error":{"code":5,"message":"m","data":[1]},"id":null}',
            None,
            None,
            {"code": 5, "message": "m", "data": [1]},
        ),
    ],
)
def test_valid_response(line: bytes, rid: Any, result: Any, error: Any) -> None:
    out = parse(line)
    assert isinstance(out, Response)
    assert out.id == rid
    assert type(out.id) is type(rid)
    assert out.result == result
    assert out.error == error


@pytest.mark.req("R-BIDI-3")
def test_explicit_null_result_is_a_success_not_an_error() -> None:
    out = parse(b'{"jsonrpc":"2.0","result":null,"id":"zc-out-0"}')
    assert isinstance(out, Response)
    assert out.error is None
    assert out.result is None


MALFORMED_RESPONSES = [
    b'{"jsonrpc":"2.0","result":1}',  # no id
    b'{"jsonrpc":"2.0","error":{"code":1,"message":"m"}}',  # no id
    b'{"jsonrpc":"2.0","result":1,"id":true}',  # bool id
    b'{"jsonrpc":"2.0","result":1,"id":{"a":1}}',  # object id
    b'{"jsonrpc":"2.0","result":1,"id":[1]}',  # array id
    b'{"jsonrpc":"2.0","result":1,"error":{"code":1,"message":"m"},"id":1}',  # both
    b'{"jsonrpc":"2.0","result":null,"error":null,"id":1}',  # both (null)
    b'{"jsonrpc":"2.0","result":1,"params":{},"id":1}',  # params on a response
    b'{"jsonrpc":"2.0","error":{"code":1,"message":"m"},"params":[],"id":1}',
    b'{"jsonrpc":"2.0","error":"boom","id":1}',  # error not an object
    b'{"jsonrpc":"2.0","error":null,"id":1}',
    b'{"jsonrpc":"2.0","error":[1,"m"],"id":1}',
    b'{"jsonrpc":"2.0","error":{"message":"m"},"id":1}',  # no code
    b'{"jsonrpc":"2.0","error":{"code":"1","message":"m"},"id":1}',  # code a string
    b'{"jsonrpc":"2.0","error":{"code":1.5,"message":"m"},"id":1}',  # code a float
    b'{"jsonrpc":"2.0","error":{"code":true,"message":"m"},"id":1}',  # code a bool
    b'{"jsonrpc":"2.0","error":{"code":null,"message":"m"},"id":1}',
    b'{"jsonrpc":"2.0","error":{"code":1},"id":1}',  # no message
    b'{"jsonrpc":"2.0","error":{"code":1,"message":7},"id":1}',  # message not a string
    b'{"jsonrpc":"2.0","error":{"code":1,"message":null},"id":1}',
    b'{"jsonrpc":"1.0","result":1,"id":1}',  # wrong version
    b'{"result":1,"id":1}',  # no version
    b'{"jsonrpc":2,"error":{"code":1,"message":"m"},"id":1}',
]


@pytest.mark.req("R-WIRE-3")
@pytest.mark.parametrize("line", MALFORMED_RESPONSES, ids=lambda b: b.decode())
def test_malformed_response_is_dropped_never_answered(line: bytes) -> None:
    assert parse(line) is None


@pytest.mark.req("R-WIRE-3")
def test_at_least_eight_malformed_response_shapes() -> None:
    assert len(MALFORMED_RESPONSES) >= 8


# ----------------------------------------------------------------------------------------- ids


@pytest.mark.req("R-WIRE-3")
@pytest.mark.parametrize(
    ("value", "ok"),
    [
        (None, True),
        ("", True),
        ("a", True),
        (0, True),
        (-1, True),
        (2**63, True),
        (1.5, True),
        (True, False),
        (False, False),
        ({}, False),
        ([], False),
        (b"a", False),
        (NO_ID, False),
    ],
)
def test_is_valid_id(value: object, ok: bool) -> None:
    assert is_valid_id(value) is ok


# -------------------------------------------------------------------------------------- encoders


def decode(frame: bytes) -> dict[str, Any]:
    assert b"\n" not in frame  # the transport appends the newline; a frame never contains one
    obj = orjson.loads(frame)
    assert obj["jsonrpc"] == "2.0"
    return obj


@pytest.mark.req("R-WIRE-1")
@pytest.mark.parametrize("rid", [1, "a", None, 1.5, "zc-out-0", "line\nbreak"])
def test_encode_result(rid: Any) -> None:
    obj = decode(encode_result(rid, {"x": [1, "y\nz"]}))
    assert obj == {"jsonrpc": "2.0", "id": rid, "result": {"x": [1, "y\nz"]}}


@pytest.mark.req("R-BIDI-3")
def test_encode_null_result_keeps_the_result_key() -> None:
    obj = decode(encode_result(1, None))
    assert "result" in obj
    assert obj["result"] is None
    assert "error" not in obj


@pytest.mark.req("R-ERR")
def test_encode_error_shape() -> None:
    obj = decode(encode_error(4, MethodNotFound()))
    assert set(obj) == {"jsonrpc", "id", "error"}
    assert obj["id"] == 4
    err = obj["error"]
    assert set(err) == {"code", "message", "data"}
    assert err["code"] == -32601
    assert isinstance(err["message"], str)
    assert err["message"]
    assert err["data"]["kind"] == "method_not_found"


@pytest.mark.req("R-ERR")
def test_encode_error_with_kind_and_context() -> None:
    err = decode(encode_error(None, InvalidRequest(kind="frame_too_large", limit=8388608)))["error"]
    assert err["code"] == -32600
    assert err["data"] == {"kind": "frame_too_large", "limit": 8388608}
    err = decode(encode_error(7, VersionMismatch(supported=[1], requested=2)))["error"]
    assert err["code"] == -32011
    assert err["data"] == {"kind": "version_mismatch", "supported": [1], "requested": 2}


@pytest.mark.req("R-WIRE-5")
def test_encode_notification_has_no_id() -> None:
    obj = decode(encode_notification("session/update", {"sessionId": "s", "type": "agent_message_chunk"}))
    assert "id" not in obj
    assert obj["method"] == "session/update"
    out = parse(encode_notification("session/update", {"a": 1}))
    assert isinstance(out, Request)
    assert out.is_notification


@pytest.mark.req("R-BIDI-2")
def test_encode_request_round_trips_through_parse() -> None:
    line = encode_request("zc-out-0", "elicitation/create", {"sessionId": "s", "mode": "form"})
    assert decode(line)["id"] == "zc-out-0"
    out = parse(line)
    assert out == Request("elicitation/create", {"sessionId": "s", "mode": "form"}, "zc-out-0")


@pytest.mark.req("R-WIRE-3")
def test_encoders_accept_non_string_keys() -> None:
    assert decode(encode_result(1, {1: "a"}))["result"] == {"1": "a"}


@pytest.mark.req("R-WIRE-3")
@pytest.mark.parametrize(
    "line",
    [
        b"{",
        b"[]",
        b'{"jsonrpc":"2.0","method":"status","params":null,"id":9}',
        b'{"jsonrpc":"2.0","method":null,"id":4}',
        b'{"jsonrpc":"1.0","method":"status","id":"x"}',
    ],
)
def test_a_reject_encodes_to_a_well_formed_response(line: bytes) -> None:
    # Whatever the daemon answers must itself be a valid response frame for the peer.
    r = reject(line)
    answer = encode_error(r.id, r.error)
    parsed = parse(answer)
    assert isinstance(parsed, Response)
    assert parsed.id == r.id
    assert parsed.error is not None
    assert parsed.error["code"] == r.error.code


@pytest.mark.req("R-SEC-6")
@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc":"1.0","method":"status","params":{"authToken":"zc_SECRET"},"id":1}',
        b'{"jsonrpc":"2.0","method":"status","params":"zc_SECRET","id":1}',
        b'{"jsonrpc":"2.0","method":"zc_SECRET","result":1,"id":1}',
        b'{"jsonrpc":"2.0","method":"status","id":{"zc_SECRET":1}}',
        b'{"authToken":"zc_SECRET"',
        b'["zc_SECRET"]',
    ],
)
def test_reject_never_echoes_frame_contents(line: bytes) -> None:
    r = reject(line)
    assert b"zc_SECRET" not in encode_error(r.id, r.error)
    assert "zc_SECRET" not in str(r.error)


@pytest.mark.req("R-ERR")
def test_parse_error_class() -> None:
    r = reject(b"{")
    assert isinstance(r.error, ParseError)
