"""`zeroclaw pair`, `zeroclaw db upgrade` and `zeroclaw db copy`."""

from __future__ import annotations

import sys

from sqlalchemy.engine import make_url

from app.cli.rpc_command import one_shot
from app.config.errors import ConfigError
from app.config.store import ConfigStore
from app.paths import ensure_private_dir, resolve
from app.storage import default_url

__all__ = ["db_copy", "db_upgrade", "pair"]


async def pair(config_dir: str | None, user: str, label: str | None, *, code: bool) -> int:
    """Create a pairing token through the running daemon (R-AUTH-4), printed once; or, with `code`, a
    one-time 6-digit code that `POST /pair` on the gateway exchanges for a token."""
    import orjson

    params = {"user": user, **({"label": label} if label else {})}
    method = "pairing/code" if code else "pairing/create"
    return await one_shot(config_dir, method, orjson.dumps(params).decode())


def db_upgrade(config_dir: str | None) -> int:
    """Bring the database to the newest schema (the daemon also does this at start)."""
    from app.storage.errors import masked_url, open_failure
    from app.storage.migrate import HEAD_REVISION, upgrade

    url = _configured_url(config_dir)
    if url is None or not _usable("db upgrade", url):
        return 1
    try:
        upgrade(url)
    except Exception as exc:  # a driver or migration failure: one line naming the database, no traceback
        print(f"zeroclaw: db upgrade: {masked_url(url)}: {open_failure(exc, url)}", file=sys.stderr)
        return 1
    shown = make_url(url).render_as_string(hide_password=True)
    print(f"database {shown} is at revision {HEAD_REVISION}")
    return 0


def _usable(command: str, url: str) -> bool:
    """False (after saying what to write instead) when `url` names a driver the daemon does not use."""
    from app.storage.engine import driver_problem
    from app.storage.errors import masked_url

    problem = driver_problem(url)
    if problem is not None:
        print(f"zeroclaw: {command}: {masked_url(url)}: {problem}", file=sys.stderr)
    return problem is None


def db_copy(config_dir: str | None, source: str | None, target: str) -> int:
    """Copy every row from `source` (default: the configured database) into the empty database `target`."""
    import asyncio

    from app.storage.copy import CopyError, copy_database
    from app.storage.errors import masked_url, open_failure

    if source is None:
        source = _configured_url(config_dir)
        if source is None:
            return 1
    if not (_usable("db copy", source) and _usable("db copy", target)):
        return 1
    try:
        result = asyncio.run(copy_database(source, target))
    except CopyError as exc:
        print(f"zeroclaw: db copy: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # a driver or migration failure: one line naming the database, no traceback
        print(f"zeroclaw: db copy: {masked_url(source)} -> {masked_url(target)}: {open_failure(exc)}", file=sys.stderr)
        return 1
    tables = ", ".join(f"{name} {n}" for name, n in result.rows.items())
    print(f"copied {result.total} rows from {masked_url(source)} to {masked_url(target)} ({tables})")
    return 0


def _configured_url(config_dir: str | None) -> str | None:
    """The database URL the daemon of `config_dir` uses; None (after saying why) when config.toml is invalid."""
    paths = resolve(config_dir)
    try:
        config = ConfigStore(paths.config_dir).current
    except ConfigError as exc:
        print(f"zeroclaw: {paths.config_file}: {exc.message}", file=sys.stderr)
        return None
    ensure_private_dir(paths.data_dir)
    return config.storage.url or default_url(paths.data_dir)
