"""The live config and its single writer (R-CFG-1..5).

Every write runs the same pipeline under `write_lock`:

    authorize(props) -> stage all ops into one copy of the document -> validate the whole candidate
      -> render + round-trip check -> atomic save -> swap `current` -> on_commit listeners

Anything that fails before the save leaves config.toml byte-identical and `current` untouched, because the
staging happens on a private copy. Authorization runs under the lock and before staging (R-CFG-3), so the
caller's authority is read from the policy in force at that moment: a revocation that committed while this
batch waited for the lock rejects it.

`reload()` (R-CFG-6) installs the file as it is on disk through the same last step (`_install`) and the same
lock, without writing: the file already holds the new config.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.config import props, toml_file
from app.config.errors import (
    ConfigConflict,
    ConfigWriteError,
    FieldError,
    InvalidBatch,
    InvalidConfigRequest,
    InvalidEntry,
    InvalidValue,
)
from app.config.schema import Config, dangling_references

if TYPE_CHECKING:
    from tomlkit import TOMLDocument

__all__ = ["MAX_BATCH", "POLICY_SECTIONS", "Authorize", "CommitListener", "ConfigStore", "Reloaded", "Saver"]

log = logging.getLogger(__name__)

MAX_BATCH = 256
# A commit touching these bumps `policy_generation`: cached principals are re-resolved (R-AUTH-5).
POLICY_SECTIONS = frozenset({"users", "permission_profiles"})

# Called with every requested prop in order (duplicates kept: a position is an entry's index).
# It raises the caller's own Forbidden error, which passes through unchanged. It may be async.
Authorize = Callable[[Sequence[str]], Awaitable[None] | None]
# listener(old, new) after a commit, still under the write lock: listeners see commits in order.
# Synchronous on purpose: installing a view must not be interrupted half-way.
CommitListener = Callable[[Config, Config], None]
Saver = Callable[[Path, str], None]


@dataclass(frozen=True)
class Reloaded:
    """What `ConfigStore.reload` found. `changed`: the props whose value changed (empty when the file holds the
    live config, e.g. only comments were edited); `file_changed`: the bytes differ from those last loaded or
    written; `missing`: there is no config.toml (the live config is kept)."""

    changed: tuple[str, ...] = ()
    file_changed: bool = False
    missing: bool = False


@dataclass(frozen=True)
class _Op:
    prop: str
    value: Any = None
    delete: bool = False


class ConfigStore:
    """The validated live config (`current`) backed by `<config_dir>/config.toml`.

    Reads are lock-free (`current` is swapped whole, never mutated). Writes are serialized by `write_lock`.
    Raises `ConfigFileError` at construction when the file exists but is invalid.
    """

    def __init__(self, config_dir: Path, *, saver: Saver = toml_file.save) -> None:
        self.config_dir = config_dir
        self.path = config_dir / toml_file.CONFIG_FILE_NAME
        loaded = toml_file.load(self.path)
        # The first write parses the document it stages into from `_source` (docs/operations.md, "Fast
        # start"); until then `_plain` is what the file holds.
        self._document: TOMLDocument | None = None
        self._source, self._plain = loaded.raw, loaded.data
        self._raw = loaded.raw
        self.current: Config = loaded.config
        self.unknown_keys = loaded.unknown_keys
        self.generation = 0
        self.policy_generation = 0
        self.write_lock = asyncio.Lock()
        self._listeners: list[CommitListener] = []
        self._save = saver

    @property
    def _doc(self) -> TOMLDocument:
        """The document writes stage into (comments and unknown keys kept); empty when there is no file."""
        if self._document is None:
            self._document = toml_file.parse(self._source, self.path)
        return self._document

    # -- reads ------------------------------------------------------------------------------------

    def get(self, prop: str | None = None) -> Any:
        """Masked JSON for `prop`, or the whole config. Raises `UnknownProp`."""
        return props.get(self.current, prop)

    def written(self) -> dict[str, Any]:
        """What config.toml holds now as plain data (unknown keys included, defaults not): a key here is "set" as
        a settings screen means it (`app.config.sections`). Empty when there is no file yet."""
        if self._document is None:
            return self._plain
        data: dict[str, Any] = self._document.unwrap()
        return data

    def on_commit(self, listener: CommitListener) -> Callable[[], None]:
        """Register `listener(old, new)`; returns a function that unregisters it."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    # -- writes -----------------------------------------------------------------------------------

    async def set(self, prop: str, value: Any, *, authorize: Authorize) -> None:
        """`config/set`: one prop. Errors carry `index=None`."""
        await self._commit([_Op(_checked_prop(prop), value)], authorize, batch=False)

    async def delete(self, prop: str, *, authorize: Authorize) -> None:
        """`config/delete`: reset `prop` to its default, or remove a map entry (`users.example`)."""
        await self._commit([_Op(_checked_prop(prop), delete=True)], authorize, batch=False)

    async def set_many(self, entries: object, *, authorize: Authorize) -> list[str]:
        """`config/set-many` (R-CFG-2): 1..256 `{prop, value}` entries, one commit. Returns the props in
        request order without duplicates. Every entry-level error carries the entry's zero-based `index`."""
        ops = _parse_entries(entries)
        await self._commit(ops, authorize, batch=True)
        return list(dict.fromkeys(op.prop for op in ops))

    async def _commit(self, ops: list[_Op], authorize: Authorize, *, batch: bool) -> None:
        requested = [op.prop for op in ops]
        async with self.write_lock:
            outcome = authorize(requested)
            if inspect.isawaitable(outcome):
                await outcome
            candidate = toml_file.copy_document(self._doc)
            for index, op in enumerate(ops):  # in order: a later entry for a prop overwrites an earlier one
                try:
                    if op.delete:
                        props.apply_delete(candidate, op.prop)
                    else:
                        props.apply_set(candidate, op.prop, op.value)
                except InvalidConfigRequest as exc:
                    exc.index = index if batch else None
                    raise
            new = _validate_candidate(candidate, requested, batch=batch)
            text = toml_file.render(candidate, new)
            # Synchronous on purpose (one small write + fsync): no await between writing the file and swapping
            # `current`, so a cancellation can never leave the two disagreeing.
            self._persist(text)
            # Committed: from here on nothing may fail, the file and `current` must agree.
            self._document, self._raw = candidate, text.encode("utf-8")
            self._install(new, requested, "committed")

    async def reload(self, *, on_change: Callable[[], None] | None = None) -> Reloaded:
        """Install config.toml as it is on disk now (R-CFG-6), as a `config/set-many` of the difference would
        be: same lock, same swap, generations and listeners; the file is not written. Raises `ConfigFileError`
        (the file is invalid) or `OSError` (it can't be read); then nothing changed.

        A missing file keeps the live config (an editor that deletes and re-creates must not reset everything
        for a moment); the next write re-creates the file from it. `on_change` is called first when the bytes
        differ from those last loaded or written (a reload worth telling a service manager about).
        """
        async with self.write_lock:
            raw = toml_file.read_raw(self.path)
            if raw == self._raw:  # our own write, or a touch
                return Reloaded(missing=raw is None)
            if on_change is not None:
                on_change()
            if raw is None:
                self._raw = None
                return Reloaded(file_changed=True, missing=True)
            loaded = toml_file.loads(raw, self.path)  # the whole file, before anything changes
            changed = tuple(props.diff(self.current, loaded.config))
            if fresh := [k for k in loaded.unknown_keys if k not in self.unknown_keys]:
                log.warning("%s: ignoring unknown keys (kept in the file): %s", self.path, ", ".join(fresh))
            self._document, self._source, self._plain = None, raw, loaded.data
            self._raw, self.unknown_keys = raw, loaded.unknown_keys
            if changed:
                self._install(loaded.config, changed, f"reloaded from {self.path}")
            return Reloaded(changed, file_changed=True)

    def _install(self, new: Config, changed: Sequence[str], action: str) -> None:
        """Swap `current`, bump the generations, run the listeners. The caller holds the lock and the file
        already holds `new`."""
        old, self.current = self.current, new
        self.generation += 1
        known = set(dangling_references(old))
        for reference in dangling_references(new):
            if reference not in known:  # a name this change left pointing at nothing (a typo, most often)
                log.warning("%s: %s", self.path, reference)
        if any(p.split(".", 1)[0] in POLICY_SECTIONS for p in changed):
            self.policy_generation += 1
        log.info("config %s: generation=%d props=%s", action, self.generation, ",".join(dict.fromkeys(changed)))
        for listener in tuple(self._listeners):
            try:
                listener(old, new)
            except Exception:
                log.exception("config commit listener failed (the commit stands)")

    def _persist(self, text: str) -> None:
        try:
            on_disk = toml_file.read_raw(self.path)
        except OSError as exc:
            raise ConfigWriteError(f"could not read {self.path}") from exc
        if on_disk != self._raw:
            # Someone edited the file after we loaded it; overwriting would silently drop their edits.
            raise ConfigConflict(
                f"{self.path} changed on disk and is not loaded yet; a valid file is picked up within 2 s, then retry"
            )
        try:
            self._save(self.path, text)
        except OSError as exc:
            log.error("writing %s failed (errno %s); config unchanged", self.path, exc.errno)
            raise ConfigWriteError(f"could not write {self.path}") from exc


def _checked_prop(prop: object) -> str:
    if not isinstance(prop, str):
        raise InvalidConfigRequest(
            "prop must be a string",
            [FieldError(field="prop", message="must be a string", type="string_type")],
        )
    return prop


def _parse_entries(entries: object) -> list[_Op]:
    """Structural checks for `sets`, before the lock; each failure names the entry's index."""
    if not isinstance(entries, (list, tuple)) or not 1 <= len(entries) <= MAX_BATCH:
        raise InvalidBatch(
            f"sets must be an array of 1 to {MAX_BATCH} entries",
            [FieldError(field="sets", message=f"1 to {MAX_BATCH} entries", type="invalid_batch")],
        )
    ops: list[_Op] = []
    for index, entry in enumerate(entries):
        if not isinstance(entry, Mapping):
            raise InvalidEntry(index, "", "entry must be an object {prop, value}")
        for key in entry:
            if key not in ("prop", "value"):
                raise InvalidEntry(index, str(key)[:64], "unexpected key; an entry has only prop and value")
        prop = entry.get("prop")
        if not isinstance(prop, str):
            raise InvalidEntry(index, "prop", "prop is required and must be a string")
        if "value" not in entry:
            raise InvalidEntry(index, "value", "value is required")
        ops.append(_Op(prop, entry["value"]))
    return ops


def _validate_candidate(candidate: TOMLDocument, requested: list[str], *, batch: bool) -> Config:
    """Whole-candidate validation (cross-field rules such as unique uids). Each entry was already checked
    against its field's type, so an error here comes from the combination; it is blamed on the last entry
    whose path overlaps the error's field."""
    try:
        config, _ = toml_file.validate(candidate)
    except InvalidValue as exc:
        blamed = _blame(requested, exc.errors)
        if blamed is not None:
            exc.prop = requested[blamed]
        exc.index = blamed if batch else None
        raise
    return config


def _blame(requested: list[str], errors: list[FieldError]) -> int | None:
    for err in errors:
        field = err["field"]
        for index in range(len(requested) - 1, -1, -1):
            prop = requested[index]
            if not field or prop == field or prop.startswith(field + ".") or field.startswith(prop + "."):
                return index
    return None
