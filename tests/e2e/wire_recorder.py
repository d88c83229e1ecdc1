"""Records what the e2e suites see on the wire, for the contract test (R-DISC-1): every result, error,
notification and daemon request, with the method it belongs to, one sample per distinct shape. (What the suites
answer the daemon's requests with is theirs, and some answers are wrong on purpose: not recorded.)

On when `ZEROCLAW_RECORD_WIRE` names a directory: each test process appends to its own file there. Then
`python tests/e2e/wire_recorder.py merge DIR` writes the committed fixture `tests/fixtures/wire_samples.jsonl`,
which tests/unit/rpc/test_wire_samples.py validates against the OpenRPC document (docs/development.md).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "wire_samples.jsonl"
_SEEN: set[str] = set()


def shape(value: Any, depth: int = 0) -> Any:
    """`value`'s structure: keys and JSON types, not contents (user data past a few levels is one `object`)."""
    if isinstance(value, dict):
        if depth > 3:
            return "object"
        return {key: shape(item, depth + 1) for key, item in sorted(value.items())}
    if isinstance(value, list):
        return sorted({json.dumps(shape(item, depth + 1), sort_keys=True) for item in value[:20]})
    return type(value).__name__


class WireRecorder:
    """One connection's view: which method each id answers, and which dialect the connection speaks."""

    def __init__(self, directory: Path) -> None:
        self._file = directory / f"wire-{os.getpid()}.jsonl"
        self._asked: dict[str, tuple[str, Any] | None] = {}  # our request id → (method, params)
        self.dialect = "standard"

    def sent(self, data: bytes) -> None:
        for line in data.splitlines():
            try:
                frame = json.loads(line)
            except ValueError:
                continue
            if not isinstance(frame, dict):
                continue
            method = frame.get("method")
            if isinstance(method, str) and "id" in frame:
                params = frame.get("params")
                if method == "initialize":
                    self.dialect = "zerocode" if _speaks_zerocode(params) else "standard"
                key = json.dumps(frame["id"])
                # An id sent again while in flight (the duplicate-id tests): whose answer is whose is unknown.
                self._asked[key] = None if key in self._asked else (method, params)

    def received(self, frame: dict[str, Any]) -> None:
        method = frame.get("method")
        if isinstance(method, str):
            if "id" in frame:
                self._record("server_request", method, frame.get("params"))
            else:
                self._record("notification", method, frame.get("params"))
            return
        asked = self._asked.pop(json.dumps(frame.get("id")), None)
        if asked is None:
            return
        method, params = asked
        if "result" in frame:
            self._record("result", method, frame["result"])
            self._record("params", method, params if params is not None else {})
        elif isinstance(frame.get("error"), dict):
            self._record("error", method, frame["error"])

    def _record(self, kind: str, method: str, value: Any) -> None:
        sample = {"dialect": self.dialect, "kind": kind, "method": method}
        key = json.dumps([sample, shape(value)], sort_keys=True)
        if key in _SEEN:
            return
        _SEEN.add(key)
        with self._file.open("a") as out:
            out.write(json.dumps({**sample, "value": value}, sort_keys=True) + "\n")


def _speaks_zerocode(params: Any) -> bool:
    from rpc.dialects.zerocode.dialect import speaks_zerocode

    return speaks_zerocode(params)


def for_connection() -> WireRecorder | None:
    directory = os.environ.get("ZEROCLAW_RECORD_WIRE")
    return WireRecorder(Path(directory)) if directory else None


def clipped(value: Any) -> Any:
    """`value` with every string cut to 1 KiB: an upload's base64 is a sample, not a payload."""
    if isinstance(value, str):
        return value[:1024]
    if isinstance(value, dict):
        return {key: clipped(item) for key, item in value.items()}
    if isinstance(value, list):
        return [clipped(item) for item in value]
    return value


def merge(directory: Path, out: Path = FIXTURE) -> int:
    """Every recorded file of `directory` into `out`: standard-dialect samples, one per shape, sorted."""
    samples: dict[str, dict[str, Any]] = {}
    for path in sorted(directory.glob("wire-*.jsonl")):
        for line in path.read_text().splitlines():
            sample = json.loads(line)
            if sample["dialect"] != "standard":
                continue  # the document describes the standard dialect; zerocode's is ZeroClaw 0.8.4's
            key = json.dumps([sample["kind"], sample["method"], shape(sample["value"])], sort_keys=True)
            samples.setdefault(key, {**sample, "value": clipped(sample["value"])})
    out.parent.mkdir(parents=True, exist_ok=True)
    lines = sorted(json.dumps(s, sort_keys=True) for s in samples.values())
    out.write_text("".join(line + "\n" for line in lines))
    return len(lines)


if __name__ == "__main__":
    if sys.argv[1:2] != ["merge"] or len(sys.argv) != 3:
        sys.exit("usage: wire_recorder.py merge DIR")
    print(f"{merge(Path(sys.argv[2]))} samples -> {FIXTURE}")
