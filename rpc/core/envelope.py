"""Classify and validate frames, build response frames (R-WIRE-3, R-WIRE-4). Pure.

`parse()` turns one line into exactly one of:
  * `Request`  — well-formed request or notification (`id` is `NO_ID` for a notification);
  * `Response` — well-formed answer to one of the daemon's own requests;
  * `Reject`   — a frame that must be answered with an error and nothing else;
  * `None`     — a frame that must be dropped silently (malformed response-shaped frames: echoing
                 their id could complete an unrelated request in the opposite direction).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from enum import Enum
from typing import Any, Final

import orjson

from rpc.core.errors import InvalidRequest, ParseError, RpcError

__all__ = [
    "ID_TYPES",
    "NO_ID",
    "PARAMS_TYPES",
    "CallId",
    "ExactId",
    "Id",
    "Reject",
    "Request",
    "Response",
    "classify",
    "encode_error",
    "encode_notification",
    "encode_notifications",
    "encode_request",
    "encode_result",
    "exact_id",
    "is_valid_id",
    "parse",
    "request_fields",
]


class ExactId:
    """A numeric request id that orjson could only read as a float, kept as the peer wrote it (R-WIRE-3).

    Answers carry `text` verbatim (`18446744073709551621`, `1.5`, `-0.0`); the in-flight table compares and
    hashes by the exact `value`, so `1.5` and `1.50`, or `1.0` and the int `1`, are one id. Not a dataclass:
    orjson would encode one as an object instead of failing over to `_exact_text`.
    """

    __slots__ = ("text", "value")

    def __init__(self, text: str) -> None:
        self.text = text
        self.value = Decimal(text)

    def __repr__(self) -> str:
        return f"ExactId({self.text!r})"

    def __eq__(self, other: object) -> bool:
        if type(other) is ExactId:
            return self.value == other.value
        if type(other) is int:
            return self.value == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.value)  # equal to hash(n) for an integral value n, as __eq__ needs


Id = str | int | float | ExactId | None


class _NoId(Enum):
    """Marks a notification: distinct from an explicit `"id": null` (an enum, so `is NO_ID` narrows a type)."""

    NO_ID = 0

    def __repr__(self) -> str:
        return "NO_ID"


NO_ID: Final = _NoId.NO_ID
CallId = Id | _NoId  # a request's id, or NO_ID for a notification


@dataclass(slots=True)
class Request:
    method: str
    params: dict[str, Any] | list[Any] | None
    id: CallId

    @property
    def is_notification(self) -> bool:
        return self.id is NO_ID


@dataclass(slots=True)
class Response:
    id: Id
    result: Any
    error: dict[str, Any] | None


@dataclass(slots=True)
class Reject:
    """A frame answered with `error` under `id` (null unless the frame's own id was valid)."""

    error: RpcError
    id: Id = None


def is_valid_id(value: object) -> bool:
    # bool is an int subclass in Python but not a JSON number.
    return value is None or (type(value) in (str, int, float))


# A request id's JSON types as decoded (`type()`, so no bool); a float id goes through `exact_id`.
ID_TYPES: Final = (str, int, type(None))
MAX_NESTING: Final = 1024  # orjson refuses deeper documents (-32700)
PARAMS_TYPES: Final = (dict, list)


class _NumberText(str):
    """The source text of a JSON number (`exact_id` reads the id with these instead of int and float)."""

    __slots__ = ()


def exact_id(line: bytes, rid: float) -> ExactId | float:
    """The id of request frame `line`, which orjson decoded as the float `rid`, exactly as the peer wrote it.

    orjson reads an integer outside 64 bits as a float; the stdlib decoder hands over the number's text. This
    runs only for float ids, on frames orjson accepted, so nested at most `MAX_NESTING` deep.
    """
    try:
        frame = _read_numbers_as_text(line)
    except (ValueError, RecursionError):
        return rid
    text = frame.get("id") if type(frame) is dict else None
    if type(text) is not _NumberText:
        return rid
    return ExactId(str(text))


def _read_numbers_as_text(line: bytes) -> Any:
    try:
        return json.loads(line, parse_int=_NumberText, parse_float=_NumberText)
    except RecursionError:
        pass
    # Deeper than the recursion limit lets the stdlib decoder go (orjson allows 1024 levels): retry with
    # room for it (regression, found by the fuzz kit: such ids came back rounded).
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(limit + MAX_NESTING + 64)
    try:
        return json.loads(line, parse_int=_NumberText, parse_float=_NumberText)
    finally:
        sys.setrecursionlimit(limit)


def parse(line: bytes) -> Request | Response | Reject | None:
    try:
        frame = orjson.loads(line)
    except orjson.JSONDecodeError:
        return Reject(ParseError())
    return classify(frame, line)


def classify(frame: Any, line: bytes) -> Request | Response | Reject | None:
    """Classify one decoded JSON value (what `parse` does after decoding); `line` is its text, for `exact_id`.

    The one place that decides what a frame is: `request_fields`, its fast branch, takes the frame nearly every
    frame is, and `_classify` everything it declines (`tests/unit/rpc/test_envelope_fast_branch.py` proves that
    the two agree wherever the fast branch answers).
    """
    fields = request_fields(frame)
    return _classify(frame, line) if fields is None else Request(*fields)


def request_fields(frame: Any) -> tuple[str, dict[str, Any] | list[Any] | None, str | int | None] | None:
    """The fast branch of `classify`: `(method, params, id)` of a request with exactly `jsonrpc`, `method`, `id`
    and maybe `params`, all well-typed, as `classify`'s `Request` would carry them; None declines the frame."""
    try:  # subscripts, and a tuple rather than a `Request`: benchmarks/hotpath.py
        method, rid = frame["method"], frame["id"]
        if frame["jsonrpc"] == "2.0" and type(method) is str and type(rid) in ID_TYPES:
            size = len(frame)
            if size == 3:
                return method, None, rid
            if size == 4 and type(params := frame["params"]) in PARAMS_TYPES:
                return method, params, rid
    except (KeyError, TypeError):  # not an object, or a key missing
        pass
    return None


def _classify(frame: Any, line: bytes) -> Request | Response | Reject | None:
    if type(frame) is not dict:
        return Reject(InvalidRequest("Invalid request: a frame must be one JSON object (batches are not supported)"))
    method = frame.get("method")
    has_answer = "result" in frame or "error" in frame
    if "method" in frame:
        if type(method) is not str or has_answer:
            return Reject(InvalidRequest("Invalid request: ambiguous frame"))
        return _request(frame, method, line)
    if has_answer:
        return _response(frame)
    return Reject(InvalidRequest("Invalid request: a frame needs 'method', 'result' or 'error'"))


def _request(frame: dict[str, Any], method: str, line: bytes) -> Request | Reject:
    rid = frame.get("id", NO_ID)
    id_ok = rid is NO_ID or is_valid_id(rid)
    if type(rid) is float:
        rid = exact_id(line, rid)
    echo_id: Id = rid if id_ok and rid is not NO_ID else None
    if frame.get("jsonrpc") != "2.0":
        return Reject(InvalidRequest("Invalid request: 'jsonrpc' must be \"2.0\""), echo_id)
    if not id_ok:
        return Reject(InvalidRequest("Invalid request: 'id' must be a string, a number or null"))
    params = frame.get("params")
    if "params" in frame and type(params) not in (dict, list):
        return Reject(InvalidRequest("Invalid request: 'params' must be an object or an array"), echo_id)
    return Request(method, params, rid)


def _response(frame: dict[str, Any]) -> Response | None:
    if frame.get("jsonrpc") != "2.0" or "params" in frame or "id" not in frame:
        return None
    rid = frame["id"]
    if not is_valid_id(rid) or ("result" in frame) == ("error" in frame):
        return None
    if "error" in frame:
        error = frame["error"]
        if not (type(error) is dict and type(error.get("code")) is int and type(error.get("message")) is str):
            return None
        return Response(rid, None, error)
    return Response(rid, frame["result"], None)


def _dumps(message: dict[str, Any]) -> bytes:
    try:
        return orjson.dumps(message)
    except orjson.JSONEncodeError:
        return _dumps_non_str_keys(message)


def _dumps_non_str_keys(message: dict[str, Any]) -> bytes:
    # Non-string keys become JSON strings, an `ExactId` its text. Only after the plain encoding
    # failed: the option makes every dumps ~1.5x as slow.
    return orjson.dumps(message, default=_exact_text, option=orjson.OPT_NON_STR_KEYS)


def _exact_text(value: object) -> orjson.Fragment:
    if type(value) is ExactId:
        return orjson.Fragment(value.text)
    raise TypeError


def encode_result(rid: Id, result: Any) -> bytes:
    message = {"jsonrpc": "2.0", "id": rid, "result": result}
    try:  # _dumps inlined: this is the hot path
        return orjson.dumps(message)
    except orjson.JSONEncodeError:
        return _dumps_non_str_keys(message)


def encode_error(rid: Id, error: RpcError) -> bytes:
    return _dumps({"jsonrpc": "2.0", "id": rid, "error": error.to_error()})


def encode_notification(method: str, params: Any) -> bytes:
    return _dumps({"jsonrpc": "2.0", "method": method, "params": params})


def encode_notifications(method: str, params: Sequence[Any]) -> list[bytes]:
    """One notification frame per params, in order (a streamed batch of `session/update`s)."""
    messages = [{"jsonrpc": "2.0", "method": method, "params": p} for p in params]
    try:
        return [orjson.dumps(m) for m in messages]
    except orjson.JSONEncodeError:
        return [_dumps(m) for m in messages]


def encode_request(rid: str, method: str, params: Any) -> bytes:
    return _dumps({"jsonrpc": "2.0", "method": method, "params": params, "id": rid})
