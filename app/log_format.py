"""The daemon's stderr log formats (`zeroclaw daemon --log-format text|json`, docs/operations.md).

Both carry the same records: the JSON one is one object per line, `ts` (UTC, ISO 8601 with milliseconds),
`level`, `logger`, `message`, the record's explicit extras (`extra=`) if any, and `exc` (the traceback, as the
text format prints it) when the record has one. The messages are the text format's, so the secrecy rules are
the same: nothing logged carries frame contents, tokens or secrets. The readiness line (`zeroclaw daemon
ready: …`) and a start-up failure are printed, not logged, and stay plain text in both formats.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Any, Final

import orjson

__all__ = ["LOG_FORMATS", "JsonFormatter", "configure"]

LOG_FORMATS: Final = ("text", "json")
TEXT_FORMAT: Final = "%(asctime)s %(levelname)s %(name)s: %(message)s"

# What every record has (anything else came from `extra=`), and uvicorn's coloured `message`.
_STANDARD: Final = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {
    "message",
    "asctime",
    "taskName",
    "color_message",
}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        seconds = int(record.created)
        millis = int((record.created - seconds) * 1000)
        out: dict[str, Any] = {
            "ts": f"{time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(seconds))}.{millis:03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_") and key not in out:
                out[key] = value
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        elif record.exc_text:
            out["exc"] = record.exc_text
        if record.stack_info:
            out["stack"] = self.formatStack(record.stack_info)
        # `default=str`: an extra orjson cannot encode is written as its str(), never dropping the line.
        return orjson.dumps(out, default=str).decode()


def configure(level: str, log_format: str) -> None:
    """The root logger to stderr, in `log_format` (`text` or `json`), at `level`."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT))
    logging.basicConfig(level=level.upper(), handlers=[handler])
    if log_format == "json":
        logging.captureWarnings(True)  # `warnings` print to stderr themselves: as records, they are JSON too
    logging.getLogger("alembic").setLevel(max(logging.WARNING, logging.getLogger().level))
