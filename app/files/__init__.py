"""Files (SPEC §8): content-addressed per-session uploads in the agent workspace.

* `naming`  — pure rules: stored names, the extension rule, markers, name/hash/size checks, attachment markers;
* `budget`  — the daemon-wide upload budget and its charges;
* `staging` — one staged upload and its chunk state machine, staged in an anonymous temp file (or memory);
* `store`   — the commit step (session lock, re-verification, link-safe write, per-session dedup index);
* `service` — `FileService`, what the surfaces call.

This package never imports the protocol layer: surfaces pass a `Verify` callable and an opaque owner key.
"""

from __future__ import annotations

from app.files.budget import Charge, UploadBudget, metadata_cost
from app.files.errors import FileError, InvalidUpload, StorageFailed, UploadLimit, UploadNotFound
from app.files.naming import CHUNK_BYTES, MAX_BYTES, extension, marker, stored_name
from app.files.service import BeginResult, FileService, IncomingFile, staging_dir_for
from app.files.store import AttachEntry, FileStore, Payload, SessionBinding, Verify

__all__ = [
    "CHUNK_BYTES",
    "MAX_BYTES",
    "AttachEntry",
    "BeginResult",
    "Charge",
    "FileError",
    "FileService",
    "FileStore",
    "IncomingFile",
    "InvalidUpload",
    "Payload",
    "SessionBinding",
    "StorageFailed",
    "UploadBudget",
    "UploadLimit",
    "UploadNotFound",
    "Verify",
    "extension",
    "marker",
    "metadata_cost",
    "staging_dir_for",
    "stored_name",
]
