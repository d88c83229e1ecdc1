"""Pure rules of R-FILE-1/2: stored names, the extension rule, markers, and the checks on names and attachments.

Nothing here touches the filesystem or the event loop, so every rule is unit-tested directly.
"""

from __future__ import annotations

import mimetypes
import re
from collections.abc import Mapping
from pathlib import PurePath

from app.files.errors import InvalidUpload

__all__ = [
    "CHUNK_BYTES",
    "MAX_BYTES",
    "MAX_FILENAME_BYTES",
    "UPLOADS_DIR",
    "attachment_marker",
    "check_filename",
    "check_mime",
    "check_sha256",
    "check_size",
    "extension",
    "is_image",
    "marker",
    "mime_for",
    "stored_name",
]

MAX_BYTES = 10_000_000  # per file, after base64 decoding (R-FILE-1)
CHUNK_BYTES = 1_048_576  # per `file/upload/chunk`, decoded (R-FILE-2)
MAX_FILENAME_BYTES = 255  # UTF-8 (R-FILE-4)
MAX_MIME_CHARS = 255
UPLOADS_DIR = "uploads"

_EXT = re.compile(r"[A-Za-z0-9]{1,16}\Z", re.ASCII)
_HEX64 = re.compile(r"[0-9a-fA-F]{64}\Z", re.ASCII)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_MIME = re.compile(r"[A-Za-z0-9!#$&^_.+-]{1,127}/[A-Za-z0-9!#$&^_.+-]{1,127}(\s*;.*)?\Z", re.ASCII)
# Only Python's built-in table (never /etc/mime.types), so a guess is the same on every machine.
_TYPES = mimetypes.MimeTypes(filenames=())
for _ext, _type in ((".webp", "image/webp"), (".avif", "image/avif"), (".heic", "image/heic")):
    _TYPES.add_type(_type, _ext)


def extension(filename: str | None) -> str | None:
    """The lower-cased extension of the filename's last component when it is 1-16 ASCII letters/digits.

    `photo.PNG` → `png`, `a.tar.gz` → `gz`; `.bashrc` (a hidden name, not an extension), `a.`, `a.b-c`,
    `a.ünï` and 17-character extensions give None.
    """
    if not filename:
        return None
    base = filename.replace("\\", "/").rsplit("/", 1)[-1]
    stem, dot, ext = base.lstrip(".").rpartition(".")
    if not dot or not stem or not _EXT.match(ext):
        return None
    return ext.lower()


def stored_name(sha256_hex: str, filename: str | None) -> str:
    """`<sha256hex>[.<ext>]`, the name under `<workspace>/uploads/`."""
    ext = extension(filename)
    return f"{sha256_hex}.{ext}" if ext else sha256_hex


def is_image(mime_type: str | None) -> bool:
    return mime_type is not None and mime_type.strip().lower().startswith("image/")


def mime_for(filename: str | None, mime_type: str | None) -> str | None:
    """The given type, else a guess from the filename (Python's built-in table only), else None."""
    if mime_type:
        return mime_type
    if not filename:
        return None
    guessed, _encoding = _TYPES.guess_type(PurePath(filename.replace("\\", "/")).name, strict=False)
    return guessed


def marker(path: str, filename: str, mime_type: str | None) -> str:
    """`[IMAGE:<path>]` for `image/*`, else `[Document: <filename>] <path>` (R-FILE-1)."""
    if is_image(mime_type):
        return f"[IMAGE:{path}]"
    return f"[Document: {filename}] {path}"


# -- checks (each raises InvalidUpload naming the field, never echoing the value) ------------------


def check_filename(filename: str | None, field: str = "filename") -> str | None:
    """None, or a name of 1..255 UTF-8 bytes without control characters (a newline would forge a marker)."""
    if filename is None:
        return None
    try:
        size = len(filename.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidUpload("filename is not valid Unicode", field=field, type="invalid_filename") from None
    if size > MAX_FILENAME_BYTES:
        raise InvalidUpload(
            f"filename is longer than {MAX_FILENAME_BYTES} UTF-8 bytes",
            field=field,
            type="filename_too_long",
            limit=MAX_FILENAME_BYTES,
        )
    if size == 0 or _CONTROL.search(filename):
        raise InvalidUpload(
            "filename must be non-empty and contain no control characters", field=field, type="invalid_filename"
        )
    return filename


def check_mime(mime_type: str | None, field: str = "mime_type") -> str | None:
    """None, or `type/subtype` (parameters allowed), at most 255 characters."""
    if mime_type is None:
        return None
    if len(mime_type) > MAX_MIME_CHARS or _CONTROL.search(mime_type) or not _MIME.match(mime_type):
        raise InvalidUpload("mime_type must look like type/subtype", field=field, type="invalid_mime_type")
    return mime_type


def check_sha256(value: str | None, field: str = "sha256") -> str | None:
    """None, or 64 hex digits (any case), returned lower-cased."""
    if value is None:
        return None
    if not _HEX64.match(value):
        raise InvalidUpload("sha256 must be 64 hex digits", field=field, type="invalid_sha256")
    return value.lower()


def check_size(size_bytes: int, field: str = "size_bytes") -> int:
    if size_bytes > MAX_BYTES:
        raise InvalidUpload(
            f"the file is larger than {MAX_BYTES} bytes", field=field, type="too_large", limit=MAX_BYTES
        )
    return size_bytes


def attachment_marker(uploads_dir: str, entry: object, field: str) -> str:
    """The marker of one `session/prompt` attachment (a `file/attach` entry), checked against the session.

    The entry must name a stored upload of this session's workspace (`workspace_path` = `<uploads>/<hex>[.<ext>]`
    with `<hex>` from `ref_id`) and carry one of the two marker shapes for exactly that path, so a prompt's
    attachment list cannot smuggle arbitrary text or another directory's path into the prompt.
    """
    if not isinstance(entry, Mapping):
        raise InvalidUpload("an attachment must be a file/attach entry", field=field, type="invalid_attachment")
    ref_id, path, mark = entry.get("ref_id", entry.get("refId")), entry.get("workspace_path"), entry.get("marker")
    if path is None:
        path = entry.get("workspacePath")
    if not isinstance(ref_id, str) or not ref_id.startswith("sha256:") or not _HEX64.match(ref_id[7:]):
        raise InvalidUpload("ref_id must be sha256:<64 hex>", field=f"{field}.ref_id", type="invalid_attachment")
    hex_ = ref_id[7:].lower()
    if not isinstance(path, str) or PurePath(path).parent != PurePath(uploads_dir):
        raise InvalidUpload(
            "workspace_path is not an upload of this session's workspace",
            field=f"{field}.workspace_path",
            type="invalid_attachment",
        )
    name = PurePath(path).name
    stem, dot, ext = name.partition(".")
    if stem != hex_ or (dot and not (_EXT.match(ext) and ext == ext.lower())):
        raise InvalidUpload(
            "workspace_path does not match ref_id", field=f"{field}.workspace_path", type="invalid_attachment"
        )
    if not isinstance(mark, str):
        raise InvalidUpload("marker is required", field=f"{field}.marker", type="invalid_attachment")
    if mark == f"[IMAGE:{path}]":
        return mark
    prefix, suffix = "[Document: ", f"] {path}"
    if mark.startswith(prefix) and mark.endswith(suffix) and len(mark) > len(prefix) + len(suffix):
        shown = mark[len(prefix) : -len(suffix)]
        check_filename(shown, field=f"{field}.marker")
        return mark
    raise InvalidUpload("marker does not match workspace_path", field=f"{field}.marker", type="invalid_attachment")
