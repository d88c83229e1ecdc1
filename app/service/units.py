"""The unit files `zeroclaw service install` writes (R-SVC-3): pure text, built from a `UnitSpec`.

    zeroclaw.service  Type=notify (READY=1 once every listener serves, app.service.notify), restarted on failure
    zeroclaw.socket   with socket activation: the local endpoint, created by systemd 0600 in a 0700 directory,
                      passed as fd 3 named `rpc` (app.service.activation); the daemon then runs on demand
                      (`--ephemeral`) unless asked to stay
    launchd plist     macOS: a LaunchAgent that keeps the daemon running (launchd's own socket hand-over is not
                      the LISTEN_FDS protocol, so no activation there)

systemd's unit syntax expands `%` specifiers everywhere and `$VARS` in command lines, so both are escaped, and a
word with spaces or quotes is double-quoted (systemd.service(5), "Command lines").
"""

from __future__ import annotations

import plistlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ["LAUNCHD_LABEL", "MARK", "SERVICE", "SOCKET", "UnitSpec", "launchd_plist", "service_unit", "socket_unit"]

SERVICE = "zeroclaw.service"
SOCKET = "zeroclaw.socket"
LAUNCHD_LABEL = "dev.zeroclaw.daemon"
MARK = b"# Written by `zeroclaw service install`"  # how uninstall knows a unit is ours
_PLAIN_WORD = re.compile(r"[A-Za-z0-9_@%+=:,./-]+")


@dataclass(frozen=True, slots=True)
class UnitSpec:
    """What the units say. `command`: how to run zeroclaw itself (the executable, or the interpreter and `-m`)."""

    command: Sequence[str]
    endpoint: str  # the local endpoint's path: the socket unit's ListenStream=
    config_dir: str | None = None  # passed as --config-dir when one was chosen
    socket_activation: bool = False
    on_demand: bool = True  # with socket activation: --ephemeral, gone after the last client
    watchdog_secs: int = 0  # WatchdogSec=; 0 = none
    environment: Mapping[str, str] = field(default_factory=dict)  # ZEROCLAW_* paths the install saw
    version: str = ""

    def daemon_argv(self) -> list[str]:
        argv = [*self.command, "daemon"]
        if self.config_dir is not None:
            argv += ["--config-dir", self.config_dir]
        if self.socket_activation and self.on_demand:
            argv.append("--ephemeral")
        return argv


def service_unit(spec: UnitSpec) -> str:
    lines = [
        _header(spec),
        "[Unit]",
        "Description=zeroclaw daemon",
    ]
    if spec.socket_activation:
        lines += [f"Requires={SOCKET}", f"After={SOCKET}"]
    lines += [
        "",
        "[Service]",
        "Type=notify",
        "NotifyAccess=main",  # only the daemon speaks for itself, not a tool's child process
        "ExecStart=" + " ".join(_exec_word(word) for word in spec.daemon_argv()),
        "ExecReload=/bin/kill -HUP $MAINPID",  # SIGHUP re-reads config.toml (R-CFG-6)
        "Restart=on-failure",  # an on-demand daemon's idle exit is 0: the socket starts it again
        "RestartSec=2s",
        "TimeoutStopSec=15s",
    ]
    if spec.watchdog_secs > 0:
        lines.append(f"WatchdogSec={spec.watchdog_secs}s")
    lines += [f"Environment={_quoted(_escape_specifiers(f'{k}={v}'))}" for k, v in sorted(spec.environment.items())]
    lines += ["", "[Install]", f"Also={SOCKET}" if spec.socket_activation else "WantedBy=default.target", ""]
    return "\n".join(lines)


def socket_unit(spec: UnitSpec) -> str:
    return "\n".join(
        [
            _header(spec),
            "[Unit]",
            "Description=zeroclaw daemon local endpoint",
            "",
            "[Socket]",
            f"ListenStream={_escape_specifiers(spec.endpoint)}",
            "SocketMode=0600",
            "DirectoryMode=0700",
            "FileDescriptorName=rpc",
            f"Service={SERVICE}",
            "",
            "[Install]",
            "WantedBy=sockets.target",
            "",
        ]
    )


def launchd_plist(spec: UnitSpec, log_file: str) -> bytes:
    """A LaunchAgent for macOS: started at login, restarted if it fails. Not socket-activated (see above)."""
    agent: dict[str, object] = {
        "Label": LAUNCHD_LABEL,
        "ProgramArguments": [*spec.command, "daemon", *(["--config-dir", spec.config_dir] if spec.config_dir else [])],
        "RunAtLoad": True,
        "KeepAlive": {"SuccessfulExit": False},
        "ProcessType": "Background",
        "StandardErrorPath": log_file,
    }
    if spec.environment:
        agent["EnvironmentVariables"] = dict(spec.environment)
    return plistlib.dumps(agent, sort_keys=False)


def _header(spec: UnitSpec) -> str:
    made_by = f"zeroclaw {spec.version}" if spec.version else "zeroclaw"
    return f"{MARK.decode()} ({made_by}); `zeroclaw service uninstall` removes it.\n"


def _escape_specifiers(text: str) -> str:
    return text.replace("%", "%%")


def _exec_word(word: str) -> str:
    """One word of ExecStart=: specifiers and `$` escaped, quoted unless plain."""
    word = _escape_specifiers(word).replace("$", "$$")
    return word if _PLAIN_WORD.fullmatch(word) else _quoted(word)


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
