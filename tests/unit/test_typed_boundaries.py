"""The daemon's `Services` is typed at every boundary a handler or route reads it through (issue 14): a misspelt
service or a wrong call is a mypy error, not an `AttributeError` at run time; a handler's context has no way to the
connection, and its channel to the client is typed. Runs mypy, with the project's
config, on a snippet that uses the real modules, with a cache of its own (a cold run: about 10 s).
"""

from __future__ import annotations

import types
from pathlib import Path

import pytest
from mypy import api

from rpc.core.errors import InternalError
from rpc.methods.session import files_of

ROOT = Path(__file__).resolve().parents[2]

# Each line marked `# E: code` must get exactly that error; the unmarked lines (the right spellings) none.
SNIPPET = """\
from starlette.applications import Starlette

from app.auth.policy import Principal
from gateway.app import create_app
from gateway.auth import Caller
from gateway.rest.config import ConfigApi
from gateway.rest.sessions import SessionApi
from gateway.rest.webhook import WebhookApi
from rpc.core.context import CallContext
from rpc.core.registry import NoParams, Registry
from rpc.core.dispatcher import Dispatcher


async def handler(ctx: CallContext, params: NoParams) -> None:
    ctx.services.sesions.close(1, 2, "extra")  # E: attr-defined
    ctx.services.sessions.turns.cancel(ctx.principal, "s", "extra")  # E: call-arg
    ctx.services.sessions.turns.cancel(ctx.principal, "s")
    ctx.connection  # E: attr-defined
    await ctx.client.request("elicitation/create", {}, timeout="soon")  # E: arg-type
    await ctx.client.request("elicitation/create", {}, timeout=1.0)


async def routes(config: ConfigApi, sessions: SessionApi, webhook: WebhookApi, principal: Principal) -> None:
    config.dispatcher.services.config_stor.get(None)  # E: attr-defined
    await sessions.dispatcher.services.sessions.close(principal)  # E: call-arg
    webhook.services.sessions.live.get(1)  # E: call-overload
    await sessions.dispatcher.services.sessions.close(principal, "s")


def server(rpc: Dispatcher, caller: Caller) -> None:
    rpc.services.audit.recrd("denied", caller.peer, None)  # E: attr-defined
    rpc.services.auth.refresh(caller.credential)


def app(rpc: Dispatcher, registry: Registry) -> Starlette:
    create_app(rpc.registry)  # E: arg-type
    return create_app(rpc)
"""


def test_mypy_rejects_a_misspelt_service_at_every_boundary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A fresh cache next to the snippet: nothing from another run, checkout or mypy version is replayed.
    work = tmp_path
    source = work / "typed_boundaries_snippet.py"
    source.write_text(SNIPPET)
    monkeypatch.chdir(ROOT)  # the project's packages, as `mypy app rpc gateway` sees them
    config = ["--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(work / "cache")]
    stdout, stderr, _status = api.run([*config, "--no-error-summary", str(source)])
    assert stderr == ""
    expected = {
        (number, line.split("# E: ")[1].strip())
        for number, line in enumerate(SNIPPET.splitlines(), start=1)
        if "# E: " in line
    }
    reported = set()
    for line in stdout.splitlines():
        if ": error: " not in line:
            continue
        assert line.startswith(str(source)), line  # the project itself type-checks
        number = int(line.split(":")[1])
        code = line.rsplit("[", 1)[1].rstrip("]")
        reported.add((number, code))
    assert reported == expected, stdout


def test_a_prompt_with_attachments_and_no_files_service_is_a_wiring_error_not_an_attribute_error() -> None:
    """Found by typing `Services`: `file_service()` may return None, and `session/prompt` and its REST twin called
    `.prompt_with_attachments` on it (an `AttributeError`, logged as an unexpected failure). They now answer as the
    `file/*` methods do."""
    services = types.SimpleNamespace(file_service=lambda: None)
    with pytest.raises(InternalError) as raised:
        files_of(services)  # type: ignore[arg-type]
    assert raised.value.data == {"kind": "internal_error", "reason": "wiring"}
