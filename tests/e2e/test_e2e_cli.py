"""The `zeroclaw` command line, non-interactive (SPEC R-CLI): every command run as a subprocess against a real daemon.

The interactive parts (prompts, Ctrl-C, questions) are in test_e2e_cli_pty.py, under a pseudo-terminal.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e_harness import REPO_ROOT, Daemon, DaemonFactory, clean_env, zeroclaw_command

pytestmark = [pytest.mark.skipif(os.name != "posix", reason="Unix-socket endpoint"), pytest.mark.req("R-CLI")]

CONFIG = """\
[agents.helper]
provider = "scripted"

[agents.writer]
provider = "scripted"

[permission_profiles.runner]
grants = { sessions = ["create", "read", "execute"] }

[users.alice]
permission_profiles = ["runner"]
"""


@pytest.fixture(scope="module")
def cli_daemon() -> Iterator[Daemon]:
    factory = DaemonFactory()
    try:
        yield factory.start(CONFIG)
    finally:
        factory.close()


def run(
    *args: str, env: dict[str, str], stdin: str | None = None, timeout: float = 30
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*zeroclaw_command(), *args],
        cwd=REPO_ROOT,
        env=env,
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def no_traceback(proc: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout, proc.stderr


# -- --version -------------------------------------------------------------------------------------------------


def test_version_prints_the_package_version(cli_daemon: Daemon) -> None:
    proc = run("--version", env=cli_daemon.env)
    assert proc.returncode == 0, proc.stderr
    status = json.loads(run("status", "--config-dir", str(cli_daemon.config_dir), env=cli_daemon.env).stdout)
    assert proc.stdout.strip() == f"zeroclaw {status['serverVersion']}"


# -- --config-dir everywhere -------------------------------------------------------------------------------------


def test_every_command_takes_config_dir_before_or_after_it(cli_daemon: Daemon, tmp_path: Path) -> None:
    cfg = str(cli_daemon.config_dir)
    env = cli_daemon.env
    for before, after in ((["--config-dir", cfg], []), ([], ["--config-dir", cfg])):
        status = run(*before, "status", *after, env=env)
        assert status.returncode == 0 and json.loads(status.stdout)["pid"] == cli_daemon.pid, status.stderr
        rpc = run(*before, "rpc", *after, "session/list", env=env)
        assert rpc.returncode == 0 and "sessions" in json.loads(rpc.stdout), rpc.stderr
        paired = run(*before, "pair", *after, "--user", "alice", env=env)
        assert paired.returncode == 0 and json.loads(paired.stdout)["user"] == "alice", paired.stderr
        upgraded = run(*before, "db", "upgrade", *after, env=env)
        assert upgraded.returncode == 0 and "is at revision" in upgraded.stdout, upgraded.stderr
        chat = run(*before, "chat", *after, "--session", "cfgdir-chat", "--create", env=env)  # stdin at EOF: leaves
        assert chat.returncode == 0 and "session cfgdir-chat" in chat.stdout, chat.stderr
        source = tmp_path / "note.txt"
        source.write_text("hello")
        uploaded = run(*before, "upload", *after, "cfgdir-chat", str(source), env=env)
        assert uploaded.returncode == 0 and json.loads(uploaded.stdout)["size_bytes"] == 5, uploaded.stderr
    between = run("db", "--config-dir", cfg, "upgrade", env=env)
    assert between.returncode == 0, between.stderr


def test_readme_command_table_shows_config_dir_for_every_command() -> None:
    readme = (REPO_ROOT / "README.md").read_text()
    section = readme.split("## Command line", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `zeroclaw ")]
    commands = {m[1] for row in rows if (m := re.match(r"\| `zeroclaw ([a-z]+(?: upgrade)?)", row))}
    assert {"daemon", "rpc", "status", "chat", "upload", "pair", "db upgrade"} <= commands, commands
    assert any(row.startswith("| `zeroclaw --version`") for row in rows)
    for row in rows:
        if not row.startswith("| `zeroclaw --version`"):
            assert "[--config-dir DIR]" in row, row


# -- errors say what to do next -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [["status"], ["rpc", "status"], ["chat"], ["pair", "--user", "x"], ["rpc"]],
    ids=["status", "rpc", "chat", "pair", "rpc-interactive"],
)
def test_no_daemon_says_how_to_start_one(daemon_factory: DaemonFactory, args: list[str]) -> None:
    root = daemon_factory.tmpdir()
    cfg = root / "cfg"
    proc = run(*args, "--config-dir", str(cfg), env=clean_env(root))
    assert proc.returncode == 1, proc
    no_traceback(proc)
    assert f"start it with `zeroclaw daemon --config-dir {cfg}`" in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


@pytest.mark.req("R-CLI")
def test_rpc_params_not_json_shows_an_example_of_that_methods_params(cli_daemon: Daemon) -> None:
    """issue 38 §5.9: the example for `session/list` named `sessionId`, which it does not take."""
    proc = run("rpc", "session/list", "{nope", "--config-dir", str(cli_daemon.config_dir), env=cli_daemon.env)
    assert proc.returncode == 2, proc
    assert (
        proc.stderr.strip()
        == """zeroclaw: PARAMS must be JSON, e.g. zeroclaw rpc session/list '{"includeKilled": true}'"""
    )
    interactive = run("rpc", "--config-dir", str(cli_daemon.config_dir), env=cli_daemon.env, stdin="session/list {x\n")
    assert 'params must be JSON, e.g. session/list {"includeKilled": true}' in interactive.stderr, interactive


@pytest.mark.req("R-CLI")
def test_rpc_a_mistyped_method_says_which_one_was_meant(cli_daemon: Daemon) -> None:
    cfg = str(cli_daemon.config_dir)
    proc = run("rpc", "sesion/list", "--config-dir", cfg, env=cli_daemon.env)
    assert proc.returncode == 1, proc
    assert json.loads(proc.stdout)["error"]["code"] == -32601
    assert proc.stderr.strip() == (
        f"zeroclaw: Method not found (-32601); did you mean `session/list`? `zeroclaw rpc --config-dir {cfg} --list` "
        "lists the methods this daemon serves"
    )
    interactive = run("rpc", "--config-dir", cfg, env=cli_daemon.env, stdin="sesion/list {}\n")
    assert "zeroclaw: no method sesion/list; did you mean `session/list`?" in interactive.stderr, interactive


def test_chat_with_an_unknown_agent_lists_the_known_ones(cli_daemon: Daemon) -> None:
    proc = run("chat", "--config-dir", str(cli_daemon.config_dir), "--agent", "nope", env=cli_daemon.env)
    assert proc.returncode == 2, proc
    no_traceback(proc)
    assert "unknown agent 'nope'" in proc.stderr
    assert "known agents: default, helper, writer" in proc.stderr, proc.stderr
    assert "--agent NAME" in proc.stderr


def test_pair_with_an_unknown_user_says_to_add_it_to_the_config(cli_daemon: Daemon) -> None:
    proc = run("pair", "--config-dir", str(cli_daemon.config_dir), "--user", "zed", env=cli_daemon.env)
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["error"]["code"] == -32602  # stdout stays machine-readable
    assert "Unknown user" in proc.stderr and str(cli_daemon.config_dir / "config.toml") in proc.stderr, proc.stderr
    assert "[users.NAME]" in proc.stderr


def test_rpc_error_names_the_next_step(cli_daemon: Daemon) -> None:
    proc = run("rpc", "--config-dir", str(cli_daemon.config_dir), "session/messages", '{"sessionId": "nope"}',
               env=cli_daemon.env)  # fmt: skip
    assert proc.returncode == 1 and json.loads(proc.stdout)["error"]["code"] == -32000
    assert "session/list" in proc.stderr, proc.stderr


# -- upload: the file is checked (one stat) before anything is read or sent ------------------------------------


def test_upload_of_a_missing_file_says_it_does_not_exist(daemon_factory: DaemonFactory, tmp_path: Path) -> None:
    root = daemon_factory.tmpdir()
    missing = tmp_path / "nope.txt"
    proc = run("upload", "--config-dir", str(root / "cfg"), "s1", str(missing), env=clean_env(root))
    assert proc.returncode == 2
    no_traceback(proc)
    assert proc.stderr.strip() == f"zeroclaw: {missing}: does not exist; check the path"


def test_upload_of_a_directory_says_so(daemon_factory: DaemonFactory, tmp_path: Path) -> None:
    root = daemon_factory.tmpdir()
    proc = run("upload", "--config-dir", str(root / "cfg"), "s1", str(tmp_path), env=clean_env(root))
    assert proc.returncode == 2 and "is a directory" in proc.stderr, proc.stderr


def test_upload_over_the_limit_is_refused_before_reading_or_connecting(
    daemon_factory: DaemonFactory, tmp_path: Path
) -> None:
    root = daemon_factory.tmpdir()
    big = tmp_path / "big.bin"
    with big.open("wb") as f:
        f.truncate(8 * 1024**3)  # sparse: reading (hashing) it would take far longer than the bound below
    started = time.monotonic()
    proc = run("upload", "--config-dir", str(root / "cfg"), "s1", str(big), env=clean_env(root))
    assert time.monotonic() - started < 10
    assert proc.returncode == 2
    no_traceback(proc)
    limit = "the limit is 10000000 bytes (10 MB) per file"
    assert proc.stderr.strip() == f"zeroclaw: {big}: is {8 * 1024**3} bytes; {limit}"


# -- the interactive client with piped input ---------------------------------------------------------------------


def test_rpc_with_piped_input_prints_every_answer_before_leaving(cli_daemon: Daemon) -> None:
    """`printf … | zeroclaw rpc` works like the socat one-liner: end of input waits for the answers; a question
    asked after the input ended is cancelled (nobody is left to answer it)."""
    prompt = {"jsonrpc": "2.0", "method": "session/prompt", "id": 7,
              "params": {"sessionId": "piped", "prompt": "/ask Your name?"}}  # fmt: skip
    lines = ["status", 'session/new {"sessionId": "piped"}', json.dumps(prompt)]
    proc = run("rpc", "--config-dir", str(cli_daemon.config_dir), env=cli_daemon.env, stdin="\n".join(lines) + "\n")
    assert proc.returncode == 0, proc.stderr
    frames = {f.get("id"): f for f in _json_objects(proc.stdout)}
    assert frames["cli-1"]["result"]["pid"] == cli_daemon.pid
    assert frames["cli-2"]["result"]["sessionId"] == "piped"
    assert frames[7]["result"]["content"] == "Answer: «The user cancelled the question.»"


def _json_objects(text: str) -> list[dict[str, object]]:
    decoder = json.JSONDecoder()
    out, i = [], 0
    while (start := text.find("{", i)) != -1:
        obj, i = decoder.raw_decode(text, start)
        out.append(obj)
    return out
