"""Request ids come back exactly as sent (R-WIRE-3): `rpc.core.envelope.ExactId` and `exact_id`.

orjson reads an integer outside the 64-bit range as a float, so before these the daemon answered
`100000000000000000000000000076` with `1e+29`. A float id is now re-read from the frame's text and echoed
verbatim; 64-bit integers and strings keep the hot path untouched.
"""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest

from rpc.core.envelope import ExactId, Reject, Request, classify, encode_error, encode_result, exact_id, parse
from rpc.core.errors import InvalidRequest

BIG_IDS = [
    "18446744073709551621",  # 2**64 + 5: just past what orjson reads as an int
    "-100000000000000000000000",
    "100000000000000000000000000076",
    "-9223372036854775809",  # one below the smallest int64
    "9" * 300,  # within the double range, which bounds every number a frame may hold
]
FRACTIONAL_IDS = ["1.5", "1.50", "-0.0", "0.1", "1e2", "2.5E-3", "123456789012345678901234567890.5"]


def request(rid: str, method: str = "status") -> bytes:
    return b'{"jsonrpc":"2.0","method":"' + method.encode() + b'","id":' + rid.encode() + b"}"


@pytest.mark.req("R-WIRE-3")
@pytest.mark.parametrize("rid", BIG_IDS + FRACTIONAL_IDS)
def test_a_float_read_id_is_answered_with_its_exact_text(rid: str) -> None:
    out = parse(request(rid))
    assert isinstance(out, Request)
    assert type(out.id) is ExactId and out.id.text == rid
    assert encode_result(out.id, {"ok": True}) == b'{"jsonrpc":"2.0","id":' + rid.encode() + b',"result":{"ok":true}}'
    error = encode_error(out.id, InvalidRequest("x"))
    assert error.startswith(b'{"jsonrpc":"2.0","id":' + rid.encode() + b',"error":')


@pytest.mark.req("R-WIRE-3")
def test_big_integer_id_regression_no_longer_rounded_to_1e29() -> None:
    out = parse(request("100000000000000000000000000076"))
    assert isinstance(out, Request)
    answer = encode_result(out.id, None)
    assert b"1e+29" not in answer
    assert orjson.loads(answer)["id"] == 1e29  # what a float-reading client sees: still valid JSON
    assert json.loads(answer)["id"] == 100000000000000000000000000076


@pytest.mark.req("R-WIRE-3")
@pytest.mark.parametrize(
    ("rid", "value"),
    [("18446744073709551615", 2**64 - 1), ("-9223372036854775808", -(2**63)), ("0", 0), ("-0", 0)],
)
def test_64_bit_integers_stay_plain_ints(rid: str, value: int) -> None:
    out = parse(request(rid))
    assert isinstance(out, Request)
    assert type(out.id) is int and out.id == value


@pytest.mark.req("R-WIRE-3")
def test_the_duplicate_id_error_names_the_exact_id() -> None:
    rid = ExactId("18446744073709551621")
    frame = encode_error(None, InvalidRequest("Request id already in flight", kind="duplicate_id", id=rid))
    assert b'"data":{"kind":"duplicate_id","id":18446744073709551621}' in frame


@pytest.mark.req("R-WIRE-3")
@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc":"1.0","method":"status","id":18446744073709551621}',
        b'{"jsonrpc":"2.0","method":"status","params":null,"id":18446744073709551621}',
    ],
)
def test_a_malformed_request_is_refused_under_its_exact_id(line: bytes) -> None:
    out = parse(line)
    assert isinstance(out, Reject)
    assert encode_error(out.id, out.error).startswith(b'{"jsonrpc":"2.0","id":18446744073709551621,')


@pytest.mark.req("R-WIRE-3")
def test_exact_ids_compare_by_value() -> None:
    assert ExactId("1.5") == ExactId("1.50")
    assert hash(ExactId("1.5")) == hash(ExactId("1.50"))
    assert ExactId("1.0") == 1 and hash(ExactId("1.0")) == hash(1)
    assert 1 == ExactId("1.0")  # noqa: SIM300  (the reflected comparison is the point)
    assert ExactId("-0.0") == 0 and ExactId("1e2") == 100
    assert ExactId("18446744073709551621") == 2**64 + 5
    assert ExactId("18446744073709551621") != ExactId("18446744073709551622")
    assert ExactId("1.5") != "1.5"
    assert {1: "int"}.get(ExactId("1.0")) == "int"  # type: ignore[call-overload]
    assert repr(ExactId("1.5")) == "ExactId('1.5')"


@pytest.mark.req("R-WIRE-3")
def test_a_number_beyond_the_double_range_is_invalid_json() -> None:
    # Documented in docs/protocol.md: orjson refuses 1e400 anywhere in a frame, so the id cannot be read.
    out = parse(request("1e400"))
    assert isinstance(out, Reject) and out.error.code == -32700 and out.id is None


@pytest.mark.req("R-WIRE-3")
def test_exact_id_keeps_the_float_when_the_text_holds_no_number_id() -> None:
    assert exact_id(b"not json", 2.5) == 2.5
    assert exact_id(b'{"id":"2.5"}', 2.5) == 2.5  # not a number in the text: keep what orjson read


@pytest.mark.req("R-WIRE-3")
def test_only_float_ids_leave_the_fast_path() -> None:
    frame: dict[str, Any] = {"jsonrpc": "2.0", "method": "status", "id": 7}
    out = classify(frame, b"this text is never read for an int id")
    assert isinstance(out, Request) and out.id == 7 and type(out.id) is int
    out = classify({**frame, "id": "7"}, b"")
    assert isinstance(out, Request) and out.id == "7"


@pytest.mark.req("R-WIRE-3")
@pytest.mark.parametrize("depth", [1, 990, 1021])  # 1021 arrays inside params and the frame: orjson's last level
def test_regression_a_big_id_of_a_frame_nested_past_the_recursion_limit_is_exact(depth: int) -> None:
    """Found by the fuzz kit (benchmarks/fuzz.py): the stdlib re-read hit its recursion limit at ~990 levels and
    the id came back rounded (-1.0000000000000001e+23)."""
    line = b'{"jsonrpc":"2.0","method":"status","params":{"x":%s},"id":-100000000000000000000003}' % (
        b"[" * depth + b"]" * depth
    )
    frame = parse(line)
    assert isinstance(frame, Request)
    assert frame.id == ExactId("-100000000000000000000003")
    assert encode_result(frame.id, 1) == b'{"jsonrpc":"2.0","id":-100000000000000000000003,"result":1}'
