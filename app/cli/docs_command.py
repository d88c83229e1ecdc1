"""`zeroclaw docs methods|openrpc`: the reference generated from this version's registry, without a daemon
(R-DISC-2). `--check FILE` is CI's: the committed page must be what this version generates."""

from __future__ import annotations

from pathlib import Path

import orjson

from app import __version__
from app.cli import terminal

__all__ = ["page", "write_page"]


def page(name: str) -> str:
    from rpc.contract.methods_page import render
    from rpc.contract.openrpc import openrpc_document
    from rpc.methods import build_registry

    document = openrpc_document(build_registry(), version=__version__)
    if name == "openrpc":
        return orjson.dumps(document, option=orjson.OPT_INDENT_2).decode() + "\n"
    return render(document)


def write_page(name: str, output: str | None, *, check: str | None = None) -> int:
    text = page(name)
    if check is not None:
        try:
            committed = Path(check).read_text(encoding="utf-8")
        except OSError as exc:
            terminal.say(f"zeroclaw: cannot read {check}: {exc.strerror or exc}")
            return 1
        if committed != text:
            terminal.say(
                f"zeroclaw: {check} is not what this version generates; run `zeroclaw docs {name} --output {check}`"
            )
            return 1
        return 0
    if output is not None:
        Path(output).write_text(text, encoding="utf-8")
    else:
        terminal.write_out(text)
    return 0
