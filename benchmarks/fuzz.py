"""Wire fuzz kit (issue 16, R-WIRE-1..5, R-WIRE-9, R-ERR, R-GW-4): seeded generated frames over several Unix-socket
and WebSocket peers of one real daemon at once, checked by an oracle built from SPEC §3.

    python benchmarks/fuzz.py                               # 10^6 frames, seed from the clock, at most 600 s
    python benchmarks/fuzz.py --frames 20000 --seed 16      # reproducible short run (what the e2e test runs)
    python benchmarks/fuzz.py --peers 6 --ws-peers 2 --time-limit 300

The daemon is started by the e2e harness in a temp config dir with a small frame limit (`[limits] max_frame_bytes`
= 16 KiB, so oversize frames are cheap), its gateway on a free port, and an admin user whose paired token the
WebSocket peers send in `initialize {authToken}` (or as `Authorization: Bearer` on the upgrade).

Every peer pipelines: a writer sends frames while a reader takes answers (up to `WINDOW` answers outstanding, so
the daemon's in-flight cap and backpressure are exercised), never one round trip per frame. Frame classes: valid
calls (`status`, `session/list`, `config/get`, `pairing/list`, `session/messages`/`session/cancel` of unknown
sessions, re-`initialize`), unknown methods, wrong params types, local-only methods over WebSocket, malformed
request envelopes with a valid or an invalid id, direction-ambiguous frames (non-objects, batches, `method` with
`result`), invalid JSON, invalid UTF-8 (binary messages on WebSocket), truncated frames, `NaN`/`1e400`, deep nesting
(inside and beyond the parser's 1024 levels), duplicate keys (the last one wins, as in every mainstream JSON
parser), huge numbers in params, ids of every JSON type (small, 64-bit edge and beyond-64-bit integers, fractions,
exponents, strings with escapes and non-ASCII, null), notifications, valid and malformed responses, blank lines,
CRLF, frames split across writes, frames just under / at / just over the frame limit.

The oracle, per connection:
* every frame with an id gets exactly one well-formed answer (`jsonrpc` "2.0", exactly one of `result`/`error`,
  `error` = `{code: int, message: str, data: {kind: str, …}}`) carrying that id exactly: same JSON type, same value,
  an integer never turned into a float (R-WIRE-3, R-WIRE-5);
* nothing for notifications, responses and blank lines (R-WIRE-3, R-WIRE-5): an answer to an id nobody is waiting
  for, a second answer, or an unexpected `id: null` answer is a violation;
* the right code and `data.kind` per class (R-WIRE-3, R-WIRE-4, R-ERR): -32700 `id: null` for invalid JSON/UTF-8,
  -32600 under the request's id (or `null` when that id is invalid) for malformed envelopes, -32601, -32602 with
  `data.errors` and no echoed value (R-SEC-6: a marker string in bad params must never come back), -32000,
  -32012 `local_only` over WebSocket;
* an oversize frame gets one -32600 `id: null`, `data.kind = "frame_too_large"`, `data.limit`, then the connection
  closes (WebSocket close code 1009) after every request written before it was answered (R-WIRE-2, R-WIRE-5); the
  peer reconnects. Every other class leaves the connection usable: the next frames keep being answered;
* a socket segment that ends by half-closing still gets every answer, then EOF (R-WIRE-9);
* the daemon never exits (crash), every answer arrives within `--hang-timeout` (hang), and no daemon log line
  contains the secret marker (R-SEC-6).

It measures the daemon's VmRSS after a warm-up and after the run (peers closed). Prints one summary line:

    fuzz: frames=… requests=… violations=0 crashes=0 hangs=0 rss_growth=3.1MiB elapsed=…s seed=…

and exits 1 on any violation, crash or hang. `tests/e2e/test_e2e_fuzz.py` runs 20,000 seeded frames of the same
generator and oracle.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import random
import re
import sys
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, Final

REPO_ROOT: Final = Path(__file__).resolve().parents[1]
for _dir in (str(REPO_ROOT / "tests"), str(REPO_ROOT / "tests" / "e2e")):  # the harness and tests/db_backend.py
    if _dir not in sys.path:
        sys.path.insert(0, _dir)

from e2e_harness import READY_RE, Daemon, DaemonFactory  # noqa: E402

__all__ = ["CONFIG", "FRAME_LIMIT", "FuzzResult", "Generator", "main", "run_fuzz"]

FRAME_LIMIT: Final = 16384  # [limits] max_frame_bytes for the run: oversize frames stay cheap
MIB: Final = 1024 * 1024
WINDOW: Final = 128  # answers outstanding per peer before its writer waits
SECRET: Final = "FZSECRET"  # in bad params values; must never come back in an answer or a log line (R-SEC-6)
USER: Final = "fuzz"
CONFIG: Final = f"""\
[limits]
max_frame_bytes = {FRAME_LIMIT}

[permission_profiles.fuzzadmin]
admin = true

[users.{USER}]
permission_profiles = ["fuzzadmin"]
"""

# code -> the data.kind values the spec allows for it (R-ERR table)
KINDS: Final = {
    -32700: {"parse_error"},
    -32600: {"invalid_request", "frame_too_large", "duplicate_id"},
    -32601: {"method_not_found"},
    -32602: {"invalid_params"},
    -32603: {"internal_error", "storage_unavailable"},
    -32000: {"session_not_found", "session_changed"},
    -32010: {"auth_required"},
    -32012: {"forbidden", "local_only"},
}

# An expectation: (code, data.kind) — code 0 means a `result`.
Expect = tuple[int, str | None]
RESULT: Final[Expect] = (0, None)
PARSE: Final[Expect] = (-32700, "parse_error")
INVALID: Final[Expect] = (-32600, "invalid_request")
TOO_LARGE: Final[Expect] = (-32600, "frame_too_large")
NOT_FOUND: Final[Expect] = (-32601, "method_not_found")
BAD_PARAMS: Final[Expect] = (-32602, "invalid_params")
NO_SESSION: Final[Expect] = (-32000, "session_not_found")
LOCAL_ONLY: Final[Expect] = (-32012, "local_only")

IdKey = tuple[str, Any]  # ("n", Decimal) | ("s", str)


@dataclass
class Frame:
    """One generated frame and what must come back for it."""

    cls: str  # the class name, for reports
    data: bytes  # the JSON text (no line ending)
    id_key: IdKey | None = None  # the answer must carry this id
    int_id: bool = False  # the id was written as an integer: it must come back as one
    expect: Expect | None = None  # None: no answer at all
    null_expect: Expect | None = None  # an answer with id null is due
    null_request: bool = False  # a request with id null (at most one in flight per connection, R-WIRE-7)
    oversize: bool = False  # the connection must close after this frame
    binary: bool = False  # WebSocket: send as a binary message
    ending: bytes = b"\n"  # socket: the line ending (b"" = never ends: only for oversize)
    split: tuple[int, ...] = ()  # socket: write it in pieces cut at these offsets of the line


def _j(value: Any, rng: random.Random | None = None) -> str:
    return json.dumps(value, ensure_ascii=bool(rng and rng.random() < 0.5), separators=(",", ":"))


def nest(depth: int, inner: str = "0") -> str:
    return "[" * depth + inner + "]" * depth


class Generator:
    """Seeded frame generator for one connection; ids are unique per connection (a counter), so no id is ever
    in flight twice (R-WIRE-7 is not what this fuzzes) and every answer maps back to one frame."""

    STRING_TAILS: Final = ["", "é", "😀", '"q"', "\\", "\u2028", " sp", "\t", "ü" * 3, "zc-out-0", "\x00", "\u00a0"]

    def __init__(self, rng: random.Random, *, websocket: bool, token: str, limit: int = FRAME_LIMIT) -> None:
        self.rng = rng
        self.ws = websocket
        self.token = token
        self.limit = limit
        self.n = 0
        self.null_busy = False  # a null-id request is in flight on this connection
        self._classes: list[tuple[Callable[[], Frame], float]] = [
            (self.valid_call, 22),
            (self.notification, 8),
            (self.unknown_method, 6),
            (self.bad_params, 7),
            (self.bad_envelope_with_id, 6),
            (self.bad_envelope_null, 5),
            (self.ambiguous, 5),
            (self.parse_error, 9),
            (self.deep, 3),
            (self.duplicate_keys, 4),
            (self.huge_numbers, 3),
            (self.response, 8),
            (self.null_id_request, 2),
            (self.near_limit, 0.4),
            (self.oversize, 0.08),
            (self.reinitialize, 0.3),
        ]
        if not websocket:
            self._classes.append((self.blank, 1))
        self._funcs = [f for f, _ in self._classes]
        self._cum = list(itertools.accumulate(w for _, w in self._classes))

    # -- ids ---------------------------------------------------------------------------------------------

    def new_id(self) -> tuple[str, IdKey, bool]:
        """(JSON text, key, written as an integer) of a fresh id; every JSON form, values unique per counter."""
        self.n += 1
        n, r = self.n, self.rng.random()
        if r < 0.25:
            v = self.rng.choice([n, -n - 1])
            return str(v), ("n", Decimal(v)), True
        if r < 0.45:
            v = self.rng.choice(
                [2**63 - 1 - n, -(2**63) + n, 2**64 - 1 - n, 2**64 + n, -(10**23) - n, 10**29 + n, 10**40 + n]
            )
            return str(v), ("n", Decimal(v)), True
        if r < 0.6:
            text = self.rng.choice(
                [
                    f"{n}.5",
                    f"{n}.50",
                    f"{10 * n + 5}e-1",
                    f"{n}.5e0",
                    f"{100 * n + 50}E-2",
                    f"-{n}.5",
                    f"{n}.5e200",
                    f"{n}.5e-200",
                ]
            )
            return text, ("n", Decimal(text)), False
        s = "L" * self.rng.randint(50, 1500) + str(n) if r < 0.7 else f"s{n}" + self.rng.choice(self.STRING_TAILS)
        return _j(s, self.rng), ("s", s), False

    # -- building ----------------------------------------------------------------------------------------

    def obj(self, members: list[tuple[str, str]], *, shuffle: bool = True) -> str:
        if shuffle and self.rng.random() < 0.3:
            members = members[:]
            self.rng.shuffle(members)
        sep = self.rng.choice([",", ",", ", ", " ,\t"])
        return "{" + sep.join(f'"{k}":{v}' for k, v in members) + "}"

    def request(self, method: str, params: str | None, rid: str | None, *, jsonrpc: str = '"2.0"') -> str:
        members = [("jsonrpc", jsonrpc), ("method", _j(method))]
        if params is not None:
            members.append(("params", params))
        if rid is not None:
            members.append(("id", rid))
        return self.obj(members)

    def call_with_id(self, cls: str, method: str, params: str | None, expect: Expect, **kw: Any) -> Frame:
        text, key, is_int = self.new_id()
        return Frame(cls, self.request(method, params, text, **kw).encode(), key, is_int, expect)

    # -- classes -----------------------------------------------------------------------------------------

    def valid_method(self) -> tuple[str, str | None, Expect]:
        """A call that is valid on this surface and what it answers; cheap ones mostly (status runs inline)."""
        r = self.rng.random()
        unknown = _j(f"nosuch-{self.rng.randrange(10**6)}")
        if r < 0.55:
            return "status", self.rng.choice([None, "{}", "[]", '{"x":1}', f'{{"{SECRET}":"{SECRET}"}}']), RESULT
        if r < 0.70:
            return (
                "session/list",
                self.rng.choice([None, "{}", '{"includeKilled":true}', '{"include_killed":false}']),
                RESULT,
            )
        if r < 0.78:
            return "config/get", self.rng.choice(["{}", '{"prop":"limits.max_frame_bytes"}']), RESULT
        if r < 0.85:
            return "pairing/list", self.rng.choice([None, "{}"]), RESULT
        if r < 0.93:
            return "session/messages", f'{{"sessionId":{unknown}}}', NO_SESSION
        return "session/cancel", f'{{"session_id":{unknown}}}', NO_SESSION

    def valid_call(self) -> Frame:
        method, params, expect = self.valid_method()
        return self.call_with_id("valid", method, params, expect)

    def reinitialize(self) -> Frame:
        params = {"protocolVersion": 1, "clientInfo": {"name": "fuzz", "version": "1"}}
        if self.ws:
            params["authToken"] = self.token
        return self.call_with_id("initialize", "initialize", _j(params), RESULT)

    def notification(self) -> Frame:
        r = self.rng.random()
        if r < 0.4:
            method, params, _ = self.valid_method()
        elif r < 0.7:
            method, params = f"no/such/{self.rng.randrange(1000)}", self.rng.choice([None, "{}", "[1]"])
        else:
            method, params = "session/messages", f'{{"sessionId":5,"limit":"{SECRET}"}}'
        return Frame("notification", self.request(method, params, None).encode())

    def unknown_method(self) -> Frame:
        method = self.rng.choice(
            [
                "",
                "STATUS",
                "status ",
                " status",
                "rpc.discovery",  # (rpc.discover is a method: R-DISC-1)
                "session/",
                "session/list/x",
                "ståtus",
                "a" * 300,
                f"x/{self.rng.randrange(10**9)}",
                "initialize\u0000",
                "Status",
            ]
        )
        return self.call_with_id("unknown_method", method, self.rng.choice([None, "{}", "[]"]), NOT_FOUND)

    def bad_params(self) -> Frame:
        s = _j(SECRET + str(self.rng.randrange(1000)))
        cases: list[tuple[str, str, Expect]] = [
            ("status", "[1]", BAD_PARAMS),
            ("status", f"[{s}]", BAD_PARAMS),
            ("session/list", '{"includeKilled":{"a":1}}', BAD_PARAMS),
            ("session/list", '{"includeKilled":[true]}', BAD_PARAMS),
            ("session/messages", '{"sessionId":5}', BAD_PARAMS),
            ("session/messages", "{}", BAD_PARAMS),
            ("session/messages", f'{{"sessionId":"abc","limit":{s}}}', BAD_PARAMS),
            ("session/messages", '{"sessionId":"abc","limit":-1}', BAD_PARAMS),
            ("session/cancel", f'{{"sessionId":{{"v":{s}}}}}', BAD_PARAMS),
            ("config/get", '{"prop":5}', BAD_PARAMS),
        ]
        # (a refused re-`initialize` would drop the connection's principal, docs/protocol.md: not generated)
        if not self.ws:
            cases.append(("file/upload/begin", "{}", BAD_PARAMS))
        else:  # local-only methods: -32012 over WebSocket, checked before params (R-WIRE-3 order, R-FILE-5)
            cases.append(("file/upload/begin", "{}", LOCAL_ONLY))
            cases.append(("file/upload/chunk", f'{{"x":{s}}}', LOCAL_ONLY))
            cases.append(("pairing/code", "{}", LOCAL_ONLY))
        method, params, expect = self.rng.choice(cases)
        return self.call_with_id("bad_params", method, params, expect)

    def bad_envelope_with_id(self) -> Frame:
        """Request-shaped but malformed, with a valid id: -32600 under that id (R-WIRE-3)."""
        jsonrpc = '"2.0"'
        params: str | None = None
        r = self.rng.random()
        if r < 0.3:
            jsonrpc = self.rng.choice(['"1.0"', "2.0", "2", "null", '"2.00"', '" 2.0"', "[]"])
        elif r < 0.4:
            text, key, is_int = self.new_id()
            members = [("method", '"status"'), ("id", text)]
            return Frame("bad_envelope_id", self.obj(members).encode(), key, is_int, INVALID)
        else:
            params = self.rng.choice(["null", "true", "false", "3", '"x"', "1.5", f'"{SECRET}"'])
        return self.call_with_id("bad_envelope_id", "status", params, INVALID, jsonrpc=jsonrpc)

    def bad_envelope_null(self) -> Frame:
        """Request-shaped, malformed, and no valid id: -32600 with id null."""
        rid = self.rng.choice(["true", "false", '{"a":1}', "[1]", "[]", None])
        params = self.rng.choice(["null", "3", '"s"', "true"]) if rid is None else self.rng.choice([None, "{}", "null"])
        jsonrpc = '"2.0"' if rid is not None or self.rng.random() < 0.5 else '"1.0"'
        return Frame(
            "bad_envelope_null", self.request("status", params, rid, jsonrpc=jsonrpc).encode(), null_expect=INVALID
        )

    def ambiguous(self) -> Frame:
        """Direction-ambiguous: -32600, id null (R-WIRE-3)."""
        rid = str(self.rng.randrange(1000))
        text = self.rng.choice(
            [
                "null",
                "42",
                '"status"',
                "true",
                "[]",
                "[1]",
                "{}",
                '{"jsonrpc":"2.0"}',
                f'{{"jsonrpc":"2.0","id":{rid}}}',
                f'[{{"jsonrpc":"2.0","method":"status","id":{rid}}}]',
                f'[{{"jsonrpc":"2.0","method":"status","id":{rid}}},{{"jsonrpc":"2.0","method":"status"}}]',
                f'{{"jsonrpc":"2.0","method":null,"id":{rid}}}',
                f'{{"jsonrpc":"2.0","method":7,"id":{rid}}}',
                f'{{"jsonrpc":"2.0","method":["status"],"id":{rid}}}',
                f'{{"jsonrpc":"2.0","method":"status","result":1,"id":{rid}}}',
                f'{{"jsonrpc":"2.0","method":"status","error":{{"code":1,"message":"m"}},"id":{rid}}}',
                '{"jsonrpc":"2.0","method":"status","result":null}',
                f'{{"jsonrpc":"2.0","params":{{}},"id":{rid}}}',
            ]
        )
        return Frame("ambiguous", text.encode(), null_expect=INVALID)

    def parse_error(self) -> Frame:
        """Invalid JSON or UTF-8: -32700, id null (R-WIRE-3); the connection goes on."""
        rid = str(self.rng.randrange(10**6))
        good = self.request("status", None, rid).encode()
        r = self.rng.random()
        binary = False
        if r < 0.3:  # truncated: any proper prefix of an object is invalid
            data = good[: self.rng.randrange(1, len(good))]
        elif r < 0.5:  # invalid UTF-8 inside a string, or around the frame
            bad = self.rng.choice([b"\xff", b"\xc3", b"\xc0\x80", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\x80"])
            where = self.rng.choice(["method", "id", "tail", "head"])
            if where == "method":
                data = b'{"jsonrpc":"2.0","method":"sta' + bad + b'tus","id":' + rid.encode() + b"}"
            elif where == "id":
                data = b'{"jsonrpc":"2.0","method":"status","id":"' + bad + b'"}'
            elif where == "tail":
                data = good + bad
            else:
                data = bad + good
            binary = self.ws  # a text frame must be UTF-8: WebSocket peers send it binary
        else:
            data = self.rng.choice(
                [
                    b"{",
                    b"}",
                    b"[",
                    b'{"jsonrpc":"2.0",}',
                    b"{'jsonrpc':'2.0'}",
                    b'{"jsonrpc":"2.0" "method":"status"}',
                    good + b"x",
                    good + b"{}",
                    good + b",",
                    b"nul",
                    b"tru",
                    b"01",
                    b"NaN",
                    b"-Infinity",
                    b'{"jsonrpc":"2.0","method":"status","id":NaN}',
                    b'{"jsonrpc":"2.0","method":"status","id":1e400}',
                    b'{"jsonrpc":"2.0","method":"status","params":{"x":-1e999},"id":1}',
                    b'{"jsonrpc":"2.0","method":"status","params":{"x":' + b"1" * 400 + b'},"id":1}',
                    b'{"jsonrpc":"2.0","method":"status","id":"\\ud800"}',
                    b'{"a":"\\x"}',
                    b'{"a":"tab\there"}',
                    b'{"jsonrpc":"2.0","method":"status","id":1} // c',
                    b"\x00",
                    b'{"a":1}}',
                    b'{"jsonrpc":"2.0","method":"status","id":0x10}',
                    b'{"jsonrpc":"2.0","method":"status","id":+1}',
                ]
            )
        if self.ws and self.rng.random() < 0.1:
            data, binary = good, True  # a binary message is never a JSON-RPC message (docs/protocol.md)
        return Frame("parse_error", data, null_expect=PARSE, binary=binary)

    def deep(self) -> Frame:
        """Deep nesting: up to 1024 levels is JSON the parser reads (answered normally, id exact); beyond, -32700."""
        if self.rng.random() < 0.7:
            inner = self.rng.choice(["0", "{}", '"x"', "18446744073709551621"])
            # + the frame object and the params object (and an inner `{}`) = at most 1024 levels
            depth = self.rng.randint(1, 1021 if inner == "{}" else 1022)
            return self.call_with_id("deep", "status", f'{{"x":{nest(depth, inner)}}}', RESULT)
        if self.rng.random() < 0.5:
            body = nest(self.rng.randint(1023, min(6000, self.limit // 2 - 100)))
        else:
            depth = self.rng.randint(1023, min(6000, (self.limit - 200) // 6))
            body = '{"a":' * depth + "1" + "}" * depth
        rid = str(self.rng.randrange(1000))
        return Frame(
            "deep",
            f'{{"jsonrpc":"2.0","method":"status","params":{{"x":{body}}},"id":{rid}}}'.encode(),
            null_expect=PARSE,
        )

    def duplicate_keys(self) -> Frame:
        """Duplicate member names: the last one wins (RFC 8259 §4 leaves it open; every mainstream parser)."""
        text, key, is_int = self.new_id()
        r = self.rng.random()
        if r < 0.25:
            members = [("jsonrpc", '"2.0"'), ("jsonrpc", '"2.0"'), ("method", '"status"'), ("id", text)]
            expect = RESULT
        elif r < 0.5:
            members = [("jsonrpc", '"2.0"'), ("method", '"no/such"'), ("method", '"status"'), ("id", text)]
            expect = RESULT
        elif r < 0.7:
            members = [("jsonrpc", '"2.0"'), ("method", '"status"'), ("method", '"no/such"'), ("id", text)]
            expect = NOT_FOUND
        elif r < 0.85:
            members = [("jsonrpc", '"1.0"'), ("method", '"status"'), ("jsonrpc", '"2.0"'), ("id", text)]
            expect = RESULT
        else:
            first = self.rng.choice(['"other"', "true", "null", "7.5", "18446744073709551999"])
            members = [("jsonrpc", '"2.0"'), ("method", '"status"'), ("id", first), ("id", text)]
            expect = RESULT
        return Frame("duplicate_keys", self.obj(members, shuffle=False).encode(), key, is_int, expect)

    def huge_numbers(self) -> Frame:
        """Huge numbers inside params (within the double range): valid JSON, answered normally."""
        value = self.rng.choice(
            [
                str(10**300),
                str(-(10**200)),
                "1" * 300,
                "1.7976931348623157e308",
                "4.9e-324",
                "0." + "9" * 3000,
                "123456789012345678901234567890.123456789e-10",
                "-0",
                "-0.0",
                "1E+308",
            ]
        )
        return self.call_with_id("huge_numbers", "status", f'{{"n":{value},"m":[{value},{value}]}}', RESULT)

    def response(self) -> Frame:
        """Response-shaped frames, valid or malformed: never answered (R-WIRE-3)."""
        rid = self.rng.choice(
            [
                '"zc-out-0"',
                f'"zc-out-{self.rng.randrange(100)}"',
                "null",
                str(self.rng.randrange(10**6)),
                '"probe"',
                "18446744073709551621",
                "1.5",
            ]
        )
        text = self.rng.choice(
            [
                f'{{"jsonrpc":"2.0","result":{{}},"id":{rid}}}',
                f'{{"jsonrpc":"2.0","result":null,"id":{rid}}}',
                f'{{"jsonrpc":"2.0","result":{{"action":"accept","content":{{"answer":"y"}}}},"id":{rid}}}',
                f'{{"jsonrpc":"2.0","error":{{"code":-1,"message":"no"}},"id":{rid}}}',
                f'{{"jsonrpc":"2.0","error":{{"code":-32601,"message":"m","data":[1]}},"id":{rid}}}',
                # malformed
                '{"jsonrpc":"2.0","result":1}',
                '{"jsonrpc":"2.0","result":1,"id":true}',
                '{"jsonrpc":"2.0","result":1,"id":{"x":1}}',
                f'{{"jsonrpc":"2.0","result":1,"error":{{"code":1,"message":"m"}},"id":{rid}}}',
                f'{{"jsonrpc":"2.0","result":1,"params":{{}},"id":{rid}}}',
                f'{{"jsonrpc":"2.0","error":"boom","id":{rid}}}',
                f'{{"jsonrpc":"2.0","error":{{"message":"m"}},"id":{rid}}}',
                f'{{"jsonrpc":"2.0","error":{{"code":"1","message":"m"}},"id":{rid}}}',
                f'{{"jsonrpc":"2.0","error":{{"code":1.5,"message":"m"}},"id":{rid}}}',
                f'{{"jsonrpc":"2.0","error":{{"code":1}},"id":{rid}}}',
                f'{{"jsonrpc":"1.0","result":1,"id":{rid}}}',
                f'{{"result":1,"id":{rid}}}',
                f'{{"jsonrpc":"2.0","error":null,"id":{rid}}}',
                f'{{"jsonrpc":"2.0","result":"{SECRET}","error":{{"code":1,"message":"{SECRET}"}},"id":{rid}}}',
            ]
        )
        return Frame("response", text.encode())

    def blank(self) -> Frame:
        return Frame("blank", self.rng.choice([b"", b" ", b"\t \t", b"\r"]))

    def null_id_request(self) -> Frame:
        """A request with id null: answered under null (R-WIRE-3). One at a time, so it is never a duplicate."""
        if self.null_busy:
            return self.valid_call()
        self.null_busy = True
        method, params, expect = self.rng.choice(
            [
                ("status", None, RESULT),
                ("status", "{}", RESULT),
                ("no/such", "{}", NOT_FOUND),
                ("status", "[1]", BAD_PARAMS),
            ]
        )
        return Frame("null_id", self.request(method, params, "null").encode(), null_expect=expect, null_request=True)

    def padded_status(self, total: int, rid: str) -> bytes:
        """A `status` request of exactly `total` bytes of JSON text."""
        head = b'{"jsonrpc":"2.0","method":"status","id":' + rid.encode()
        pad = total - len(head) - 1
        return head + b" " * pad + b"}"

    def near_limit(self) -> Frame:
        """Just under or exactly at the frame limit: served (R-WIRE-2)."""
        text, key, is_int = self.new_id()
        # the socket counts the newline (and a CR before it); WebSocket counts the message
        ending = b"\r\n" if not self.ws and self.rng.random() < 0.3 else b"\n"
        room = self.limit - (0 if self.ws else len(ending))
        size = room - self.rng.choice([0, 0, 1, 2, 100])
        return Frame("near_limit", self.padded_status(size, text), key, is_int, RESULT, ending=ending)

    def oversize(self) -> Frame:
        """Just over the limit: -32600 frame_too_large, id null, then the connection closes (R-WIRE-2)."""
        over = self.rng.choice([1, 1, 2, 100, 4096])
        if self.ws:
            return Frame("oversize", self.padded_status(self.limit + over, "1"), null_expect=TOO_LARGE, oversize=True)
        if self.rng.random() < 0.2:  # a line that never ends
            return Frame("oversize", b"x" * (self.limit + over), null_expect=TOO_LARGE, oversize=True, ending=b"")
        ending = b"\r\n" if self.rng.random() < 0.3 else b"\n"
        data = self.padded_status(self.limit - len(ending) + over, "1")
        return Frame("oversize", data, null_expect=TOO_LARGE, oversize=True, ending=ending)

    def next(self) -> Frame:
        frame = self.rng.choices(self._funcs, cum_weights=self._cum)[0]()
        if not self.ws and frame.ending == b"\n" and len(frame.data) + 2 <= self.limit:  # CRLF keeps it in limit
            r = self.rng.random()
            if r < 0.05:
                frame.ending = b"\r\n"
            elif r < 0.08:
                size = len(frame.data) + 1
                frame.split = tuple(sorted({self.rng.randrange(1, size) for _ in range(3)})) if size > 2 else ()
        return frame


# ------------------------------------------------------------------------------------------------ oracle


@dataclass
class Stats:
    frames: int = 0
    requests: int = 0  # frames that must be answered
    answers: int = 0
    violations: int = 0
    crashes: int = 0
    hangs: int = 0
    connections: int = 0
    oversize_closes: int = 0
    details: list[str] = field(default_factory=list)
    classes: Counter[str] = field(default_factory=Counter)

    kinds: Counter[str] = field(default_factory=Counter)

    def violation(self, text: str) -> None:
        """Count it; keep the first 3 reports of each kind (at most 60 in all) so one kind cannot hide another."""
        self.violations += 1
        kind = re.sub(r"\d+", "N", re.sub(r"^\[[^]]*\] ", "", text).split(" for ")[0].split(": got")[0])[:90]
        self.kinds[kind] += 1
        if self.kinds[kind] <= 3 and len(self.details) < 60:
            self.details.append(text)


def _no_constants(name: str) -> Any:
    raise ValueError(f"non-JSON constant {name}")


def _clip(data: bytes, n: int = 300) -> str:
    text = repr(data[:n])
    return text + (f"…(+{len(data) - n} bytes)" if len(data) > n else "")


class Oracle:
    """What one connection still owes us, and the check of every frame it sends."""

    def __init__(self, stats: Stats, label: str) -> None:
        self.stats = stats
        self.label = label
        self.pending: dict[IdKey, tuple[Frame, float]] = {}
        self.nulls: dict[Expect, deque[tuple[Frame, float]]] = {}
        self.outstanding = 0
        self.progress = asyncio.Event()
        self.generator: Generator | None = None
        self.recent: deque[Frame] = deque(maxlen=6)  # the last frames sent, for reports
        self.end = "open"  # how the segment ends: close, half-close, oversize

    def expect(self, frame: Frame) -> None:
        self.recent.append(frame)
        now = time.monotonic()
        if frame.id_key is not None:
            assert frame.id_key not in self.pending, frame  # the generator's ids are unique
            self.pending[frame.id_key] = (frame, now)
            self.outstanding += 1
        if frame.null_expect is not None:
            self.nulls.setdefault(frame.null_expect, deque()).append((frame, now))
            self.outstanding += 1
        if frame.id_key is not None or frame.null_expect is not None:
            self.stats.requests += 1

    def oldest(self) -> tuple[float, Frame] | None:
        ages = [(t, f) for f, t in self.pending.values()] + [q[0][::-1] for q in self.nulls.values() if q]
        return min(ages, key=lambda a: a[0]) if ages else None

    def bad(self, what: str, raw: bytes, frame: Frame | None = None) -> None:
        sent = f" for {frame.cls} frame {_clip(frame.data, 200)}" if frame is not None else ""
        self.stats.violation(f"[{self.label}] {what}{sent}: got {_clip(raw)}")

    def answer(self, raw: bytes) -> None:
        self.stats.answers += 1
        self.progress.set()
        if SECRET.encode() in raw:
            self.bad("an answer echoes a params value (R-WIRE-4, R-SEC-6)", raw)
        try:
            obj = json.loads(raw, parse_float=Decimal, parse_constant=_no_constants)
        except ValueError:
            self.bad("answer is not JSON (R-WIRE-1)", raw)
            return
        if not isinstance(obj, dict) or obj.get("jsonrpc") != "2.0":
            self.bad("answer is not a JSON-RPC 2.0 object (R-WIRE-3)", raw)
            return
        if "method" in obj:
            self.bad("unexpected daemon request/notification", raw)
            return
        if "id" not in obj or (("result" in obj) == ("error" in obj)):
            self.bad("answer without id or without exactly one of result/error (R-BIDI-1)", raw)
            return
        got = RESULT
        if "error" in obj:
            err = obj["error"]
            ok = (
                isinstance(err, dict)
                and set(err) <= {"code", "message", "data"}
                and type(err.get("code")) is int
                and isinstance(err.get("message"), str)
                and isinstance(err.get("data"), dict)
                and isinstance(err["data"].get("kind"), str)
            )
            if not ok:
                self.bad("malformed error object (R-ERR: {code, message, data.kind})", raw)
                return
            got = (err["code"], err["data"]["kind"])
            if got[1] not in KINDS.get(got[0], {got[1]}):
                self.bad(f"data.kind {got[1]!r} does not belong to code {got[0]} (R-ERR)", raw)
        rid = obj["id"]
        if rid is None:
            self._null_answer(got, obj, raw)
            return
        if isinstance(rid, bool) or not isinstance(rid, int | Decimal | str):
            self.bad("answer id is not a string, number or null", raw)
            return
        key: IdKey = ("s", rid) if isinstance(rid, str) else ("n", Decimal(rid))
        entry = self.pending.pop(key, None)
        rounded = False
        if entry is None and isinstance(rid, Decimal):
            entry = self._rounded(rid)
            rounded = entry is not None
        if entry is None:
            self.bad(
                "answer to an id nobody is waiting for: a second answer, or an answer to a notification or a "
                "response, or an id not echoed exactly (R-WIRE-3, R-WIRE-5)",
                raw,
            )
            return
        self.outstanding -= 1
        frame = entry[0]
        if rounded:
            self.bad("an integer id came back rounded to a float (R-WIRE-3: never rounded)", raw, frame)
        elif frame.int_id and not isinstance(rid, int):
            self.bad("an integer id came back as a non-integer (R-WIRE-3: never rounded to a float)", raw, frame)
        self._check(frame.expect, got, obj, raw, frame)

    def _rounded(self, value: Decimal) -> tuple[Frame, float] | None:
        """The owed request whose integer id this answer's (float) id is a rounding of: the answer is still counted
        for it, so one wrong id is one violation, not also a hang. Deep frames first (where this was seen)."""
        candidates = [k for k in self.pending if k[0] == "n" and float(k[1]) == float(value)]
        if not candidates:
            return None
        candidates.sort(key=lambda k: self.pending[k][0].cls != "deep")
        return self.pending.pop(candidates[0])

    def _null_answer(self, got: Expect, obj: dict[str, Any], raw: bytes) -> None:
        queue = self.nulls.get(got)
        if not queue:
            owed = {k: len(q) for k, q in self.nulls.items() if q}
            if got == INVALID and obj.get("error", {}).get("data", {}).get("kind") == "duplicate_id":
                self.bad("duplicate_id for ids that are unique on this connection (R-WIRE-7)", raw)
            else:
                recent = ", ".join(f"{f.cls}:{len(f.data) + len(f.ending)}B" for f in self.recent)
                self.bad(
                    f"unexpected id:null answer {got} (owed null answers: {owed}; last frames sent: {recent})", raw
                )
            return
        frame, _ = queue.popleft()
        self.outstanding -= 1
        if frame.null_request and self.generator is not None:
            self.generator.null_busy = False
        self._check(frame.null_expect, got, obj, raw, frame)

    def _check(self, expect: Expect | None, got: Expect, obj: dict[str, Any], raw: bytes, frame: Frame) -> None:
        if expect != got:
            self.bad(f"expected {expect}, got {got} (R-WIRE-3/R-WIRE-4/R-ERR)", raw, frame)
            return
        if got == BAD_PARAMS and not isinstance(obj["error"]["data"].get("errors"), list):
            self.bad("-32602 without data.errors (R-WIRE-4)", raw, frame)
        if got == TOO_LARGE and obj["error"]["data"].get("limit") != (
            self.generator.limit if self.generator else FRAME_LIMIT
        ):
            self.bad("frame_too_large without the right data.limit (R-WIRE-2)", raw, frame)
        if got == RESULT and not isinstance(obj["result"], dict):
            self.bad("result is not an object", raw, frame)


# ------------------------------------------------------------------------------------------------ connections


class Conn:
    """One transport: write frames, read answers (each passed to the oracle) until the daemon closes."""

    eof: bool = False
    close_code: int | None = None

    async def write(self, frames: list[Frame]) -> None:
        raise NotImplementedError

    async def read_loop(self, oracle: Oracle) -> None:
        raise NotImplementedError

    async def finish_writing(self) -> bool:
        """End the sending side if the transport can (socket half-close, R-WIRE-9); True if it did."""
        return False

    async def close(self) -> None:
        raise NotImplementedError


class SocketConn(Conn):
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.record: Any = None  # a binary file: every byte written, for reproducing a report (--record)

    def _write(self, data: bytes) -> None:
        if self.record is not None:
            self.record.write(data)
        self.writer.write(data)

    @classmethod
    async def open(cls, path: str) -> SocketConn:
        reader, writer = await asyncio.wait_for(asyncio.open_unix_connection(path, limit=1 << 22), 10)
        return cls(reader, writer)

    async def write(self, frames: list[Frame]) -> None:
        buf = bytearray()
        for f in frames:
            line = f.data + f.ending
            if f.split:
                cuts = list(f.split)
                pieces = [line[a:b] for a, b in zip([0, *cuts], [*cuts, len(line)], strict=True)]
                self._write(bytes(buf))
                buf.clear()
                for piece in pieces:
                    self._write(piece)
                    await self.writer.drain()
                    await asyncio.sleep(0)
            else:
                buf += line
        if buf:
            self._write(bytes(buf))
        await self.writer.drain()

    async def read_loop(self, oracle: Oracle) -> None:
        buf = b""
        try:
            while True:
                data = await self.reader.read(1 << 16)
                if not data:
                    break
                buf += data
                if b"\n" in data:
                    *lines, buf = buf.split(b"\n")
                    for line in lines:
                        oracle.answer(line)
        except (ConnectionResetError, BrokenPipeError):
            pass
        if buf:
            oracle.bad("a partial answer before EOF (R-WIRE-1)", buf)
        self.eof = True
        oracle.progress.set()

    async def finish_writing(self) -> bool:
        with contextlib.suppress(OSError):
            self.writer.write_eof()
            return True
        return False

    async def close(self) -> None:
        if self.record is not None:
            self.record.close()
        self.writer.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.writer.wait_closed(), 2)


class WsConn(Conn):
    def __init__(self, ws: Any) -> None:
        self.ws = ws

    @classmethod
    async def open(cls, url: str, token: str | None) -> WsConn:
        from websockets.asyncio.client import connect

        headers = {"Authorization": f"Bearer {token}"} if token else None
        ws = await asyncio.wait_for(
            connect(url, proxy=None, additional_headers=headers, max_size=1 << 22, compression=None), 10
        )
        return cls(ws)

    async def write(self, frames: list[Frame]) -> None:
        for f in frames:
            await self.ws.send(f.data if f.binary else f.data.decode())

    async def read_loop(self, oracle: Oracle) -> None:
        from websockets.exceptions import ConnectionClosed

        try:
            async for message in self.ws:
                if isinstance(message, bytes):
                    oracle.bad("a binary answer (R-WIRE-1: one message per text frame)", message)
                    continue
                oracle.answer(message.encode())
        except ConnectionClosed:
            pass
        self.close_code = self.ws.close_code
        self.eof = True
        oracle.progress.set()

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.ws.close(), 2)


# ------------------------------------------------------------------------------------------------ peers


@dataclass
class Run:
    """What all peers share."""

    daemon: Daemon
    socket_path: str
    ws_url: str | None
    token: str
    stats: Stats
    budget: int
    deadline: float
    hang_timeout: float
    warmup: int
    record: Path | None = None  # write each socket connection's bytes to <record>/<label>.bin
    rss_before: int | None = None
    stop: bool = False

    def take(self, n: int) -> int:
        """Up to `n` frames from the shared budget."""
        if self.stop or time.monotonic() > self.deadline:
            return 0
        got = min(n, self.budget)
        self.budget -= got
        return got

    def count(self, n: int) -> None:
        self.stats.frames += n
        if self.rss_before is None and self.stats.frames >= self.warmup:
            with contextlib.suppress(OSError, AssertionError):
                self.rss_before = self.daemon.proc_status("VmRSS")


async def run_peer(run: Run, index: int, websocket: bool, seed: int) -> None:
    rng = random.Random(f"{seed}/{'ws' if websocket else 'sock'}/{index}")
    label_kind = "ws" if websocket else "sock"
    segment = 0
    while not run.stop and run.budget > 0 and time.monotonic() < run.deadline:
        segment += 1
        label = f"{label_kind}{index}.{segment}"
        ok = await run_segment(run, rng, websocket, label)
        if not ok:
            run.stop = True  # the daemon is gone: run_fuzz counts the crash
            return


async def run_segment(run: Run, rng: random.Random, websocket: bool, label: str) -> bool:
    """One connection's life: initialize, a random number of frames, then an end (close, half-close or an
    oversize frame). False if the daemon could not be reached."""
    stats = run.stats
    oracle = Oracle(stats, label)
    gen = Generator(rng, websocket=websocket, token=run.token)
    oracle.generator = gen
    header_auth = websocket and rng.random() < 0.5
    try:
        if websocket:
            assert run.ws_url is not None
            conn: Conn = await WsConn.open(run.ws_url, run.token if header_auth else None)
        else:
            conn = await SocketConn.open(run.socket_path)
            if run.record is not None:
                conn.record = (run.record / f"{label}.bin").open("wb")
    except (OSError, TimeoutError) as exc:
        if run.daemon.is_running():
            stats.violation(f"[{label}] cannot connect: {exc!r}")
        return False
    stats.connections += 1
    reader = asyncio.create_task(conn.read_loop(oracle))
    init: dict[str, Any] = {"protocolVersion": 1}
    if websocket and not header_auth:
        init["authToken"] = run.token
    first = gen.call_with_id("initialize", "initialize", _j(init), RESULT)
    oracle.expect(first)
    run.count(1)
    length = rng.choice([rng.randint(20, 400), rng.randint(400, 4000)])
    closing: Frame | None = None
    hung = False
    try:
        await conn.write([first])
        sent = 0
        while sent < length and closing is None and not run.stop:
            if oracle.outstanding >= WINDOW:
                if not await wait_progress(run, oracle, conn):
                    hung = True
                    break
                continue
            want = min(rng.randint(1, 48), WINDOW - oracle.outstanding, length - sent)
            n = run.take(want)
            if n == 0:
                break
            batch: list[Frame] = []
            for _ in range(n):
                frame = gen.next()
                stats.classes[frame.cls] += 1
                oracle.expect(frame)
                batch.append(frame)
                if frame.oversize:
                    closing = frame
                    break
            if len(batch) < n:
                run.budget += n - len(batch)
            run.count(len(batch))
            sent += len(batch)
            if conn.eof:
                break
            await conn.write(batch)
        half_closed = False
        if closing is None and not hung and not conn.eof and rng.random() < 0.3:
            half_closed = await conn.finish_writing()  # R-WIRE-9: every answer still comes, then EOF
        while not hung and oracle.outstanding > 0 and not conn.eof:
            if not await wait_progress(run, oracle, conn):
                hung = True
        if not hung and oracle.outstanding > 0:  # EOF with answers owed
            await asyncio.sleep(0)  # answers already buffered were handed over before eof was set
            if oracle.outstanding > 0:
                owed = oracle.oldest()
                what = f"{owed[1].cls} frame {_clip(owed[1].data, 200)}" if owed else "?"
                if run.daemon.is_running():
                    end = "oversize frame" if closing is not None else "half-close" if half_closed else "no end"
                    stats.violation(
                        f"[{label}] connection closed ({end} sent) with {oracle.outstanding} answers owed, e.g. for "
                        f"{what} (R-WIRE-5)"
                    )
        if not hung and (closing is not None or half_closed):
            # the daemon must close now: after an oversize frame (R-WIRE-2) or a half-close (R-WIRE-9)
            try:
                await asyncio.wait_for(asyncio.shield(reader), run.hang_timeout)
            except TimeoutError:
                stats.hangs += 1
                why = "oversize frame" if closing is not None else "half-close"
                stats.violation(f"[{label}] connection still open {run.hang_timeout:g} s after the {why}")
            if closing is not None:
                stats.oversize_closes += 1
                if websocket and conn.close_code != 1009:
                    stats.violation(
                        f"[{label}] oversize WebSocket message closed with {conn.close_code}, not 1009 (R-WIRE-2)"
                    )
        elif not hung and closing is None and not conn.eof and rng.random() < 0.2:
            await asyncio.sleep(0.05)  # quiet period: nothing more may arrive (answers to silent frames)
        if not hung and closing is None and not half_closed and conn.eof and run.daemon.is_running():
            stats.violation(f"[{label}] the daemon closed a connection that must stay usable")
    except (ConnectionResetError, BrokenPipeError) as exc:
        if closing is None and run.daemon.is_running():
            stats.violation(f"[{label}] connection dropped by the daemon: {exc!r}")
    except Exception as exc:  # websockets' ConnectionClosed while sending, etc.
        if closing is None and run.daemon.is_running() and type(exc).__name__.startswith("ConnectionClosed"):
            stats.violation(f"[{label}] connection dropped by the daemon: {exc!r}")
        elif type(exc).__name__.startswith("ConnectionClosed"):
            pass
        else:
            raise
    finally:
        await conn.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(reader, 2)
        if not reader.done():
            reader.cancel()
    return run.daemon.is_running()


async def wait_progress(run: Run, oracle: Oracle, conn: Conn) -> bool:
    """Wait for the next answer; False (a hang, recorded) when the oldest owed answer is older than the timeout."""
    while True:
        oracle.progress.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(oracle.progress.wait(), 1.0)
            return True
        if not run.daemon.is_running():
            run.stop = True
            return False
        oldest = oracle.oldest()
        if oldest is not None and time.monotonic() - oldest[0] > run.hang_timeout:
            run.stats.hangs += 1
            frame = oldest[1]
            run.stats.violation(
                f"[{oracle.label}] no answer within {run.hang_timeout:g} s for {frame.cls} frame "
                f"{_clip(frame.data, 200)} ({oracle.outstanding} owed)"
            )
            return False
        if conn.eof:
            return True


# ------------------------------------------------------------------------------------------------ run


@dataclass
class FuzzResult:
    stats: Stats
    seed: int
    elapsed: float
    rss_before: int
    rss_after: int
    rss_peak: int
    stopped_early: bool

    @property
    def rss_growth(self) -> int:
        return self.rss_after - self.rss_before

    @property
    def ok(self) -> bool:
        return self.stats.violations == 0 and self.stats.crashes == 0 and self.stats.hangs == 0

    def summary(self) -> str:
        s = self.stats
        return (
            f"fuzz: frames={s.frames} requests={s.requests} answers={s.answers} violations={s.violations} "
            f"crashes={s.crashes} hangs={s.hangs} rss_growth={self.rss_growth / MIB:.1f}MiB "
            f"rss_peak={self.rss_peak / MIB:.1f}MiB connections={s.connections} oversize_closes={s.oversize_closes} "
            f"elapsed={self.elapsed:.1f}s seed={self.seed}" + (" stopped=time-limit" if self.stopped_early else "")
        )


async def pair(daemon: Daemon) -> str:
    async with await daemon.client() as c:
        token: str = (await c.call("pairing/create", {"user": USER}))["token"]
    return token


async def run_fuzz(
    factory: DaemonFactory,
    *,
    frames: int,
    seed: int,
    peers: int = 6,
    ws_peers: int = 2,
    time_limit: float = 600.0,
    hang_timeout: float = 30.0,
    log_level: str = "info",
    record: Path | None = None,
) -> FuzzResult:
    """Start a daemon with `factory`, fuzz it, and return what happened (the daemon is left to the factory)."""
    gateway = ws_peers > 0
    args = ["--log-level", log_level] + (["--gateway-port", "0"] if gateway else [])
    daemon = factory.start(CONFIG, no_gateway=not gateway, args=args)
    ws_url = None
    if gateway:
        assert daemon.ready_line is not None
        m = READY_RE.match(daemon.ready_line)
        assert m is not None and m["gateway"] != "off", daemon.ready_line
        ws_url = "ws" + m["gateway"].removeprefix("http") + "/rpc"
    started = time.monotonic()
    stats = Stats()
    run = Run(
        daemon=daemon,
        socket_path=str(daemon.socket_path),
        ws_url=ws_url,
        token=await pair(daemon),
        stats=stats,
        budget=frames,
        deadline=started + time_limit,
        hang_timeout=hang_timeout,
        warmup=min(5000, max(1, frames // 10)),
        record=record,
    )
    tasks = [run_peer(run, i, False, seed) for i in range(peers)] + [
        run_peer(run, i, True, seed) for i in range(ws_peers)
    ]
    try:
        await asyncio.wait_for(asyncio.gather(*tasks), time_limit + 4 * hang_timeout + 30)
    except TimeoutError:
        stats.hangs += 1
        stats.violation("the run did not finish within the time limit plus the hang timeout")
    elapsed = time.monotonic() - started
    stopped_early = run.budget > 0 and not run.stop
    rss_before = run.rss_before or 0
    rss_after = rss_peak = 0
    if daemon.is_running():
        await asyncio.sleep(0.5)  # let closed connections be torn down
        rss_after = daemon.proc_status("VmRSS")
        rss_peak = daemon.proc_status("VmHWM")
        if rss_before == 0:
            rss_before = rss_after
    else:
        stats.crashes = 1
    if stats.crashes:
        stats.violation(f"the daemon exited: {daemon.describe()[-2000:]}")
    leaked = [line for line in list(daemon.stderr_lines) if SECRET in line]
    if leaked:
        stats.violation(f"{len(leaked)} daemon log lines contain a params value (R-SEC-6), e.g. {leaked[0][:300]!r}")
    return FuzzResult(stats, seed, elapsed, rss_before, rss_after, rss_peak, stopped_early)


async def _main(args: argparse.Namespace) -> int:
    seed = args.seed if args.seed is not None else int(time.time())
    factory = DaemonFactory()
    try:
        result = await run_fuzz(
            factory,
            frames=args.frames,
            seed=seed,
            peers=args.peers,
            ws_peers=args.ws_peers,
            time_limit=args.time_limit,
            hang_timeout=args.hang_timeout,
            log_level=args.log_level,
            record=args.record,
        )
    finally:
        factory.close()
    for line in result.stats.details:
        print(f"violation: {line}", flush=True)
    for kind, count in result.stats.kinds.most_common():
        print(f"violations of kind {kind!r}: {count}", flush=True)
    if args.verbose:
        print("classes: " + " ".join(f"{k}={v}" for k, v in sorted(result.stats.classes.items())))
    print(result.summary(), flush=True)
    return 0 if result.ok else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=1_000_000, help="frames to send in all (default 1,000,000)")
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: the clock)")
    parser.add_argument("--time-limit", type=float, default=600.0, help="stop sending after this many seconds")
    parser.add_argument("--peers", type=int, default=6, help="Unix-socket peers at once (default 6)")
    parser.add_argument("--ws-peers", type=int, default=2, help="WebSocket peers at once (default 2; 0 = no gateway)")
    parser.add_argument("--hang-timeout", type=float, default=30.0, help="an answer later than this is a hang")
    parser.add_argument("--log-level", default="info", help="the daemon's --log-level (default info)")
    parser.add_argument("--record", type=Path, default=None, help="write each socket peer's bytes to DIR/<peer>.bin")
    parser.add_argument("-v", "--verbose", action="store_true", help="also print frames per class")
    args = parser.parse_args(argv)
    return asyncio.run(_main(args))


if __name__ == "__main__":
    sys.exit(main())
