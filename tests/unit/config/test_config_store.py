"""ConfigStore: set, delete, set-many staging, authorization under the write lock, commit (R-CFG-1..5)."""

from __future__ import annotations

import asyncio
import logging
import stat
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from app.auth.policy import Forbidden, Policy, check_config_write
from app.config.errors import (
    ConfigConflict,
    ConfigWriteError,
    InvalidBatch,
    InvalidEntry,
    InvalidValue,
    UnknownProp,
)
from app.config.schema import Config
from app.config.store import MAX_BATCH, ConfigStore
from app.config.toml_file import save

USER_FILE = """\
# zeroclaw config, hand-written
[limits]
max_connections = 10  # keep this small
future_knob = "kept"  # unknown to this version

[permission_profiles.operator]
grants = { config = ["update"] }
config_write_paths = ["limits.*", "agents.*"]

[users.alice]
uid = 1001
permission_profiles = ["operator"]

[plugins.weather]  # a whole unknown section
enabled = true
"""


def allow(props: Sequence[str]) -> None:
    return None


@pytest.fixture
def store(tmp_path: Path) -> ConfigStore:
    (tmp_path / "config.toml").write_text(USER_FILE)
    return ConfigStore(tmp_path)


def as_user(store: ConfigStore, name: str) -> Callable[[Sequence[str]], None]:
    """The authorize callable an RPC adapter would pass: it reads the policy in force when called."""

    def authorize(props: Sequence[str]) -> None:
        principal = Policy.from_config(store.current).for_user(name)
        assert principal is not None
        check_config_write(principal, props)

    return authorize


# -- set / get / delete ------------------------------------------------------------------------------------


async def test_set_then_get_and_generations(store: ConfigStore) -> None:
    # R-CFG-1
    await store.set("limits.max_connections", 42, authorize=allow)
    assert store.get("limits.max_connections") == 42
    assert store.current.limits.max_connections == 42
    assert (store.generation, store.policy_generation) == (1, 0)
    await store.set("users.bob.uid", 1002, authorize=allow)
    assert (store.generation, store.policy_generation) == (2, 1)
    assert ConfigStore(store.config_dir).current == store.current  # persisted


async def test_comments_and_unknown_keys_survive_a_set(store: ConfigStore) -> None:
    # R-CFG-5
    await store.set("limits.max_connections", 20, authorize=allow)
    expected = USER_FILE.replace("max_connections = 10  #", "max_connections = 20  #")
    assert store.path.read_text() == expected
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600


async def test_new_entries_and_sections_are_appended(store: ConfigStore) -> None:
    await store.set("providers.local.base_url", "http://127.0.0.1:8080", authorize=allow)
    text = store.path.read_text()
    assert text.startswith(USER_FILE)
    assert '[providers.local]\nbase_url = "http://127.0.0.1:8080"\n' in text


async def test_delete_resets_and_removes_entries(store: ConfigStore) -> None:
    # R-CFG-1
    await store.delete("limits.max_connections", authorize=allow)
    assert store.current.limits.max_connections == 1024
    await store.delete("users.alice", authorize=allow)
    assert "alice" not in store.current.users
    assert store.policy_generation == 1
    assert "# zeroclaw config, hand-written" in store.path.read_text()


async def test_secrets_are_masked_and_never_logged(store: ConfigStore, caplog: pytest.LogCaptureFixture) -> None:
    # R-CFG-1, R-CFG-5, R-SEC-6
    with caplog.at_level(logging.DEBUG):
        await store.set("providers.remote", {"kind": "openai", "api_key": "sk-topsecret"}, authorize=allow)
    assert store.get("providers.remote.api_key") == "***"
    assert "sk-topsecret" not in repr(store.get())
    assert "sk-topsecret" not in caplog.text
    assert store.current.providers["remote"].api_key is not None
    assert store.current.providers["remote"].api_key.get_secret_value() == "sk-topsecret"


# -- set-many staging --------------------------------------------------------------------------------------


async def test_set_many_later_entry_wins_and_props_are_deduped_in_order(store: ConfigStore) -> None:
    # R-CFG-2
    writes: list[str] = []

    def counting_saver(path: Path, text: str) -> None:
        writes.append(text)
        save(path, text)

    store._save = counting_saver
    result = await store.set_many(
        [
            {"prop": "users.example.uid", "value": 1500},
            {"prop": "limits.max_connections", "value": 5},
            {"prop": "users.example.uid", "value": 2001},
            {"prop": "users.example.permission_profiles", "value": ["operator"]},
        ],
        authorize=allow,
    )
    assert result == ["users.example.uid", "limits.max_connections", "users.example.permission_profiles"]
    assert store.current.users["example"].uid == 2001
    assert len(writes) == 1 and store.generation == 1  # one persistent commit


async def test_set_many_spec_example(store: ConfigStore) -> None:
    # R-CFG-2: the example from the spec, after creating the profile
    sets = [
        {"prop": "users.example.uid", "value": 1005},
        {"prop": "users.example.permission_profiles", "value": ["operator"]},
    ]
    assert await store.set_many(sets, authorize=allow) == [
        "users.example.uid",
        "users.example.permission_profiles",
    ]


async def test_set_many_accepts_256_and_refuses_257_or_none(store: ConfigStore) -> None:
    # R-CFG-2
    ok = [{"prop": "limits.max_connections", "value": i + 1} for i in range(MAX_BATCH)]
    assert await store.set_many(ok, authorize=allow) == ["limits.max_connections"]
    assert store.current.limits.max_connections == MAX_BATCH
    before = store.path.read_bytes()
    for bad in (ok + ok[:1], [], {"prop": "limits.max_connections", "value": 1}, None):
        with pytest.raises(InvalidBatch) as info:
            await store.set_many(bad, authorize=allow)
        assert info.value.index is None
    assert store.path.read_bytes() == before


GOOD = {"prop": "limits.max_connections", "value": 7}


@pytest.mark.parametrize(
    ("bad", "error", "field"),
    [
        (["limits.max_connections", 7], InvalidEntry, "sets.2"),  # not an object
        ({"prop": "limits.max_connections"}, InvalidEntry, "sets.2.value"),  # missing value
        ({"value": 1}, InvalidEntry, "sets.2.prop"),
        ({"prop": 5, "value": 1}, InvalidEntry, "sets.2.prop"),
        ({"prop": "limits.max_connections", "value": 1, "vlaue": 2}, InvalidEntry, "sets.2.vlaue"),
        ({"prop": "limits.nope", "value": 1}, UnknownProp, "limits.nope"),
        ({"prop": "limits..x", "value": 1}, UnknownProp, "limits..x"),
        ({"prop": "limits.max_connections", "value": "7"}, InvalidValue, "limits.max_connections"),
        ({"prop": "users.alice.uid", "value": -5}, InvalidValue, "users.alice.uid"),
    ],
)
async def test_every_entry_error_names_its_index(
    store: ConfigStore, bad: object, error: type[Exception], field: str
) -> None:
    # R-CFG-2: structural, unknown-prop and value errors all carry the zero-based index
    before = store.path.read_bytes()
    with pytest.raises(error) as info:
        await store.set_many([GOOD, GOOD, bad, GOOD], authorize=allow)
    assert getattr(info.value, "index", None) == 2
    assert getattr(info.value, "errors", [])[0]["field"] == field
    assert store.path.read_bytes() == before and store.generation == 0


async def test_cross_entry_error_is_blamed_on_an_entry(store: ConfigStore) -> None:
    # R-CFG-2: each entry is fine alone; together two users share uid 1001
    sets = [GOOD, {"prop": "users.bob.uid", "value": 1001}]
    with pytest.raises(InvalidValue) as info:
        await store.set_many(sets, authorize=allow)
    assert info.value.index == 1 and info.value.prop == "users.bob.uid"


async def test_unknown_grant_resource_is_blamed_on_its_entry(store: ConfigStore) -> None:
    # R-CFG-2: caught by whole-candidate validation, still named by index
    sets = [GOOD, {"prop": "permission_profiles.operator.grants.cosmos", "value": ["read"]}, GOOD]
    with pytest.raises(InvalidValue) as info:
        await store.set_many(sets, authorize=allow)
    assert info.value.index == 1


async def test_single_set_errors_have_no_index(store: ConfigStore) -> None:
    with pytest.raises(UnknownProp) as info:
        await store.set("limits.nope", 1, authorize=allow)
    assert info.value.index is None


# -- failures change nothing -------------------------------------------------------------------------------


def _failing_saver(path: Path, text: str) -> None:
    raise OSError(28, "No space left on device")


async def test_writer_failure_leaves_file_and_current_unchanged(store: ConfigStore) -> None:
    # R-CFG-2, R-CFG-5
    before_bytes, before_config = store.path.read_bytes(), store.current
    calls: list[Any] = []
    store.on_commit(lambda old, new: calls.append((old, new)))
    store._save = _failing_saver
    with pytest.raises(ConfigWriteError):
        await store.set_many([GOOD, {"prop": "users.x.uid", "value": 5}], authorize=allow)
    assert store.path.read_bytes() == before_bytes
    assert store.current is before_config
    assert (store.generation, store.policy_generation, calls) == (0, 0, [])
    assert [p.name for p in store.config_dir.iterdir()] == ["config.toml"]


async def test_crash_inside_the_real_writer_leaves_file_unchanged(
    store: ConfigStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # R-CFG-5: fail at fsync, after the temp file was written
    before = store.path.read_bytes()

    def no_fsync(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr("app.config.toml_file.os.fsync", no_fsync)
    with pytest.raises(ConfigWriteError):
        await store.set("limits.max_connections", 3, authorize=allow)
    assert store.path.read_bytes() == before and store.current.limits.max_connections == 10


async def test_forbidden_passes_through_unchanged_and_nothing_is_staged(store: ConfigStore) -> None:
    # R-CFG-3: authorization comes before staging, so an unknown prop is not even looked at
    seen: list[list[str]] = []
    denial = Forbidden("no", prop="limits.nope", index=1)

    def deny(props: Sequence[str]) -> None:
        seen.append(list(props))
        raise denial

    before = store.path.read_bytes()
    with pytest.raises(Forbidden) as info:
        await store.set_many([GOOD, {"prop": "limits.nope", "value": 1}, GOOD], authorize=deny)
    assert info.value is denial
    assert seen == [["limits.max_connections", "limits.nope", "limits.max_connections"]]
    assert store.path.read_bytes() == before


async def test_forbidden_entry_rejects_the_whole_batch(store: ConfigStore) -> None:
    # R-CFG-3: alice may write limits.* but not users.*; the allowed first entry is not applied
    with pytest.raises(Forbidden) as info:
        await store.set_many(
            [GOOD, {"prop": "users.alice.permission_profiles", "value": ["admin"]}], authorize=as_user(store, "alice")
        )
    assert (info.value.index, info.value.prop) == (1, "users.alice.permission_profiles")
    assert store.current.limits.max_connections == 10


async def test_missing_config_update_names_the_grant(store: ConfigStore) -> None:
    # R-CFG-3
    await store.set("permission_profiles.operator.grants", {"config": ["read"]}, authorize=allow)
    with pytest.raises(Forbidden) as info:
        await store.set_many([GOOD], authorize=as_user(store, "alice"))
    assert info.value.grant == "config:update" and info.value.index is None


async def test_async_authorize_is_awaited(store: ConfigStore) -> None:
    async def deny(props: Sequence[str]) -> None:
        await asyncio.sleep(0)
        raise Forbidden("no", grant="config:update")

    with pytest.raises(Forbidden):
        await store.set("limits.max_connections", 3, authorize=deny)


async def test_outside_edit_is_never_overwritten(store: ConfigStore) -> None:
    store.path.write_text(USER_FILE + "\n# edited by hand while the daemon runs\n")
    edited = store.path.read_bytes()
    with pytest.raises(ConfigConflict):
        await store.set("limits.max_connections", 3, authorize=allow)
    assert store.path.read_bytes() == edited


# -- listeners (R-CFG-4) -----------------------------------------------------------------------------------


async def test_listeners_run_only_after_the_commit(store: ConfigStore) -> None:
    # R-CFG-4: the view is installed from the committed config, once the file holds it
    seen: list[tuple[int, int, bool, bytes]] = []

    def install(old: Config, new: Config) -> None:
        seen.append(
            (old.limits.max_connections, new.limits.max_connections, store.current is new, store.path.read_bytes())
        )

    unsubscribe = store.on_commit(install)
    with pytest.raises(InvalidValue):
        await store.set_many([GOOD, {"prop": "limits.max_connections", "value": 0}], authorize=allow)
    assert seen == []
    await store.set("limits.max_connections", 33, authorize=allow)
    assert seen[0][:3] == (10, 33, True) and b"max_connections = 33" in seen[0][3]
    unsubscribe()
    await store.set("limits.max_connections", 34, authorize=allow)
    assert len(seen) == 1


async def test_a_failing_listener_does_not_undo_the_commit(store: ConfigStore) -> None:
    def broken(old: Config, new: Config) -> None:
        raise RuntimeError("view refused")

    later: list[int] = []
    store.on_commit(broken)
    store.on_commit(lambda old, new: later.append(new.limits.max_connections))
    await store.set("limits.max_connections", 12, authorize=allow)
    assert store.current.limits.max_connections == 12 and later == [12]


# -- the write lock (R-CFG-3) ------------------------------------------------------------------------------


async def test_policy_change_while_waiting_for_the_lock_rejects_the_batch(store: ConfigStore) -> None:
    # R-CFG-3: hold the lock, revoke (the authorize callable's backing state), release: the batch is rejected
    granted = {"limits.max_connections"}

    def authorize(props: Sequence[str]) -> None:
        for index, prop in enumerate(props):
            if prop not in granted:
                raise Forbidden("revoked", prop=prop, index=index)

    before = store.path.read_bytes()
    await store.write_lock.acquire()
    task = asyncio.create_task(store.set_many([GOOD], authorize=authorize))
    await asyncio.sleep(0.01)  # a window: the batch waits for the lock (nothing else shows that it does)
    assert not task.done()
    granted.clear()
    store.write_lock.release()
    with pytest.raises(Forbidden) as info:
        await task
    assert info.value.index == 0
    assert store.path.read_bytes() == before and store.generation == 0


async def test_revocation_committed_while_waiting_rejects_the_batch(store: ConfigStore) -> None:
    # R-CFG-3 with the real policy: the owner's revocation holds the lock while alice's batch waits
    entered, release = asyncio.Event(), asyncio.Event()

    async def slow_owner(props: Sequence[str]) -> None:
        entered.set()
        await release.wait()

    revoke = asyncio.create_task(store.set("permission_profiles.operator.config_write_paths", [], authorize=slow_owner))
    await entered.wait()
    batch = asyncio.create_task(store.set_many([GOOD], authorize=as_user(store, "alice")))
    await asyncio.sleep(0.01)  # time for the batch to reach the lock and wait there (nothing shows that it does)
    release.set()
    await revoke
    with pytest.raises(Forbidden) as info:
        await batch
    assert (info.value.index, info.value.prop) == (0, "limits.max_connections")
    assert store.current.limits.max_connections == 10


async def test_alice_may_write_her_paths(store: ConfigStore) -> None:
    # R-CFG-3
    assert await store.set_many(
        [GOOD, {"prop": "agents.default.model", "value": "m"}], authorize=as_user(store, "alice")
    )
    assert store.current.agents["default"].model == "m"
