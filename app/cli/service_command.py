"""`zeroclaw service install|uninstall`: user units for systemd, or a LaunchAgent for macOS (R-SVC-3).

Files only: nothing here runs `systemctl` or `launchctl`; the command prints what to run next.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from app import __version__
from app.cli.terminal import CliError
from app.paths import ensure_private_dir, resolve
from app.service.units import (
    LAUNCHD_LABEL,
    MARK,
    SERVICE,
    SOCKET,
    UnitSpec,
    launchd_plist,
    service_unit,
    socket_unit,
)

__all__ = ["install", "launch_agents_dir", "uninstall", "unit_dir", "zeroclaw_command"]

_PATH_ENV = ("ZEROCLAW_DATA_DIR", "ZEROCLAW_SOCKET")  # paths the install saw: the service must see them too
_MAX_SOCKET_PATH = 107  # sun_path holds 108 bytes with the NUL


def unit_dir(env: Mapping[str, str] | None = None) -> Path:
    """`$XDG_CONFIG_HOME/systemd/user`, else `~/.config/systemd/user`: where systemd looks for a user's units."""
    env = os.environ if env is None else env
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME") or Path.home()) / ".config")
    return Path(base) / "systemd" / "user"


def launch_agents_dir(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    return Path(env.get("HOME") or Path.home()) / "Library" / "LaunchAgents"


def zeroclaw_command() -> list[str]:
    """How the service runs this zeroclaw: the console script that is running, by its absolute path (a venv's
    script finds its own interpreter), else this interpreter with `-m app.cli`."""
    script = Path(sys.argv[0])
    if script.name == "zeroclaw" and script.is_file():
        return [str(script.absolute())]
    return [str(Path(sys.executable).absolute()), "-m", "app.cli"]


def install(
    config_dir: str | None,
    *,
    socket_activation: bool = False,
    print_only: bool = False,
    launchd: bool = False,
    watchdog_secs: int = 0,
    persistent: bool = False,
    env: Mapping[str, str] | None = None,
) -> int:
    env = os.environ if env is None else env
    spec = _spec(config_dir, env, socket_activation=socket_activation, watchdog_secs=watchdog_secs, stay=persistent)
    if launchd:
        return _install_launchd(spec, config_dir, env, print_only=print_only)
    directory = unit_dir(env)
    files = {directory / SERVICE: service_unit(spec)}
    if socket_activation:
        files[directory / SOCKET] = socket_unit(spec)
    if print_only:
        for path, text in files.items():
            print(f"# {path}\n{text}")
        return 0
    for path in files:
        if path.exists() and not _ours(path):
            raise CliError(f"zeroclaw: service install: {path} was not written by zeroclaw; move it away first")
    for path, text in files.items():
        _write(path, text.encode())
        print(f"wrote {path}")
    stale = directory / SOCKET
    if not socket_activation and _ours(stale):  # an earlier install's socket would start this unit
        _remove_unit(directory, SOCKET)
        print(f"removed {stale} (no socket activation now)")
    enable = SOCKET if socket_activation else SERVICE
    print(f"next: systemctl --user daemon-reload && systemctl --user enable --now {enable}")
    return 0


def uninstall(*, launchd: bool = False, env: Mapping[str, str] | None = None) -> int:
    env = os.environ if env is None else env
    if launchd:
        plist = launch_agents_dir(env) / f"{LAUNCHD_LABEL}.plist"
        if not plist.exists():
            print(f"nothing to remove: {plist} does not exist")
            return 0
        print(f"first, if it is loaded: launchctl bootout gui/$(id -u) {plist}")
        plist.unlink()
        print(f"removed {plist}")
        return 0
    directory = unit_dir(env)
    for name in (SOCKET, SERVICE):
        if (directory / name).exists() and not _ours(directory / name):
            print(f"left {directory / name} alone: it was not written by zeroclaw service install")
    removed = [name for name in (SOCKET, SERVICE) if _ours(directory / name) and _remove_unit(directory, name)]
    if not removed:
        print(f"nothing to remove: no {SERVICE} or {SOCKET} in {directory}")
        return 0
    for name in removed:
        print(f"removed {directory / name}")
    print(f"next: systemctl --user stop {' '.join(removed)}; systemctl --user daemon-reload")
    return 0


def _spec(
    config_dir: str | None, env: Mapping[str, str], *, socket_activation: bool, watchdog_secs: int, stay: bool
) -> UnitSpec:
    chosen = config_dir or env.get("ZEROCLAW_CONFIG_DIR") or None
    paths = resolve(chosen, env)
    if watchdog_secs < 0:
        raise CliError("zeroclaw: service install: --watchdog-sec must be 0 (none) or more seconds")
    endpoint = paths.endpoint
    for text in (endpoint, str(paths.config_dir), *(env.get(key, "") for key in _PATH_ENV)):
        if "\n" in text or "\0" in text:
            raise CliError("zeroclaw: service install: a path holds a newline, which a unit file cannot say")
    if socket_activation:
        if not os.path.isabs(endpoint):
            raise CliError(f"zeroclaw: service install: the endpoint {endpoint} is not an absolute path")
        if len(os.fsencode(endpoint)) > _MAX_SOCKET_PATH:
            raise CliError(
                f"zeroclaw: service install: the endpoint {endpoint} is longer than a Unix socket path may be "
                f"({_MAX_SOCKET_PATH} bytes); choose a shorter --config-dir or ZEROCLAW_SOCKET"
            )
    return UnitSpec(
        command=zeroclaw_command(),
        endpoint=endpoint,
        config_dir=str(paths.config_dir) if chosen else None,
        socket_activation=socket_activation,
        on_demand=not stay,
        watchdog_secs=watchdog_secs,
        environment={key: env[key] for key in _PATH_ENV if env.get(key)},
        version=__version__,
    )


def _install_launchd(spec: UnitSpec, config_dir: str | None, env: Mapping[str, str], *, print_only: bool) -> int:
    paths = resolve(config_dir or env.get("ZEROCLAW_CONFIG_DIR") or None, env)
    logs = paths.data_dir / "logs"
    plist = launchd_plist(spec, str(logs / "daemon.log"))
    if print_only:
        print(plist.decode(), end="" if plist.endswith(b"\n") else "\n")
        return 0
    path = launch_agents_dir(env) / f"{LAUNCHD_LABEL}.plist"
    ensure_private_dir(logs)  # launchd opens the log before the daemon runs, and creates no directory
    _write(path, plist)
    print(f"wrote {path}")
    print(f"next: launchctl bootstrap gui/$(id -u) {path}")
    return 0


def _write(path: Path, data: bytes) -> None:
    """Atomically: a unit read half-written would fail to load."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_bytes(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except OSError as exc:
        raise CliError(f"zeroclaw: service install: cannot write {path}: {exc.strerror}") from None


def _ours(path: Path) -> bool:
    """The file exists and starts with the header `service install` writes (app.service.units)."""
    try:
        with path.open("rb") as fh:
            return fh.read(len(MARK)) == MARK
    except OSError:
        return False


def _remove_unit(directory: Path, name: str) -> bool:
    """Remove a unit file and the `*.wants/` links enabling it (what `systemctl disable` would remove)."""
    for link in directory.glob(f"*.wants/{name}"):
        if link.is_symlink():
            link.unlink()
    try:
        (directory / name).unlink()
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise CliError(f"zeroclaw: service uninstall: cannot remove {directory / name}: {exc.strerror}") from None
    return True
