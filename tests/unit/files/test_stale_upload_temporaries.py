"""A daemon killed between writing an upload's temporary file and renaming it left the partial bytes in the
workspace's `uploads/` for good (found by benchmarks/kill_kit.py). The next daemon removes them when it first uses
that directory; its own temporary files, and everything else there, stay."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.files import store
from app.files.naming import UPLOADS_DIR


@pytest.mark.req("R-FILE-3")
def test_regression_another_process_s_partial_upload_is_removed_on_first_use(tmp_path: Path) -> None:
    uploads = tmp_path / UPLOADS_DIR
    uploads.mkdir()
    other = f".{'a' * 64}.bin.{'0' * 8 if store._PROCESS_MARK != '0' * 8 else '1' * 8}{'f' * 12}.tmp"
    mine = f".{'b' * 64}.bin.{store._PROCESS_MARK}{'e' * 12}.tmp"
    kept = [f"{'c' * 64}.bin", ".hidden", "notes.tmp", f".x.{'9' * 7}.tmp"]
    for name in (other, mine, *kept):
        (uploads / name).write_bytes(b"partial")
    with store.UploadsDir(tmp_path):
        pass
    assert sorted(p.name for p in uploads.iterdir()) == sorted([mine, *kept])
    (uploads / other).write_bytes(b"again")  # swept once per directory and process: later ones are its own doing
    with store.UploadsDir(tmp_path):
        pass
    assert (uploads / other).exists()


def test_temporary_names_carry_this_process_s_mark(tmp_path: Path) -> None:
    written: list[str] = []

    class Source:
        def copy_to(self, fd: int, size: int) -> None:
            written.extend(p.name for p in (tmp_path / UPLOADS_DIR).iterdir())

    with store.UploadsDir(tmp_path) as directory:
        directory.write("f.bin", store.Payload(0, "", None, None, Source()))  # type: ignore[arg-type]
    (temp,) = written
    found = store._TEMP_RE.match(temp)
    assert found is not None and found.group(1) == store._PROCESS_MARK
    assert [p.name for p in (tmp_path / UPLOADS_DIR).iterdir()] == ["f.bin"]
