"""The chunk state machine of one staged upload (R-FILE-2), on both staging backends."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.files.budget import UploadBudget
from app.files.errors import InvalidUpload
from app.files.staging import FileStaging, MemoryStaging, StagedUpload, Staging

CHUNK = 8


@pytest.fixture(params=["memory", "file"])
def staging(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Staging]:
    backend: Staging = MemoryStaging() if request.param == "memory" else FileStaging(tmp_path)
    yield backend
    backend.close()


def make(staging: Staging, size: int) -> StagedUpload:
    charge = UploadBudget(lambda: 10**9).charge(size)
    assert charge is not None
    return StagedUpload(
        upload_id="up_1",
        owner_key=object(),
        binding=None,
        size=size,
        filename=None,
        mime_type=None,
        declared_sha256=None,
        charge=charge,
        staging=staging,
        last_used=0.0,
    )


def snapshot(u: StagedUpload) -> tuple[int, str, bytes]:
    return u.received, u.digest(), u.read_all()


@pytest.mark.req("R-FILE-2")
def test_chunks_in_order_then_complete(staging: Staging) -> None:
    u = make(staging, 20)
    assert u.accept(0, b"a" * 8, chunk_bytes=CHUNK) == (8, True)
    assert u.accept(8, b"b" * 8, chunk_bytes=CHUNK) == (16, True)
    assert not u.complete
    assert u.accept(16, b"c" * 4, chunk_bytes=CHUNK) == (20, True)
    assert u.complete
    assert u.read_all() == b"a" * 8 + b"b" * 8 + b"c" * 4
    assert u.digest() == hashlib.sha256(u.read_all()).hexdigest()


@pytest.mark.req("R-FILE-2")
def test_resending_an_accepted_chunk_is_confirmed_unchanged(staging: Staging) -> None:
    u = make(staging, 20)
    u.accept(0, b"a" * 8, chunk_bytes=CHUNK)
    u.accept(8, b"b" * 8, chunk_bytes=CHUNK)
    before = snapshot(u)
    assert u.accept(0, b"a" * 8, chunk_bytes=CHUNK) == (16, False)
    assert u.accept(8, b"b" * 8, chunk_bytes=CHUNK) == (16, False)
    assert u.accept(4, b"a" * 4 + b"b" * 2, chunk_bytes=CHUNK) == (16, False)  # any accepted range
    assert snapshot(u) == before


@pytest.mark.req("R-FILE-2")
@pytest.mark.parametrize(
    ("offset", "data", "kind"),
    [
        (0, b"x" * 8, "chunk_conflict"),  # different bytes at an accepted offset
        (8, b"b" * 7 + b"X", "chunk_conflict"),
        (12, b"b" * 8, "offset_mismatch"),  # starts inside the received bytes and runs past them
        (17, b"c", "offset_gap"),  # a gap
        (16, b"c" * 5, "beyond_size"),  # bytes beyond size_bytes
        (16, b"c" * 9, "chunk_too_large"),  # more than chunk_bytes
    ],
)
def test_rejected_chunks_leave_the_upload_as_it_was(staging: Staging, offset: int, data: bytes, kind: str) -> None:
    u = make(staging, 20)
    u.accept(0, b"a" * 8, chunk_bytes=CHUNK)
    u.accept(8, b"b" * 8, chunk_bytes=CHUNK)
    before = snapshot(u)
    with pytest.raises(InvalidUpload) as info:
        u.accept(offset, data, chunk_bytes=CHUNK)
    assert info.value.type == kind
    assert snapshot(u) == before
    assert u.accept(16, b"c" * 4, chunk_bytes=CHUNK) == (20, True)  # and it goes on normally
    assert u.read_all() == b"a" * 8 + b"b" * 8 + b"c" * 4


@pytest.mark.req("R-FILE-2")
def test_gap_and_mismatch_tell_where_the_upload_stands(staging: Staging) -> None:
    u = make(staging, 20)
    u.accept(0, b"a" * 8, chunk_bytes=CHUNK)
    with pytest.raises(InvalidUpload) as info:
        u.accept(10, b"b", chunk_bytes=CHUNK)
    assert info.value.field == "offset" and info.value.data["received_bytes"] == 8


def test_empty_upload_and_empty_chunks(staging: Staging) -> None:
    u = make(staging, 0)
    assert u.complete
    assert u.accept(0, b"", chunk_bytes=CHUNK) == (0, False)
    assert u.read_all() == b""
    assert u.digest() == hashlib.sha256(b"").hexdigest()
    with pytest.raises(InvalidUpload):
        u.accept(0, b"x", chunk_bytes=CHUNK)


def test_file_staging_leaves_no_name_on_disk(tmp_path: Path) -> None:
    staging = FileStaging(tmp_path)
    staging.write(0, b"hello")
    staging.write(5, b" world")
    assert staging.read(0, 11) == b"hello world"
    assert staging.read(6, 5) == b"world"
    assert os.listdir(tmp_path) == []  # an anonymous file: nothing to clean up after a crash
    staging.close()
    staging.close()


@pytest.mark.parametrize("kernel_copy", [True, False])
def test_copy_to_writes_the_staged_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kernel_copy: bool) -> None:
    if not kernel_copy:

        def unsupported(*_args: object) -> int:
            raise OSError(18, "cross-device")  # EXDEV: fall back to a buffered copy

        monkeypatch.setattr(os, "copy_file_range", unsupported, raising=False)
    staging = FileStaging(tmp_path)
    payload = os.urandom(3 * 1024 * 1024 + 17)
    staging.write(0, payload)
    target = tmp_path / "out"
    fd = os.open(target, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        staging.copy_to(fd, len(payload))
    finally:
        os.close(fd)
    assert target.read_bytes() == payload
    staging.close()
    sink = os.open(os.devnull, os.O_WRONLY)
    try:
        with pytest.raises(OSError):
            staging.copy_to(sink, 1)  # discarded: never a stale descriptor
    finally:
        os.close(sink)
