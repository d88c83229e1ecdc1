"""`envelope.classify`'s fast branch (`request_fields`) agrees with its general path (`_classify`) (R-WIRE-3).

The fast branch either declines a frame (None) or returns exactly what the general path's `Request` carries.
`Connection.receive` runs admitted requests on its fast branch alone, so this is what keeps the wire the same.
"""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rpc.core import envelope
from rpc.core.envelope import ExactId, Reject, Request, classify, encode_error, request_fields

SETTINGS = settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])

text = st.text(st.characters(codec="utf-8"), max_size=12)
ints = st.integers(min_value=-(2**63), max_value=2**64 - 1)  # orjson's int range (u64 at the top)
big_ints = st.integers(min_value=2**64, max_value=2**80) | st.integers(min_value=-(2**80), max_value=-(2**63) - 1)
floats = st.floats(allow_nan=False, allow_infinity=False)
scalars = st.none() | st.booleans() | ints | floats | text
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(text, children, max_size=3),
    max_leaves=8,
)
# Every JSON type, with the usual request values drawn often enough to reach the fast branch.
ids = st.none() | st.booleans() | ints | big_ints | floats | text | json_values
params = st.dictionaries(text, json_values, max_size=3) | st.lists(json_values, max_size=3) | json_values
versions = st.just("2.0") | st.sampled_from(["2", "1.0", "2.0 ", 2.0, 2]) | json_values
methods = st.sampled_from(["status", "initialize", "session/new", ""]) | text | json_values
ENVELOPE_KEYS = ("jsonrpc", "method", "id", "params", "result", "error")


@st.composite
def frames(draw: st.DrawFn) -> Any:
    """Any JSON value, mostly objects with any subset of the envelope keys plus, sometimes, other keys."""
    if draw(st.integers(0, 9)) == 0:
        return draw(json_values)
    present = draw(st.sets(st.sampled_from(ENVELOPE_KEYS)))
    value_of = {"jsonrpc": versions, "method": methods, "id": ids, "params": params}
    frame = {key: draw(value_of.get(key, json_values)) for key in ENVELOPE_KEYS if key in present}
    frame.update(draw(st.dictionaries(text.filter(lambda k: k not in ENVELOPE_KEYS), json_values, max_size=2)))
    return frame


def general(frame: Any, line: bytes) -> Any:
    return envelope._classify(frame, line)


def shape(out: Any) -> Any:
    """What goes on the wire for `out` (errors are exceptions, which compare by identity)."""
    return encode_error(out.id, out.error) if isinstance(out, Reject) else out


@pytest.mark.req("R-WIRE-3")
@SETTINGS
@given(frames())
@example({"jsonrpc": "2.0", "method": "status", "id": 1})
@example({"jsonrpc": "2.0", "method": "status", "id": 1, "params": {}})
@example({"jsonrpc": "2.0", "method": "status", "id": True})
@example({"jsonrpc": "2.0", "method": "status", "id": 1.5})
@example({"jsonrpc": "2.0", "method": "status", "id": 2**64 + 5})
@example({"jsonrpc": "2.0", "method": "status", "id": None, "params": None})
@example({"jsonrpc": "2.0", "method": "status", "params": {}})
@example({"jsonrpc": "2.0", "method": "status", "id": 1, "result": 1})
@example({"jsonrpc": "2.0", "method": "status", "id": 1, "x": 1})
@example(["jsonrpc", "method", "id"])
@example("jsonrpc")
def test_fast_branch_declines_or_equals_the_general_path(frame: Any) -> None:
    line = json.dumps(frame).encode()  # the stdlib writes integers beyond 64 bits too
    decoded = orjson.loads(line)  # the frame as the daemon sees it (such an integer becomes a float)
    fields = request_fields(decoded)
    expected = general(decoded, line)
    if fields is not None:
        assert isinstance(expected, Request)
        assert (type(fields[0]), type(fields[1]), type(fields[2])) == (
            type(expected.method),
            type(expected.params),
            type(expected.id),
        )
        assert Request(*fields) == expected
    assert shape(classify(decoded, line)) == shape(expected)


@pytest.mark.req("R-WIRE-3")
@SETTINGS
@given(
    st.sampled_from(["status", "session/new", ""]),
    st.none() | ints | text,
    st.none() | st.dictionaries(text, json_values, max_size=3) | st.lists(json_values, max_size=3),
)
def test_fast_branch_takes_every_plain_well_formed_request(method: str, rid: Any, params: Any) -> None:
    frame: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "id": rid}
    if params is not None:
        frame["params"] = params
    assert request_fields(frame) == (method, params, rid)  # not vacuous: the common frame is taken


def test_declined_frames_are_left_to_the_general_path() -> None:
    # A float id is kept exact (R-WIRE-3), a notification has no id: both are the general path's.
    line = b'{"jsonrpc":"2.0","method":"status","id":1.50}'
    assert request_fields(orjson.loads(line)) is None
    out = classify(orjson.loads(line), line)
    assert isinstance(out, Request) and type(out.id) is ExactId and out.id.text == "1.50"
    assert request_fields({"jsonrpc": "2.0", "method": "status"}) is None
