"""The audit log (R-SEC-3): lines written in order by its own thread, all of them by `close()`, and a failing disk
loses lines, never the daemon."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import orjson
import pytest

from app.audit import AuditLog


@pytest.mark.req("R-SEC-3")
def test_lines_are_written_in_order_and_close_writes_every_one(tmp_path: Path) -> None:
    path = tmp_path / "logs" / "audit.log"
    audit = AuditLog(path)
    for i in range(500):
        audit.record("connect", f"unix:pid={i},uid=0", None)
    audit.close()
    entries = [orjson.loads(line) for line in path.read_text().splitlines()]
    assert [e["peer"] for e in entries] == [f"unix:pid={i},uid=0" for i in range(500)]
    assert set(entries[0]) == {"time", "event", "peer", "principal"}
    assert path.stat().st_mode & 0o777 == 0o600


@pytest.mark.req("R-SEC-3")
def test_flush_waits_for_what_was_recorded(tmp_path: Path) -> None:
    path = tmp_path / "audit.log"
    audit = AuditLog(path)
    try:
        audit.record("denied", "ws:127.0.0.1:5", "user:a")
        assert audit.flush(timeout=5)
        assert orjson.loads(path.read_text())["event"] == "denied"
    finally:
        audit.close()


@pytest.mark.req("R-SEC-3")
def test_the_file_is_written_by_its_own_thread_not_the_callers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import app.audit

    writers: list[str] = []
    real_write = app.audit.os.write

    def spy(fd: int, data: bytes) -> int:
        writers.append(threading.current_thread().name)
        return real_write(fd, data)

    monkeypatch.setattr(app.audit.os, "write", spy)
    audit = AuditLog(tmp_path / "audit.log")
    audit.record("connect", "unix:pid=1,uid=0", None)
    audit.close()
    assert writers == ["zeroclaw-audit"]


@pytest.mark.req("R-SEC-3")
def test_a_full_disk_loses_lines_not_the_daemon(caplog: pytest.LogCaptureFixture) -> None:
    audit = AuditLog(Path("/dev/full"))  # every write fails with ENOSPC
    with caplog.at_level(logging.ERROR, logger="zeroclaw.audit"):
        for _ in range(3):
            audit.record("connect", "unix:pid=1,uid=0", None)  # never raises to the caller
        audit.flush(timeout=5)
        audit.close()
    failures = [r for r in caplog.records if "could not write the audit log" in r.getMessage()]
    assert len(failures) == 1  # said once per failing run, not once per line


@pytest.mark.req("R-SEC-3")
def test_lines_recorded_together_reach_the_file_in_one_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # One wake-up of the writer thread per burst, not per line: a connect cycle records three lines.
    import app.audit

    writes: list[bytes] = []
    real_write = app.audit.os.write

    def spy(fd: int, data: bytes) -> int:
        writes.append(bytes(data))
        return real_write(fd, data)

    monkeypatch.setattr(app.audit.os, "write", spy)
    path = tmp_path / "audit.log"
    audit = AuditLog(path)
    for cycle in range(2):
        for event in ("connect", "initialize", "disconnect"):
            audit.record(event, f"unix:pid={cycle},uid=0", None)
        assert audit.flush(timeout=5)
    audit.close()
    assert [len(data.splitlines()) for data in writes] == [3, 3]
    entries = [orjson.loads(line) for line in path.read_text().splitlines()]
    assert [(e["event"], e["peer"]) for e in entries] == [
        (event, f"unix:pid={cycle},uid=0") for cycle in range(2) for event in ("connect", "initialize", "disconnect")
    ]
