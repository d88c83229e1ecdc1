"""Property and fuzz tests of the pure wire layer (R-WIRE-1, R-WIRE-2, R-WIRE-3) with hypothesis."""

from __future__ import annotations

import itertools
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rpc.core.envelope import NO_ID, ExactId, Reject, Request, Response, encode_error, encode_result, is_valid_id, parse
from rpc.transports.framing import FrameTooLarge, LineSplitter

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ---------------------------------------------------------------------------------------- strategies

text = st.text(st.characters(codec="utf-8"), max_size=20)
ints = st.integers(min_value=-(2**63), max_value=2**63 - 1)
floats = st.floats(allow_nan=False, allow_infinity=False)
scalars = st.none() | st.booleans() | ints | floats | text
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(text, children, max_size=4),
    max_leaves=20,
)
valid_ids = st.none() | text | ints | floats
invalid_ids = st.booleans() | st.lists(scalars, max_size=2) | st.dictionaries(text, scalars, max_size=2)
ENVELOPE_KEYS = ["jsonrpc", "method", "params", "id", "result", "error"]
keys = st.sampled_from(ENVELOPE_KEYS) | text
jsonrpc_values = st.just("2.0") | json_values
error_objects = st.fixed_dictionaries({"code": ints, "message": text}, optional={"data": json_values})


def dumps(value: Any) -> bytes:
    return orjson.dumps(value)


def same_id(a: Any, b: Any) -> bool:
    if type(a) is ExactId:  # a float id of a request is kept as its text (R-WIRE-3)
        return type(b) is float and a.text == dumps(b).decode()
    return type(a) is type(b) and a == b


# ------------------------------------------------------------------------------------------- parse


@pytest.mark.req("R-WIRE-3")
@SETTINGS
@given(st.binary(max_size=200))
def test_parse_never_raises_on_arbitrary_bytes(line: bytes) -> None:
    out = parse(line)
    assert out is None or isinstance(out, Request | Response | Reject)


@pytest.mark.req("R-WIRE-3")
@SETTINGS
@given(json_values)
def test_parse_never_raises_on_arbitrary_json(value: Any) -> None:
    out = parse(dumps(value))
    assert out is None or isinstance(out, Request | Response | Reject)
    if isinstance(out, Reject):
        # answers are never parse errors for valid JSON, and carry a valid id
        assert out.error.code == -32600
        assert is_valid_id(out.id)


@pytest.mark.req("R-WIRE-3")
@SETTINGS
@given(st.dictionaries(keys, json_values, max_size=7))
def test_parse_never_raises_on_arbitrary_objects(frame: dict[str, Any]) -> None:
    out = parse(dumps(frame))
    if isinstance(out, Reject):
        assert out.error.code == -32600
        # the id echoed is the frame's own valid id or null, never anything else
        assert out.id is None or ("id" in frame and same_id(out.id, frame["id"]))
    if out is None:
        assert "method" not in frame


@st.composite
def request_shaped(draw: st.DrawFn, *, with_id: st.SearchStrategy[Any] | None) -> dict[str, Any]:
    frame: dict[str, Any] = draw(
        st.dictionaries(text.filter(lambda k: k not in ENVELOPE_KEYS), json_values, max_size=2)
    )
    frame["method"] = draw(text)
    if draw(st.booleans()):
        frame["jsonrpc"] = draw(jsonrpc_values)
    if draw(st.booleans()):
        frame["params"] = draw(json_values)
    if with_id is not None:
        frame["id"] = draw(with_id)
    return frame


@pytest.mark.req("R-WIRE-3")
@SETTINGS
@given(request_shaped(with_id=valid_ids))
def test_request_shaped_frame_with_valid_id_is_request_or_reject_with_that_id(frame: dict[str, Any]) -> None:
    out = parse(dumps(frame))
    assert isinstance(out, Request | Reject)
    assert same_id(out.id, frame["id"])
    if isinstance(out, Request):
        assert out.method == frame["method"]
        assert frame.get("jsonrpc") == "2.0"
        assert out.params == frame.get("params")
    else:
        assert out.error.code == -32600
        params_ok = "params" not in frame or type(frame["params"]) in (dict, list)
        assert frame.get("jsonrpc") != "2.0" or not params_ok


@pytest.mark.req("R-WIRE-3")
@SETTINGS
@given(request_shaped(with_id=None))
def test_request_shaped_notification_is_notification_or_reject_with_null_id(frame: dict[str, Any]) -> None:
    out = parse(dumps(frame))
    assert isinstance(out, Request | Reject)
    if isinstance(out, Request):
        assert out.id is NO_ID
        assert out.is_notification
    else:
        assert out.id is None
        assert out.error.code == -32600


@pytest.mark.req("R-WIRE-3")
@SETTINGS
@given(request_shaped(with_id=invalid_ids))
def test_request_shaped_frame_with_invalid_id_is_rejected_with_null_id(frame: dict[str, Any]) -> None:
    out = parse(dumps(frame))
    assert isinstance(out, Reject)
    assert out.id is None
    assert out.error.code == -32600


@pytest.mark.req("R-WIRE-3")
@SETTINGS
@given(request_shaped(with_id=valid_ids), st.booleans())
def test_well_formed_request_always_parses(frame: dict[str, Any], with_params: bool) -> None:
    frame["jsonrpc"] = "2.0"
    if with_params:
        frame["params"] = frame.get("params") if type(frame.get("params")) in (dict, list) else {}
    else:
        frame.pop("params", None)
    out = parse(dumps(frame))
    assert isinstance(out, Request)
    assert same_id(out.id, frame["id"])


@st.composite
def response_shaped(draw: st.DrawFn) -> dict[str, Any]:
    frame: dict[str, Any] = draw(
        st.dictionaries(
            st.sampled_from(["jsonrpc", "params", "id"]) | text.filter(lambda k: k not in ENVELOPE_KEYS),
            json_values,
            max_size=4,
        )
    )
    if draw(st.booleans()):
        frame["jsonrpc"] = "2.0"
    which = draw(st.sampled_from(["result", "error", "both"]))
    if which in ("result", "both"):
        frame["result"] = draw(json_values)
    if which in ("error", "both"):
        frame["error"] = draw(error_objects | json_values)
    if draw(st.booleans()):
        frame["id"] = draw(valid_ids | invalid_ids)
    return frame


@pytest.mark.req("R-WIRE-3")
@SETTINGS
@given(response_shaped())
def test_response_shaped_frame_is_never_answered(frame: dict[str, Any]) -> None:
    out = parse(dumps(frame))
    assert not isinstance(out, Reject)
    assert out is None or isinstance(out, Response)
    if isinstance(out, Response):
        assert frame["jsonrpc"] == "2.0"
        assert "params" not in frame
        assert same_id(out.id, frame["id"])
        assert ("result" in frame) != ("error" in frame)


@pytest.mark.req("R-WIRE-3")
@SETTINGS
@given(valid_ids, json_values | error_objects, st.booleans())
def test_well_formed_response_always_parses(rid: Any, payload: Any, as_error: bool) -> None:
    if as_error and not isinstance(payload, dict):
        payload = {"code": 1, "message": "m"}
    if as_error and not (type(payload.get("code")) is int and type(payload.get("message")) is str):
        payload = {"code": 1, "message": "m"}
    frame = {"jsonrpc": "2.0", "id": rid, ("error" if as_error else "result"): payload}
    out = parse(dumps(frame))
    assert isinstance(out, Response)
    assert same_id(out.id, rid)
    if as_error:
        assert out.error == payload
        assert out.result is None
    else:
        assert out.result == payload
        assert out.error is None


@pytest.mark.req("R-WIRE-3")
@SETTINGS
@given(valid_ids, json_values)
def test_encoded_results_and_rejects_parse_back_as_responses(rid: Any, result: Any) -> None:
    out = parse(encode_result(rid, result))
    assert isinstance(out, Response)
    assert same_id(out.id, rid)
    assert out.result == result


@pytest.mark.req("R-WIRE-3")
@SETTINGS
@given(st.binary(max_size=100) | json_values.map(dumps))
def test_every_reject_encodes_to_a_parseable_error_response(line: bytes) -> None:
    out = parse(line)
    if isinstance(out, Reject):
        back = parse(encode_error(out.id, out.error))
        assert isinstance(back, Response)
        assert back.error is not None
        assert back.error["code"] == out.error.code
        assert isinstance(back.error["data"]["kind"], str)


# ------------------------------------------------------------------------------------------ framing


def reference_split(stream: bytes, limit: int) -> tuple[list[bytes], bool]:
    """What a correct splitter yields for the whole stream: (lines before any oversize frame, oversize?)."""
    *complete, tail = stream.split(b"\n")
    lines: list[bytes] = []
    for raw in complete:
        if len(raw) + 1 > limit:
            return lines, True
        line = raw[:-1] if raw.endswith(b"\r") else raw
        if line and not line.isspace():
            lines.append(line)
    return lines, len(tail) >= limit


def chunked(stream: bytes, cuts: list[int]) -> list[bytes]:
    bounds = [0, *sorted({c % (len(stream) + 1) for c in cuts}), len(stream)]
    return [stream[a:b] for a, b in itertools.pairwise(bounds)]


stream_bytes = st.lists(
    st.sampled_from([b"\n", b"\r", b"\r\n", b" ", b"x", b"{}", b"\xff", b"abc", b"\t"]) | st.binary(max_size=8),
    max_size=40,
).map(b"".join)


@pytest.mark.req("R-WIRE-2")
@SETTINGS
@given(st.lists(st.binary(max_size=64), max_size=20), st.integers(min_value=1, max_value=64))
def test_feed_never_raises_anything_but_frame_too_large(chunks: list[bytes], limit: int) -> None:
    s = LineSplitter(limit)
    try:
        for chunk in chunks:
            for line in s.feed(chunk):
                assert type(line) is bytes
                assert b"\n" not in line
                assert line
                assert not line.isspace()
                assert len(line) < limit
            assert 0 <= s.buffered < limit
    except FrameTooLarge:
        pass


@pytest.mark.req("R-WIRE-1")
@SETTINGS
@given(
    stream_bytes,
    st.lists(st.integers(min_value=0, max_value=10_000), max_size=8),
    st.integers(min_value=1, max_value=40),
)
def test_output_does_not_depend_on_how_the_stream_is_chunked(stream: bytes, cuts: list[int], limit: int) -> None:
    expected_lines, expected_oversize = reference_split(stream, limit)
    s = LineSplitter(limit)
    got: list[bytes] = []
    oversize = False
    try:
        for chunk in chunked(stream, cuts):
            got.extend(s.feed(chunk))
    except FrameTooLarge:
        oversize = True
    assert oversize == expected_oversize
    if oversize:
        # lines returned before the refusal are a prefix of what the stream held (see test_framing for the
        # stronger rule that none of them may be lost)
        assert got == expected_lines[: len(got)]
    else:
        assert got == expected_lines
        tail = stream.rsplit(b"\n", 1)[-1]
        assert s.buffered == len(tail)


@pytest.mark.req("R-WIRE-1")
@SETTINGS
@given(
    st.lists(json_values, max_size=6),
    st.lists(st.integers(min_value=0, max_value=10_000), max_size=8),
    st.booleans(),
)
def test_json_messages_survive_any_chunking(values: list[Any], cuts: list[int], crlf: bool) -> None:
    ending = b"\r\n" if crlf else b"\n"
    stream = b"".join(dumps(v) + ending for v in values)
    s = LineSplitter(1 << 20)
    got: list[bytes] = []
    for chunk in chunked(stream, cuts):
        got.extend(s.feed(chunk))
    assert [orjson.loads(line) for line in got] == values
    assert s.buffered == 0
