"""docs/zerocode.md's mapping table is checked against the code that makes the wire (R-ZC-2): every method the
dialect shapes is in the table, and each event row lists exactly the keys each dialect writes, in order."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_wire import EVENTS

from rpc.core.dialect import STANDARD
from rpc.dialects.zerocode.dialect import ZEROCODE
from rpc.dialects.zerocode.methods import ERRORS, PARAMS, RESULT_SHAPES

DOC = (Path(__file__).resolve().parents[3] / "docs" / "zerocode.md").read_text()
pytestmark = pytest.mark.req("R-ZC-2")


def _table(heading: str) -> dict[str, list[str]]:
    section = DOC.split(heading, 1)[1].split("\n#", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`") and not set(cells[1]) <= {"-"}:
            rows[cells[0].strip("`")] = cells[1:]
    return rows


def _keys(cell: str) -> list[str]:
    return [k.strip("` ") for k in cell.split(",")]


def test_every_method_the_dialect_shapes_is_in_the_table() -> None:
    methods = _table("### Methods")
    assert set(RESULT_SHAPES) | set(PARAMS) | set(ERRORS) | {"initialize"} <= set(methods)
    assert set(methods) <= set(RESULT_SHAPES) | {"initialize"}


def test_each_event_row_lists_the_keys_each_dialect_writes() -> None:
    rows = _table("### `session/update` events")
    assert set(rows) == {event["type"] for event, _ in EVENTS}
    for event, _ in EVENTS:
        standard, zerocode = rows[event["type"]]
        assert _keys(standard) == list(STANDARD.events([event])[0]), event["type"]
        if zerocode == "(not sent)":  # ZeroClaw 0.8.4 has no such event
            assert ZEROCODE.events([event]) == [], event["type"]
        else:
            assert _keys(zerocode) == list(ZEROCODE.events([event])[0]), event["type"]


def test_the_sentences_in_the_doc_are_the_ones_the_code_writes() -> None:
    for sentence in ("turn cancelled via", "turn cancelled (cause unattributed) in RPC_SESSION", "turn failed: "):
        code = (Path(__file__).resolve().parents[3] / "rpc" / "dialects" / "zerocode" / "dialect.py").read_text()
        assert sentence in DOC and sentence in code
    assert re.search(r"history message limit exceeded", DOC)
