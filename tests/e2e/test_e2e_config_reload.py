"""Edits to config.toml while the real daemon runs (R-CFG-6): the file poll, SIGHUP, invalid files, live policy.

Each test starts its own daemon (they edit its file). Edits are made the way editors make them: a new file renamed
over the old one, or a plain rewrite in place.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from e2e_harness import Daemon, DaemonFactory, zeroclaw_command
from session_client import Peer, pair
from waiting import until

pytestmark = pytest.mark.skipif(os.name != "posix", reason="Unix-socket endpoint and SIGHUP")

NOTICED_WITHIN = 2.0  # R-CFG-6
SECRET = "sk-e2e-RELOAD-SECRET-5151"
OTHER_SECRET = "sk-e2e-RELOAD-OTHER-6262"
BAD_VALUE = "VALUE-THAT-MUST-NOT-BE-LOGGED"

# What README.md tells a new user to add.
README_USER = """\
[users.me]
permission_profiles = ["admin"]

[permission_profiles.admin]
admin = true
"""


def config_file(d: Daemon) -> Path:
    assert d.config_dir is not None
    return d.config_dir / "config.toml"


def edit(d: Daemon, text: str) -> None:
    """Save like vim or an IDE: write a new file, rename it over config.toml."""
    path = config_file(d)
    tmp = path.with_name("config.toml.swp")
    tmp.write_text(text)
    os.replace(tmp, path)


async def get(peer: Peer, prop: str) -> Any:
    return (await peer.call("config/get", {"prop": prop}))["value"]


async def value_becomes(peer: Peer, prop: str, expected: Any, timeout: float = NOTICED_WITHIN) -> float:
    """Poll `config/get` every 50 ms until `prop` has the value; the seconds it took."""

    async def check() -> bool:
        response = await peer.request("config/get", {"prop": prop})
        return "result" in response and response["result"]["value"] == expected

    start = time.monotonic()
    await until(check, timeout, interval=0.05, what=f"{prop} == {expected!r}")
    return time.monotonic() - start


async def log_line(d: Daemon, pattern: str, *, after: int = 0, timeout: float = NOTICED_WITHIN + 1) -> str:
    """The first stderr line (from index `after`) matching `pattern`."""
    return await d.wait_stderr(lambda line: re.search(pattern, line), timeout, after=after)


async def cli(d: Daemon, *args: str) -> tuple[int, str, str]:
    assert d.config_dir is not None
    proc = await asyncio.create_subprocess_exec(
        *zeroclaw_command(), *args, "--config-dir", str(d.config_dir),
        env=d.env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


# ----------------------------------------------------------------------------------------------- README flow


@pytest.mark.req("R-CFG-6")
async def test_readme_flow_a_user_added_to_the_file_can_be_paired_without_a_restart(
    daemon_factory: DaemonFactory,
) -> None:
    d = daemon_factory.start()  # a first run: no config.toml yet
    assert not config_file(d).exists()
    async with await Peer.open(d) as owner:
        code, data = await owner.error("pairing/create", {"user": "me"})
        assert code == -32602, data  # the story of the bug: "Unknown user" against the running daemon
        config_file(d).write_text(README_USER)  # in place, like `cat >> ~/.zeroclaw/config.toml`
        took = await value_becomes(owner, "users.me.permission_profiles", ["admin"])
        assert took <= NOTICED_WITHIN, took
    rc, out, err = await cli(d, "pair", "--user", "me")
    assert rc == 0, (out, err)
    created = json.loads(out)
    assert created["user"] == "me" and created["token"].startswith("zc_"), created
    async with await Peer.open(d, token=created["token"]) as me:
        assert isinstance(await me.call("status"), dict)  # system:read: the admin profile from the file applies
        assert await get(me, "users.me.permission_profiles") == ["admin"]
    assert config_file(d).read_text() == README_USER  # a reload reads the file, never rewrites it
    assert d.is_running()


# ----------------------------------------------------------------------------------------------------- SIGHUP


@pytest.mark.req("R-CFG-6")
async def test_sighup_applies_an_edit_at_once_and_the_daemon_keeps_running(daemon_factory: DaemonFactory) -> None:
    base = "[daemon]\nconfig_poll_secs = 0  # SIGHUP only\n\n[limits]\nmax_sessions = 10\n"
    d = daemon_factory.start(base)
    async with await Peer.open(d) as owner:
        edit(d, base.replace("max_sessions = 10", "max_sessions = 20"))
        await asyncio.sleep(1.5)  # a window of three default polls (0.5 s): the poll is off here
        assert await get(owner, "limits.max_sessions") == 10  # the poll is off: nothing but SIGHUP reloads
        mark = d.stderr_mark()
        d.send_signal(signal.SIGHUP)
        await value_becomes(owner, "limits.max_sessions", 20)  # the poll is off: this is SIGHUP's doing
        assert d.is_running()
        line = await log_line(d, r"config reloaded from .*config\.toml: generation=\d+ props=limits\.max_sessions$")
        assert line.count("config.toml") == 1
        # a SIGHUP with nothing to do says so and changes nothing; the open connection is unaffected
        d.send_signal(signal.SIGHUP)
        await log_line(d, r"config\.toml unchanged since it was last loaded \(SIGHUP\)", after=mark)
        assert await get(owner, "limits.max_sessions") == 20
        assert isinstance(await owner.call("status"), dict)
    assert d.is_running()
    assert d.stop() == 0  # and it still stops cleanly


@pytest.mark.req("R-CFG-6")
async def test_sighup_on_a_fresh_install_does_not_call_the_optional_file_missing(daemon_factory: DaemonFactory) -> None:
    """issue 38 §5.11: with no config.toml ever written (it is optional), SIGHUP said it was missing, as a warning."""
    d = daemon_factory.start()
    assert not config_file(d).exists()
    d.send_signal(signal.SIGHUP)
    line = await log_line(d, r"config\.toml does not exist \(it is optional\): nothing to reload \(SIGHUP\)$")
    assert " INFO " in line, line
    assert not [x for x in d.stderr_lines if "is missing" in x or "WARNING" in x], d.stderr
    assert d.is_running()


# ------------------------------------------------------------------------------------------- invalid files


@pytest.mark.req("R-CFG-6")
async def test_an_invalid_file_is_logged_without_secrets_and_the_running_config_stays(
    daemon_factory: DaemonFactory,
) -> None:
    base = f'[limits]\nmax_sessions = 10\n\n[providers.cloud]\nkind = "openai"\napi_key = "{SECRET}"\n'
    d = daemon_factory.start(base)
    path = config_file(d)
    async with await Peer.open(d) as owner:
        # 1. not TOML at all (an editor caught half-way, or a typo)
        broken = base.replace("max_sessions = 10", "max_sessions = 20").replace(SECRET, OTHER_SECRET) + "[limits\n"
        edit(d, broken)
        line = await log_line(d, r"config\.toml: not loaded .*the running config stays: invalid TOML at line \d+")
        assert str(path) in line and line.count("config.toml") == 1, line
        assert await get(owner, "limits.max_sessions") == 10
        # a write over RPC never clobbers the user's (broken) file
        code, data = await owner.error("config/set", {"prop": "limits.max_uploads_per_connection", "value": 2})
        assert code == -32603 and data.get("reason") == "config_conflict", data
        assert path.read_text() == broken
        # 2. valid TOML, a wrong type: the line names the field, not the value
        mark = d.stderr_mark()
        edit(d, broken.replace("[limits\n", "").replace("max_sessions = 20", f'max_sessions = "{BAD_VALUE}"'))
        line = await log_line(d, r"not loaded .*invalid settings: limits\.max_sessions", after=mark)
        assert str(path) in line, line
        assert await get(owner, "limits.max_sessions") == 10
        # logged once, not at every poll
        await asyncio.sleep(1.2)  # a window of several polls
        assert sum("not loaded" in line for line in d.stderr_lines[mark:]) == 1, d.stderr
        # 3. a valid edit is then applied, secrets included (and never shown)
        edit(d, base.replace("max_sessions = 10", "max_sessions = 30").replace(SECRET, OTHER_SECRET))
        await value_becomes(owner, "limits.max_sessions", 30)
        assert await get(owner, "providers.cloud.api_key") == "***"
        line = await log_line(d, r"config reloaded from .* props=limits\.max_sessions,providers\.cloud\.api_key$")
        # and config/set works again on top of the loaded file
        await owner.call("config/set", {"prop": "limits.max_uploads_per_connection", "value": 2})
        assert OTHER_SECRET in path.read_text() and "max_uploads_per_connection = 2" in path.read_text()
    assert d.is_running()
    for secret in (SECRET, OTHER_SECRET, BAD_VALUE):
        assert secret not in d.stderr, f"{secret} was logged"
        if d.audit_path.exists():
            assert secret not in d.audit_path.read_text()


@pytest.mark.req("R-CLI")
async def test_a_config_error_at_start_names_the_file_once(daemon_factory: DaemonFactory) -> None:
    # issue 13 §4: it was `…/config.toml: invalid settings in …/config.toml: …`
    for text, reason in [
        (f'[limits]\nmax_sessions = "{BAD_VALUE}"\n', "invalid settings: limits.max_sessions"),
        ("[limits\n", "invalid TOML at line 1"),
    ]:
        d = daemon_factory.spawn(text)
        assert d.wait_exit(20) == 1
        lines = [line for line in d.stderr_lines if line.startswith("zeroclaw daemon: ")]
        assert len(lines) == 1, d.stderr
        assert lines[0].count("config.toml") == 1 and reason in lines[0], lines[0]
        assert BAD_VALUE not in d.stderr


# ------------------------------------------------------------------------------------------ live policy


@pytest.mark.req("R-CFG-6")
@pytest.mark.req("R-AUTH-5")
async def test_an_open_connection_sees_a_profile_edited_in_the_file_at_its_next_call(
    daemon_factory: DaemonFactory,
) -> None:
    base = (
        '[permission_profiles.sessions_only]\ngrants = { sessions = ["read"] }\n\n'
        '[users.erin]\npermission_profiles = ["sessions_only"]\n\n'
        '[agents.default]\nmodel = "model-one"\n'
    )
    d = daemon_factory.start(base)
    async with await Peer.open(d) as owner:
        erin = await Peer.open(d, token=(await pair(owner, "erin"))["token"])
        async with erin:
            assert (await erin.call("session/list"))["sessions"] == []
            edit(d, base.replace('permission_profiles = ["sessions_only"]', "permission_profiles = []"))
            await value_becomes(owner, "users.erin.permission_profiles", [])
            code, data = await erin.error("session/list")  # the same connection, its very next call
            assert code == -32012 and data.get("grant") == "sessions:read", data
            # given back, in place this time, together with an agent model change
            config_file(d).write_text(base.replace("model-one", "model-two"))
            await value_becomes(owner, "agents.default.model", "model-two")
            assert (await erin.call("session/list"))["sessions"] == []


# -------------------------------------------------------------------------------- the daemon's own writes


@pytest.mark.req("R-CFG-6")
async def test_the_daemons_own_writes_cause_no_reload_and_a_later_hand_edit_is_kept(
    daemon_factory: DaemonFactory,
) -> None:
    base = "# hand-written\n[limits]\nmax_sessions = 10  # small\n"
    d = daemon_factory.start(base)
    path = config_file(d)
    async with await Peer.open(d) as owner:
        mark = d.stderr_mark()
        await owner.call("config/set", {"prop": "limits.max_sessions", "value": 11})
        await owner.call(
            "config/set-many",
            {
                "sets": [
                    {"prop": "limits.max_uploads_per_connection", "value": 3},
                    {"prop": "users.zed.uid", "value": 4242},
                ]
            },
        )
        written = path.read_bytes()
        await asyncio.sleep(1.5)  # a window of several polls in which a reload would show
        assert path.read_bytes() == written
        assert await get(owner, "limits.max_sessions") == 11
        assert await get(owner, "limits.max_uploads_per_connection") == 3
        assert await get(owner, "users.zed.uid") == 4242
        logged = d.stderr_lines[mark:]
        assert sum("config committed" in line for line in logged) == 2, logged
        assert not any("reloaded" in line or "re-read" in line or "not loaded" in line for line in logged), logged
        # a hand edit on top of the daemon's write is loaded, and the daemon's values stay
        path.write_text(written.decode() + '\n[agents.default]  # by hand\nmodel = "by-hand"\n')
        await value_becomes(owner, "agents.default.model", "by-hand")
        assert await get(owner, "limits.max_sessions") == 11
        # the next write keeps the hand edit and its comment
        await owner.call("config/set", {"prop": "limits.max_sessions", "value": 12})
        text = path.read_text()
        assert "[agents.default]  # by hand" in text and "max_sessions = 12  # small" in text, text
        assert text.startswith("# hand-written\n")
