"""Edits to config.toml while the daemon runs (R-CFG-6): `ConfigStore.reload`, `props.diff`, `ConfigWatcher`."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Sequence
from pathlib import Path

import pytest
from waiting import until

from app.config import props, toml_file
from app.config.errors import ConfigConflict, ConfigFileError
from app.config.reload import ConfigWatcher, signature
from app.config.schema import Config
from app.config.store import ConfigStore

pytestmark = pytest.mark.req("R-CFG-6")

SECRET = "sk-unit-SECRET-7777-do-not-log"
BAD_VALUE = "VALUE-THAT-MUST-NOT-BE-LOGGED"

BASE = f"""\
# hand-written
[daemon]
config_poll_secs = 0.05

[limits]
max_sessions = 10  # small on purpose

[providers.cloud]
kind = "openai"
api_key = "{SECRET}"
"""

WITH_USER = (
    BASE
    + """
[users.me]
permission_profiles = ["admin"]

[permission_profiles.admin]
admin = true
"""
)


def allow(props: Sequence[str]) -> None:
    return None


@pytest.fixture
def store(tmp_path: Path) -> ConfigStore:
    (tmp_path / "config.toml").write_text(BASE)
    return ConfigStore(tmp_path)


def edit(store: ConfigStore, text: str) -> None:
    """What an editor does: a new file renamed over the old one (a new inode, so the change is always seen)."""
    tmp = store.path.with_name("edit.tmp")
    tmp.write_text(text)
    os.replace(tmp, store.path)


# -- props.diff ----------------------------------------------------------------------------------------------


def _config(text: str) -> Config:
    return toml_file.loads(text.encode(), Path("config.toml")).config


def test_diff_names_changed_leaves_and_whole_entries() -> None:
    old = _config(BASE)
    new = _config(WITH_USER.replace("max_sessions = 10", "max_sessions = 11"))
    assert props.diff(old, new) == ["limits.max_sessions", "permission_profiles.admin", "users.me"]
    assert props.diff(new, old) == ["limits.max_sessions", "permission_profiles.admin", "users.me"]
    assert props.diff(old, _config(BASE + "\n# only a comment\n")) == []


def test_diff_sees_a_secret_change_without_showing_it() -> None:
    changed = props.diff(_config(BASE), _config(BASE.replace(SECRET, SECRET + "x")))
    assert changed == ["providers.cloud.api_key"]


# -- ConfigStore.reload --------------------------------------------------------------------------------------


async def test_a_valid_edit_is_installed_like_set_many_without_writing(store: ConfigStore) -> None:
    seen: list[tuple[Config, Config]] = []
    store.on_commit(lambda old, new: seen.append((old, new)))
    gen, policy_gen = store.generation, store.policy_generation
    edit(store, WITH_USER)
    before = store.path.read_bytes()
    stat_before = store.path.stat()
    result = await store.reload()
    assert result.changed == ("permission_profiles.admin", "users.me") and result.file_changed
    assert store.current.users["me"].permission_profiles == ["admin"]
    assert store.current.permission_profiles["admin"].admin is True
    assert (store.generation, store.policy_generation) == (gen + 1, policy_gen + 1)
    assert len(seen) == 1 and seen[0][1] is store.current and "me" not in seen[0][0].users
    # the file is the source: it is read, never rewritten
    assert store.path.read_bytes() == before and store.path.stat().st_mtime_ns == stat_before.st_mtime_ns


async def test_a_limits_edit_does_not_move_the_policy_generation(store: ConfigStore) -> None:
    policy_gen = store.policy_generation
    edit(store, BASE.replace("max_sessions = 10", "max_sessions = 12"))
    assert (await store.reload()).changed == ("limits.max_sessions",)
    assert store.current.limits.max_sessions == 12
    assert store.policy_generation == policy_gen


async def test_after_our_own_write_a_reload_is_a_no_op(store: ConfigStore) -> None:
    seen: list[object] = []
    store.on_commit(lambda old, new: seen.append(new))
    await store.set("limits.max_sessions", 11, authorize=allow)
    gen = store.generation
    result = await store.reload()
    assert not result.file_changed and result.changed == ()
    assert store.generation == gen and len(seen) == 1 and store.current.limits.max_sessions == 11


async def test_a_comment_only_edit_changes_nothing_and_later_writes_keep_it(store: ConfigStore) -> None:
    gen = store.generation
    edit(store, "# a new comment from the editor\n" + BASE)
    result = await store.reload()
    assert result.file_changed and result.changed == () and store.generation == gen
    # the store now holds the edited text, so a write is not a conflict and keeps the new comment
    await store.set("limits.max_sessions", 13, authorize=allow)
    text = store.path.read_text()
    assert text.startswith("# a new comment from the editor\n") and "max_sessions = 13" in text


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (BASE + "\n[limits\nmax_sessions = 20\n", "invalid TOML at line"),
        (BASE.replace("max_sessions = 10", f'max_sessions = "{BAD_VALUE}"'), "limits.max_sessions"),
        (BASE.replace(f'"{SECRET}"', "[1, 2]"), "providers.cloud.api_key"),
    ],
    ids=["bad_toml", "wrong_type", "secret_wrong_type"],
)
async def test_an_invalid_file_changes_nothing(store: ConfigStore, text: str, reason: str) -> None:
    current, gen, doc_text = store.current, store.generation, toml_file.copy_document(store._doc).as_string()
    edit(store, text)
    with pytest.raises(ConfigFileError) as info:
        await store.reload()
    message = info.value.message
    assert reason in message and str(store.path) not in message  # whoever reports it names the path, once
    assert SECRET not in message and BAD_VALUE not in message
    assert store.current is current and store.generation == gen
    assert store._doc.as_string() == doc_text
    # the user's broken file is never overwritten by a write either
    with pytest.raises(ConfigConflict):
        await store.set("limits.max_sessions", 3, authorize=allow)
    assert store.path.read_text() == text
    # fixing it is enough
    edit(store, BASE.replace("max_sessions = 10", "max_sessions = 21"))
    assert (await store.reload()).changed == ("limits.max_sessions",)
    assert store.current.limits.max_sessions == 21


async def test_new_unknown_keys_are_kept_and_logged_by_name_only(
    store: ConfigStore, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="app.config")
    edit(store, BASE + f'\n[plugins.weather]\ntoken = "{BAD_VALUE}"\n')
    assert (await store.reload()).changed == ()
    assert "plugins" in caplog.text and BAD_VALUE not in caplog.text
    assert store.unknown_keys == ("plugins",)
    await store.set("limits.max_sessions", 15, authorize=allow)
    assert f'token = "{BAD_VALUE}"' in store.path.read_text()  # kept verbatim across a write


async def test_a_deleted_file_keeps_the_running_config_and_the_next_write_recreates_it(store: ConfigStore) -> None:
    await store.set("limits.max_sessions", 14, authorize=allow)
    store.path.unlink()
    gen = store.generation
    result = await store.reload()
    assert result.missing and result.file_changed and result.changed == ()
    assert store.current.limits.max_sessions == 14 and store.generation == gen
    assert (await store.reload()).file_changed is False  # reported once
    await store.set("limits.max_uploads_per_connection", 2, authorize=allow)
    text = store.path.read_text()
    assert "max_sessions = 14" in text and "max_uploads_per_connection = 2" in text and "# hand-written" in text


async def test_a_recreated_file_is_loaded(store: ConfigStore) -> None:
    store.path.unlink()
    await store.reload()
    edit(store, WITH_USER)
    assert (await store.reload()).changed == ("permission_profiles.admin", "users.me")


async def test_reload_waits_for_the_write_lock(store: ConfigStore) -> None:
    edit(store, WITH_USER)
    async with store.write_lock:
        task = asyncio.create_task(store.reload())
        await asyncio.sleep(0.05)  # a window in which a reload that did not wait would finish
        assert not task.done() and "me" not in store.current.users
    await asyncio.wait_for(task, 2)
    assert "me" in store.current.users


def test_load_errors_do_not_name_the_path(tmp_path: Path) -> None:
    # issue 13 §4: the daemon and the CLI prefix the path; the message must not repeat it
    (tmp_path / "config.toml").write_text("[limits]\nmax_sessions = 'x'\n")
    with pytest.raises(ConfigFileError) as info:
        ConfigStore(tmp_path)
    assert info.value.message.startswith("invalid settings: limits.max_sessions")
    (tmp_path / "config.toml").write_text("[limits\n")
    with pytest.raises(ConfigFileError) as info:
        ConfigStore(tmp_path)
    assert info.value.message.startswith("invalid TOML at line 1")
    assert str(tmp_path) not in info.value.message


# -- ConfigWatcher -------------------------------------------------------------------------------------------


def test_signature_moves_with_an_edit_and_is_none_without_a_file(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    assert signature(path) is None
    path.write_text("a = 1\n")
    first = signature(path)
    path.write_text("a = 22\n")
    assert signature(path) not in (None, first)


async def test_check_reloads_only_when_the_file_moved(store: ConfigStore) -> None:
    watcher = ConfigWatcher(store, settle=0.01)
    first = await watcher.check()  # the first look always compares the bytes: an edit made at start-up counts
    assert first is not None and not first.file_changed
    assert await watcher.check() is None
    edit(store, WITH_USER)
    result = await watcher.check()
    assert result is not None and result.changed == ("permission_profiles.admin", "users.me")
    assert await watcher.check() is None


async def test_a_forced_check_reloads_even_when_the_file_looks_unchanged(store: ConfigStore) -> None:
    watcher = ConfigWatcher(store, settle=0.01)
    await watcher.check()
    # same size, mtime put back (a coarse-timestamp file system): a forced check compares the bytes anyway
    stat = store.path.stat()
    text = BASE.replace("max_sessions = 10", "max_sessions = 19")
    store.path.write_text(text)
    os.utime(store.path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    result = await watcher.check(forced=True)
    assert result is not None and result.changed == ("limits.max_sessions",)


async def test_an_invalid_file_is_logged_once_with_path_and_field_never_a_value(
    store: ConfigStore, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="app.config")
    watcher = ConfigWatcher(store, settle=0.01)
    await watcher.check()
    edit(store, BASE.replace("max_sessions = 10", f'max_sessions = "{BAD_VALUE}"'))
    assert await watcher.check() is None
    assert await watcher.check() is None
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1, errors
    assert str(store.path) in errors[0] and "limits.max_sessions" in errors[0]
    assert errors[0].count(str(store.path)) == 1
    assert SECRET not in caplog.text and BAD_VALUE not in caplog.text
    assert store.current.limits.max_sessions == 10


async def test_the_running_watcher_picks_up_edits_and_the_last_of_two_quick_ones(
    store: ConfigStore, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="app.config")
    watcher = ConfigWatcher(store, settle=0.02)
    async with watcher.running():
        edit(store, BASE.replace("max_sessions = 10", "max_sessions = 30"))
        edit(store, BASE.replace("max_sessions = 10", "max_sessions = 31"))
        await until(lambda: store.current.limits.max_sessions == 31)
        # a partial write caught in the middle is refused, the finished file is then loaded
        store.path.write_text(WITH_USER[: WITH_USER.index("[permission_profiles.admin]") + 10])
        await until(lambda: any("not loaded" in r.getMessage() for r in caplog.records))
        assert "me" not in store.current.users and store.current.limits.max_sessions == 31
        store.path.write_text(WITH_USER)
        await until(lambda: "me" in store.current.users)
        assert store.current.limits.max_sessions == 10


async def test_request_reloads_at_once_even_with_the_poll_off(store: ConfigStore) -> None:
    edit(store, BASE.replace("config_poll_secs = 0.05", "config_poll_secs = 0"))
    await store.reload()
    watcher = ConfigWatcher(store, settle=0.01)
    async with watcher.running():
        edit(store, BASE.replace("config_poll_secs = 0.05", "config_poll_secs = 0").replace("= 10", "= 40"))
        await asyncio.sleep(0.3)  # a window of 6 poll periods (0.05 s, were the poll on)
        assert store.current.limits.max_sessions == 10  # no poll
        watcher.request()
        await until(lambda: store.current.limits.max_sessions == 40)
