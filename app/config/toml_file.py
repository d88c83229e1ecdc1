"""config.toml on disk (R-CFG-5, R-PATH-1): load it, keep a tomlkit document of it to edit, save it atomically.

Keeping the parsed document (not a dict) is what preserves the user's comments, layout and unknown keys:
staging edits that document in place and `save` writes its text back. Loading reads the file with the standard
library's `tomllib` (the start path: tomlkit's import and parse cost ~10 ms, issue 15); the document is parsed from
the same bytes by the first write (`parse`).

Atomic save: a temp file in the same directory, created 0600, is written, flushed and fsynced, then
`os.replace`d over config.toml and the directory is fsynced. A crash at any moment leaves either the old or
the new file, never a torn one (at worst a stray `.config.toml.*.tmp`, which is ignored). Nothing here logs
a value: errors name key paths, lines and columns only.
"""

from __future__ import annotations

import logging
import os
import re
import tempfile
import tomllib
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.config import props
from app.config.errors import ConfigFileError, ConfigWriteError, FieldError, InvalidValue
from app.config.schema import Config, dangling_references

if TYPE_CHECKING:
    from tomlkit import TOMLDocument

# tomlkit is imported by the functions that parse or write a document: a start reads the file with
# tomllib and never loads it (docs/operations.md, "Fast start").

__all__ = [
    "CONFIG_FILE_NAME",
    "Loaded",
    "copy_document",
    "load",
    "loads",
    "parse",
    "read_data",
    "read_raw",
    "render",
    "save",
    "validate",
]

log = logging.getLogger(__name__)

CONFIG_FILE_NAME = "config.toml"


@dataclass(frozen=True)
class Loaded:
    raw: bytes | None  # the bytes read (None: no file), to notice edits made behind the daemon's back
    data: dict[str, Any]  # what the file holds as plain data, unknown keys included ({}: no file)
    config: Config
    unknown_keys: tuple[str, ...]


def read_raw(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


# tomllib's message: "<reason> (at line L, column C)" or "<reason> (at end of document)".
_AT = re.compile(r"^(?P<reason>.+?) \(at (?:line (?P<line>\d+), column (?P<col>\d+)|end of document)\)$", re.S)


def _text(raw: bytes) -> str:
    try:
        return raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError:
        raise ConfigFileError("not valid UTF-8") from None


def read_data(raw: bytes) -> dict[str, Any]:
    """The file's content as plain data (`tomllib`); raises `ConfigFileError` naming a line and column only."""
    try:
        return tomllib.loads(_text(raw))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigFileError(_toml_error(str(exc))) from None


def _toml_error(message: str) -> str:
    """`invalid TOML at line L, column C: <tomllib's reason>`. Its reasons quote at most a key or a control
    character, never a value; a message of another shape is not repeated (it might)."""
    match = _AT.match(message)
    if match is None:
        return "invalid TOML"
    where = f"at line {match['line']}, column {match['col']}" if match["line"] else "at the end of the file"
    return f"invalid TOML {where}: {match['reason']}"


def parse(raw: bytes | None, path: Path) -> TOMLDocument:
    """The document for `raw` (an empty one when there is no file); raises `ConfigFileError`."""
    import tomlkit
    from tomlkit.exceptions import ParseError, TOMLKitError

    if raw is None:
        return tomlkit.document()
    text = _text(raw)
    try:
        return tomlkit.parse(text)
    except ParseError as exc:
        # tomlkit's own message quotes the offending character; line and column are enough.
        raise ConfigFileError(f"invalid TOML at line {exc.line}, column {exc.col}") from None
    except TOMLKitError as exc:
        raise ConfigFileError(f"invalid TOML ({type(exc).__name__})") from None


def validate(doc: TOMLDocument) -> tuple[Config, list[str]]:
    """Validate the keys the schema knows; return the config and the dotted paths of keys it ignored."""
    return _validate_data(doc.unwrap())


def _validate_data(data: dict[str, object]) -> tuple[Config, list[str]]:
    known, unknown = props.split_known(data)
    return props.validate_data(known), unknown


def loads(raw: bytes | None, path: Path) -> Loaded:
    """Parse and validate the whole of `raw` (None = no file = all defaults); raises `ConfigFileError`.

    The messages never name `path` (whoever reports the error names it once) nor any value.
    """
    data = read_data(raw) if raw is not None else {}  # no file: the defaults, validated like any file
    try:
        config, unknown = _validate_data(data)
    except InvalidValue as exc:
        # Field paths and the validator's messages only: a one-line error that never shows a value.
        detail = "; ".join(f"{e['field'] or '(root)'}: {e['message']}" for e in exc.errors)
        raise ConfigFileError(f"invalid settings: {detail}", exc.errors) from None
    return Loaded(raw, data, config, tuple(unknown))


def load(path: Path) -> Loaded:
    """Read `path` (absent = all defaults). Unknown keys are kept in the document and logged by name; names that
    point at no entry (`schema.dangling_references`) are logged too."""
    loaded = loads(read_raw(path), path)
    if loaded.unknown_keys:
        log.warning("%s: ignoring unknown keys (kept in the file): %s", path, ", ".join(loaded.unknown_keys))
    for reference in dangling_references(loaded.config):
        log.warning("%s: %s", path, reference)
    return loaded


def copy_document(doc: TOMLDocument) -> TOMLDocument:
    """An independent copy to stage into; re-parsing our own output is exact and shares no items."""
    import tomlkit

    return tomlkit.parse(doc.as_string())


def render(doc: TOMLDocument, expected: Config) -> str:
    """The text to write, checked to read back as `expected` (guards against any TOML layout surprise)."""
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    text = doc.as_string()
    try:
        reread, _ = validate(tomlkit.parse(text))
    except (TOMLKitError, InvalidValue):
        reread = None
    if reread != expected:
        raise ConfigWriteError(
            "the new config.toml would not read back as written",
            [FieldError(field="", message="round trip failed", type="config_write_failed")],
        )
    return text


def save(path: Path, text: str) -> None:
    """Replace `path` with `text` atomically, mode 0600. Raises OSError, leaving `path` as it was.

    A symlinked config.toml (dotfile managers) is written through: its target is replaced, the link stays.
    """
    target = Path(os.path.realpath(path))
    directory = target.parent
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    # mkstemp: O_EXCL, mode 0600 whatever the umask, so there is no window with wider permissions.
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    try:
        with open(fd, "wb") as fh:
            if hasattr(os, "fchmod"):
                os.fchmod(fh.fileno(), 0o600)
            fh.write(text.encode("utf-8"))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(directory)


def _fsync_dir(directory: Path) -> None:
    """Make the rename durable. Best effort: the new file is already in place and the live config must match
    it, so a failure here is logged, not raised (Windows has no directory fsync at all)."""
    if os.name == "nt":
        return
    try:
        dfd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError as exc:
        log.warning("fsync of the config directory failed (errno %s); the file was replaced", exc.errno)
