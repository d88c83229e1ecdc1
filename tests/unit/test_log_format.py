"""`--log-format json` (app/log_format.py): one JSON object per record, the text format's message, the extras."""

from __future__ import annotations

import logging
import sys

import orjson
import pytest

from app.log_format import JsonFormatter


def record(msg: str, *args: object, exc: bool = False, **extra: object) -> logging.LogRecord:
    exc_info = None
    if exc:
        try:
            raise ValueError("inner")
        except ValueError:
            exc_info = sys.exc_info()
    rec = logging.LogRecord("zeroclaw.rpc", logging.WARNING, __file__, 1, msg, args, exc_info)
    rec.__dict__.update(extra)
    return rec


@pytest.mark.req("R-SEC-6")
def test_a_record_is_one_line_of_json_with_the_same_message() -> None:
    line = JsonFormatter().format(record("closing connection %s after %g s", "ws:127.0.0.1:6", 0.5))
    assert "\n" not in line
    out = orjson.loads(line)
    assert out.pop("ts").endswith("Z")
    message = "closing connection ws:127.0.0.1:6 after 0.5 s"
    assert out == {"level": "WARNING", "logger": "zeroclaw.rpc", "message": message}


@pytest.mark.req("R-SEC-6")
def test_extras_are_kept_and_a_traceback_is_one_field() -> None:
    out = orjson.loads(JsonFormatter().format(record("failed error_id=%s", "e1", exc=True, peer="unix:pid=1")))
    assert out["peer"] == "unix:pid=1"
    assert out["exc"].startswith("Traceback") and "ValueError: inner" in out["exc"]
    # An extra orjson cannot encode does not lose the line.
    assert orjson.loads(JsonFormatter().format(record("x", thing=object())))["thing"].startswith("<object")
