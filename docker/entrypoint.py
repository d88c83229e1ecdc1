"""Container entrypoint for zeroclaw (docker/Dockerfile).

    entrypoint.py daemon [ARGS…]   apply the environment to /data/config.toml, then exec `zeroclaw daemon ARGS…`
    entrypoint.py healthcheck      exit 0 when GET /health answers 200 on the local gateway, else 1
    entrypoint.py OTHER [ARGS…]    exec `zeroclaw OTHER ARGS…` (e.g. `rpc status`, `pair --user NAME`)

Environment (env wins over the file; unset variables leave the file alone):
    ZEROCLAW_CONFIG_DIR      config dir (image default /data)
    ZEROCLAW_GATEWAY_HOST    [gateway] host (image default 0.0.0.0)
    ZEROCLAW_ALLOWED_HOSTS   [gateway] allowed_hosts, comma-separated (image default "localhost")

Only the standard library and tomlkit (a zeroclaw dependency) are used; comments in config.toml are kept.
"""

from __future__ import annotations

import os
import ssl
import sys
import tempfile
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import tomlkit

DEFAULT_PORT = 42617


def config_dir(env: Mapping[str, str]) -> Path:
    return Path(env.get("ZEROCLAW_CONFIG_DIR") or "/data")


def configure(directory: Path, env: Mapping[str, str]) -> bool:
    """Write the gateway settings taken from `env` into `<directory>/config.toml`; True when it changed."""
    path = directory / "config.toml"
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    doc = tomlkit.parse(text)
    gateway: Any = doc.get("gateway")
    if gateway is None:
        gateway = tomlkit.table()
        doc["gateway"] = gateway
    host = env.get("ZEROCLAW_GATEWAY_HOST")
    if host:
        gateway["host"] = host
    hosts = env.get("ZEROCLAW_ALLOWED_HOSTS")
    if hosts is not None:
        gateway["allowed_hosts"] = [h.strip() for h in hosts.split(",") if h.strip()]
    new = tomlkit.dumps(doc)
    if new == text:
        return False
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".config.", suffix=".toml")  # created 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(new)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return True


def health_url(directory: Path) -> tuple[str, ssl.SSLContext | None]:
    path = directory / "config.toml"
    gateway: Any = tomlkit.parse(path.read_text(encoding="utf-8")).get("gateway", {}) if path.exists() else {}
    port = int(gateway.get("port", DEFAULT_PORT)) or DEFAULT_PORT
    if gateway.get("tls_cert") and gateway.get("tls_key"):
        # Probing our own process over loopback: the certificate names the public host, not 127.0.0.1.
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return f"https://127.0.0.1:{port}/health", context
    return f"http://127.0.0.1:{port}/health", None


def healthcheck(directory: Path) -> int:
    url, context = health_url(directory)
    try:
        with urllib.request.urlopen(url, timeout=4, context=context) as response:  # noqa: S310  # fixed URL
            return 0 if response.status == 200 else 1
    except OSError:
        return 1


def main(argv: list[str]) -> int:
    env = dict(os.environ)
    directory = config_dir(env)
    command = argv[1:] or ["daemon"]
    if command[0] == "healthcheck":
        return healthcheck(directory)
    if command[0] == "daemon":
        configure(directory, env)
    os.execvp("zeroclaw", ["zeroclaw", *command])  # noqa: S606  # replaces this process: signals go to the daemon
    return 127  # pragma: no cover


if __name__ == "__main__":
    sys.exit(main(sys.argv))
