"""`zeroclaw docs methods|openrpc|python-client|typescript`: the reference and the typed clients generated from
this version's registry, without a daemon (R-DISC-2, R-ECO-3). `--check FILE` is CI's: the committed page must be
what this version generates.

`openrpc` is the contract alone: no `servers`, since where a daemon listens is that daemon's. The served document
(`rpc.discover`, `GET /openrpc.json`) is the same plus its `servers`, so `--check` of `openrpc` compares the
contract only: a document saved from a running daemon of this version passes."""

from __future__ import annotations

from pathlib import Path

import orjson

from app import __version__
from app.cli import terminal

__all__ = ["page", "write_page"]


def page(name: str) -> str:
    from rpc.contract import methods_page, python_client, typescript
    from rpc.contract.openrpc import openrpc_document
    from rpc.methods import build_registry

    document = openrpc_document(build_registry(), version=__version__)
    if name == "openrpc":
        return orjson.dumps(document, option=orjson.OPT_INDENT_2).decode() + "\n"
    if name == "python-client":
        return python_client.render(document)
    if name == "typescript":
        return typescript.render(document)
    return methods_page.render(document)


def _same_contract(committed: str, generated: str) -> bool:
    """Both OpenRPC documents say the same, `servers` aside (a served document names its daemon's)."""
    try:
        document = orjson.loads(committed)
    except orjson.JSONDecodeError:
        return False
    if not isinstance(document, dict):
        return False
    document.pop("servers", None)
    return bool(document == orjson.loads(generated))


def write_page(name: str, output: str | None, *, check: str | None = None) -> int:
    text = page(name)
    if check is not None:
        try:
            committed = Path(check).read_text(encoding="utf-8")
        except OSError as exc:
            terminal.say(f"zeroclaw: cannot read {check}: {exc.strerror or exc}")
            return 1
        if not (_same_contract(committed, text) if name == "openrpc" else committed == text):
            what = "the contract (all but `servers`) of " if name == "openrpc" else ""
            terminal.say(
                f"zeroclaw: {check} is not {what}what this version generates; "
                f"run `zeroclaw docs {name} --output {check}`"
            )
            return 1
        return 0
    if output is not None:
        Path(output).write_text(text, encoding="utf-8")
    else:
        terminal.write_out(text)
    return 0
