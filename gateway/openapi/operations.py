"""One OpenAPI operation and the statuses it can answer: the part of the document no model holds.

Every operation lists the middleware's 400 (the Host guard, a malformed `Content-Length`) and 413 (the 64 KiB body
limit), which stand before every route; one with a bearer token adds 401, 403 and 503 (the token is resolved in
the database); the route adds its own (`s404="…"`). Errors answer with the `ErrorAnswer` schema.
"""

from __future__ import annotations

from typing import Any

from rpc.contract.json_schema import REF, JsonSchema

__all__ = [
    "BUSY",
    "DOMAIN_400",
    "INVALID",
    "LIMIT",
    "NOT_FOUND",
    "NOT_OWNED",
    "TEXT_BOUND",
    "answer",
    "operation",
    "request_body",
]

_ERROR = {"$ref": REF.format(name="ErrorAnswer")}
_HOST = "Host not allowed (the DNS-rebinding guard) or a malformed Content-Length (invalid_request)"
_STATUS_TEXT = {
    401: "Missing, malformed, unknown or revoked bearer token (auth_required)",
    403: "Missing grant (forbidden, `grant`)",
    413: "Request body over 64 KiB (limit_exceeded, name body); counted in bytes of JSON",
    503: "The database cannot be reached to check the token or do the work (storage_unavailable)",
}
_BEARER: list[dict[str, list[str]]] = [{"bearer": []}]

# The descriptions several operations share.
INVALID = "invalid_params: a field fails its params model (`errors` names the fields), or a body that is not an object"
TEXT_BOUND = (
    "The text is at most `[limits] max_prompt_chars` characters (400 invalid_params beyond), and the whole body "
    "at most 64 KiB of JSON (413)"
)
DOMAIN_400 = f"{INVALID}; or a value the domain refuses (unknown property, wrong type, too long a prompt)"
BUSY = "A turn is already running on the session (session_busy)"
NOT_FOUND = "Unknown, killed or deleted session, or a closed chat session (session_not_found)"
NOT_OWNED = "Missing grant (forbidden) or another principal's session (session_not_owned)"
LIMIT = "Live-session limit reached (session_limit)"


def answer(description: str, schema: JsonSchema, status: int = 200) -> dict[str, Any]:
    """A JSON answer of `schema` with `status`, as `operation` takes it."""
    return {str(status): {"description": description, "content": {"application/json": {"schema": schema}}}}


def request_body(schema: JsonSchema, required: bool = True, description: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"required": required, "content": {"application/json": {"schema": schema}}}
    if description:
        body["description"] = description
    return body


def operation(
    summary: str,
    ok: dict[str, Any],
    *,
    bearer: bool,
    parameters: list[JsonSchema] | None = None,
    body: dict[str, Any] | None = None,
    invalid: str | None = INVALID,
    **specific: str,
) -> dict[str, Any]:
    """One operation: `summary`, its security (the bearer token or none), `parameters`, the request `body`, and
    `ok` followed by the error statuses (`_responses`, given `bearer`, `invalid` and `specific`)."""
    op: dict[str, Any] = {"summary": summary, "security": _BEARER if bearer else []}
    if parameters is not None:
        op["parameters"] = parameters
    if body is not None:
        op["requestBody"] = body
    op["responses"] = _responses(ok, bearer=bearer, invalid=invalid, **specific)
    return op


def _responses(ok: dict[str, Any], *, bearer: bool, invalid: str | None, **specific: str) -> dict[str, Any]:
    """`ok`, then every error status the operation can answer: the middleware's 400 (Host guard) and 413 on
    every operation, 401/403/503 with a bearer token, and `specific` (`s404="…"`) as the route adds."""
    out = dict(ok)
    out |= _error(400, f"{_HOST}; or {invalid}" if invalid else _HOST)
    texts = {status: text for status, text in _STATUS_TEXT.items() if bearer or status == 413}
    texts |= {int(key.removeprefix("s")): text for key, text in specific.items()}
    for status in sorted(texts):
        out |= _error(status, texts[status])
    return out


def _error(status: int, description: str) -> dict[str, Any]:
    return {str(status): {"description": description, "content": {"application/json": {"schema": _ERROR}}}}
