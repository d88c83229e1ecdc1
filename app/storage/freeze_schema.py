"""Refreeze `app.storage.sqlite_schema` from the migrations: `python -m app.storage.freeze_schema` after adding
one. It runs the Alembic chain on an empty SQLite file and writes what it made back into the generated part of
that module (a developer's tool: the daemon never imports it, and it imports Alembic and SQLAlchemy)."""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path

from app.storage import sqlite_schema
from app.storage.engine import default_url
from app.storage.migrate import HEAD_REVISION, upgrade

__all__ = ["main", "render"]


def render(text: str) -> str:
    """`text` (the schema module) with the schema the migrations produce now."""
    with tempfile.TemporaryDirectory() as tmp:
        upgrade(default_url(Path(tmp)))
        with sqlite3.connect(Path(tmp) / "zeroclaw.db") as con:
            statements = [row[0] for row in con.execute(sqlite_schema.DUMP)]

    def literal(piece: str) -> str:
        escaped = piece.replace("\\", "\\\\").replace('"', '\\"').replace("\t", "\\t").replace("\n", "\\n")
        return f'"{escaped}"'

    body = f'REVISION = "{HEAD_REVISION}"\nSTATEMENTS: tuple[str, ...] = (\n'
    for statement in statements:
        pieces = statement.splitlines(keepends=True)
        if len(pieces) == 1:
            body += f"    {literal(statement)},\n"
        else:
            body += "    (\n" + "".join(f"        {literal(piece)}\n" for piece in pieces) + "    ),\n"
    head, _, rest = text.partition("REVISION = ")
    _, _, tail = rest.partition("# END OF GENERATED PART\n")
    return head + body + ")\n# END OF GENERATED PART\n" + tail


def main() -> None:
    module = Path(sqlite_schema.__file__)
    module.write_text(render(module.read_text()))


if __name__ == "__main__":
    main()
