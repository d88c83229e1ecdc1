"""SessionStore: sessions, lifecycle, transcript rows and paging, on a real migrated SQLite file."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from app.sessions.errors import RowNotFound, SessionClosed, SessionKilled, SessionNotFound, SessionNotOwned
from app.sessions.store.session_store import SessionStore
from app.sessions.store.types import MAX_ROW_BYTES
from app.storage import Database


async def _new(store: SessionStore, sid: str = "s1", *, owner: str = "alice", mode: str = "acp") -> None:
    await store.create(sid, owner=owner, agent_alias="default", workspace_dir="/w", mode=mode, surface="rpc")  # type: ignore[arg-type]


async def _say(store: SessionStore, sid: str, role: str, content: str, turn: str = "t1", **kw: object) -> int:
    return await store.transcript.append(sid, role=role, content=content, turn_id=turn, surface="rpc", **kw)  # type: ignore[arg-type]


# -- sessions ----------------------------------------------------------------------------------------------


@pytest.mark.req("R-SES-1")
async def test_create_and_get_return_the_record(store: SessionStore) -> None:
    created = await store.create("s1", owner="alice", agent_alias="default", workspace_dir=Path("/w"))
    assert (created.session_id, created.owner, created.mode, created.surface) == ("s1", "alice", "acp", "rpc")
    assert created.workspace_dir == "/w"
    assert (created.killed, created.closed, created.message_count, created.resumed) == (False, False, 0, False)
    got = await store.get("s1")
    assert got is not None
    assert got.created_at == created.created_at
    assert await store.get("s1", mode="chat") is None
    assert await store.get("nope") is None


@pytest.mark.req("R-ACP-8")
async def test_close_keeps_history_and_create_or_reopen_resumes(store: SessionStore) -> None:
    await _new(store)
    await _say(store, "s1", "user", "hi")
    await store.close("s1")
    closed = await store.get("s1")
    assert closed is not None and closed.closed and closed.message_count == 1
    resumed = await store.create("s1", owner="alice", agent_alias="default", workspace_dir="/w")
    assert resumed.resumed and not resumed.closed and resumed.message_count == 1
    await store.close("s1")
    reopened = await store.reopen("s1")
    assert reopened.resumed and not reopened.closed


@pytest.mark.req("R-SES-1")
async def test_create_refuses_another_principals_id(store: SessionStore) -> None:
    await _new(store, owner="alice")
    with pytest.raises(SessionNotOwned):
        await _new(store, owner="bob")


@pytest.mark.req("R-ACP-8")
async def test_a_closed_chat_session_is_gone(store: SessionStore) -> None:
    await _new(store, "c1", mode="chat")
    await store.close("c1", mode="chat")
    with pytest.raises(SessionClosed):
        await store.reopen("c1", mode="chat")
    with pytest.raises(SessionClosed):
        await _new(store, "c1", mode="chat")
    # R-MULTI-4: it is still listed, closed, with its history kept
    assert [(r.session_id, r.closed) for r in await store.lists.list(None)] == [("c1", True)]


@pytest.mark.req("R-ACP-9")
async def test_kill_keeps_messages_readable_but_never_rehydrates(store: SessionStore) -> None:
    await _new(store)
    await _say(store, "s1", "user", "hi")
    await _say(store, "s1", "assistant", "hel", complete=False)
    await store.kill("s1")
    rows, total = await store.transcript.messages("s1")
    assert total == 2 and [r.content for r in rows] == ["hi", "hel"]
    assert all(r.complete for r in rows)  # nothing will ever finish it: it is final as it is
    record = await store.get("s1")
    assert record is not None and record.killed
    for attempt in (
        store.reopen("s1"),
        store.transcript.context("s1"),
        store.transcript.recover_interrupted("s1"),
        store.create("s1", owner="alice", agent_alias="default", workspace_dir="/w"),
    ):
        with pytest.raises(SessionKilled):
            await attempt


@pytest.mark.req("R-SES-4")
async def test_list_filters_owner_and_killed_and_spans_both_modes(store: SessionStore) -> None:
    await _new(store, "a1", owner="alice")
    await _new(store, "a2", owner="alice", mode="chat")
    await _new(store, "b1", owner="bob")
    await store.kill("b1")
    assert {r.session_id for r in await store.lists.list("alice")} == {"a1", "a2"}
    assert {(r.session_id, r.mode) for r in await store.lists.list(None)} == {("a1", "acp"), ("a2", "chat")}
    everyone = await store.lists.list(None, include_killed=True)
    assert {r.session_id for r in everyone} == {"a1", "a2", "b1"}
    assert next(r for r in everyone if r.session_id == "b1").killed


@pytest.mark.req("R-ACP-10")
async def test_delete_removes_acp_history_and_leaves_the_chat_session_untouched(store: SessionStore) -> None:
    await _new(store, "same")
    await _new(store, "same", mode="chat")
    await _say(store, "same", "user", "acp text")
    await store.transcript.append("same", mode="chat", role="user", content="chat text", turn_id="c", surface="gateway")
    await store.transcript.save_snapshot("same", [{"role": "user", "content": "acp text"}], 0)

    assert await store.delete("same") is True
    assert await store.get("same") is None
    with pytest.raises(SessionNotFound):
        await store.transcript.messages("same")
    chat_rows, chat_total = await store.transcript.messages("same", mode="chat")
    assert chat_total == 1 and chat_rows[0].content == "chat text"
    assert await store.delete("same") is False


@pytest.mark.req("R-SES-4")
async def test_a_deleted_id_starts_over_empty(store: SessionStore) -> None:
    await _new(store)
    await _say(store, "s1", "user", "old")
    await store.delete("s1")
    fresh = await store.create("s1", owner="bob", agent_alias="default", workspace_dir="/w")
    assert not fresh.resumed and fresh.message_count == 0
    assert await _say(store, "s1", "user", "new") == 0


async def test_touch_moves_last_activity(store: SessionStore) -> None:
    await _new(store)
    before = await store.get("s1")
    await asyncio.sleep(0.002)  # the clock moves: last_activity is a reading of it
    await store.touch("s1")
    after = await store.get("s1")
    assert before is not None and after is not None and after.last_activity > before.last_activity
    with pytest.raises(SessionNotFound):
        await store.touch("missing")


# -- transcript --------------------------------------------------------------------------------------------


@pytest.mark.req("R-ACP-1")
async def test_append_numbers_rows_densely_and_records_every_field(store: SessionStore) -> None:
    await _new(store)
    assert await _say(store, "s1", "user", "run ls") == 0
    assert await _say(store, "s1", "tool_call", '{"cmd":"ls"}', tool_call_id="tc_1", name="bash") == 1
    assert await _say(store, "s1", "tool_result", "a b", tool_call_id="tc_1", name="bash") == 2
    rows, total = await store.transcript.messages("s1")
    assert total == 3
    call = rows[1]
    assert (call.index, call.role, call.tool_call_id, call.name, call.turn_id, call.surface, call.complete) == (
        1,
        "tool_call",
        "tc_1",
        "bash",
        "t1",
        "rpc",
        True,
    )
    assert (await store.get("s1")).message_count == 3  # type: ignore[union-attr]


async def test_append_validates_rows(store: SessionStore) -> None:
    await _new(store)
    with pytest.raises(ValueError, match="role"):
        await _say(store, "s1", "system", "no")
    with pytest.raises(ValueError, match="tool_call_id"):
        await _say(store, "s1", "tool_result", "x", name="bash")
    with pytest.raises(ValueError, match="marker"):
        await _say(store, "s1", "marker", "x")
    with pytest.raises(ValueError, match="surface"):
        await store.transcript.append("s1", role="user", content="x", turn_id="t", surface="smtp")  # type: ignore[arg-type]
    with pytest.raises(SessionNotFound):
        await _say(store, "missing", "user", "x")
    assert (await store.transcript.messages("s1"))[1] == 0


@pytest.mark.req("R-ACP-5")
async def test_rows_over_64_kib_are_clipped_with_a_note(store: SessionStore) -> None:
    await _new(store)
    big = "é" * MAX_ROW_BYTES  # two bytes each: twice the limit
    index = await _say(store, "s1", "tool_result", big, tool_call_id="tc", name="bash")
    await _say(store, "s1", "assistant", "", complete=False)
    await store.transcript.update_text("s1", index + 1, "x" * (MAX_ROW_BYTES + 10), complete=True)
    rows, _ = await store.transcript.messages("s1")
    for row in rows:
        assert len(row.content.encode()) <= MAX_ROW_BYTES
        assert "truncated" in row.content
    assert rows[0].content.startswith("é" * 1000)


@pytest.mark.req("R-ACP-4")
async def test_update_text_checkpoints_streaming_text_in_place(store: SessionStore) -> None:
    await _new(store)
    await _say(store, "s1", "user", "hi")
    index = await _say(store, "s1", "assistant", "He", complete=False)
    await store.transcript.update_text("s1", index, "Hello", complete=False)
    rows, _ = await store.transcript.messages("s1")
    assert (rows[-1].content, rows[-1].complete) == ("Hello", False)
    await store.transcript.update_text("s1", index, "Hello there", complete=True)
    rows, total = await store.transcript.messages("s1")
    assert (rows[-1].content, rows[-1].complete, total) == ("Hello there", True, 2)
    with pytest.raises(RowNotFound):
        await store.transcript.update_text("s1", 99, "x", complete=True)


@pytest.mark.req("R-ACP-4")
async def test_rows_are_visible_to_another_database_before_the_turn_ends(store: SessionStore, db_url: str) -> None:
    await _new(store)
    other = await Database.open(db_url)  # a second engine: sees only what was committed
    try:
        reader = SessionStore(other)
        await _say(store, "s1", "user", "hi")
        index = await _say(store, "s1", "assistant", "Hel", complete=False)
        rows, _ = await reader.transcript.messages("s1")
        assert [(r.content, r.complete) for r in rows] == [("hi", True), ("Hel", False)]
        await store.transcript.update_text("s1", index, "Hello", complete=False)
        rows, _ = await reader.transcript.messages("s1")
        assert rows[-1].content == "Hello"
        await _say(store, "s1", "tool_call", "{}", tool_call_id="tc_1", name="bash")
        assert (await reader.transcript.messages("s1"))[1] == 3
    finally:
        await other.close()


@pytest.mark.req("R-SES")
async def test_messages_pages_with_limit_and_before(store: SessionStore) -> None:
    await _new(store)
    for n in range(10):
        await _say(store, "s1", "user", f"m{n}")
    rows, total = await store.transcript.messages("s1", limit=3)
    assert total == 10 and [r.index for r in rows] == [7, 8, 9]
    rows, _ = await store.transcript.messages("s1", limit=3, before=7)
    assert [r.index for r in rows] == [4, 5, 6]
    rows, _ = await store.transcript.messages("s1", limit=100, before=2)
    assert [r.index for r in rows] == [0, 1]
    rows, _ = await store.transcript.messages("s1", limit=5, before=0)
    assert rows == []
    rows, total = await store.transcript.messages("s1", limit=0)
    assert rows == [] and total == 10
    with pytest.raises(ValueError):
        await store.transcript.messages("s1", limit=-1)


@pytest.mark.req("R-ACP-4")
@pytest.mark.req("R-ACP-5")
async def test_turn_ends_say_where_each_ended_turn_ends_and_how(store: SessionStore) -> None:
    """issue 29 §4.9: `messages_and_turn_ends` gives the page `messages` gives, and for each ended turn whose last
    row is in it that row's index and the turn's stop reason. A cancelled turn adds no row (R-ACP-4), so this is
    how a client can show it; a running turn, or one that goes on past the page, is not listed."""
    await _new(store)
    await _say(store, "s1", "user", "one", "t1")  # 0
    await _say(store, "s1", "assistant", "You said one", "t1")  # 1
    await store.transcript.finish_turn("s1", "t1", "end_turn")
    # a gateway turn the daemon never finished: its rows come before the rpc turns, its marker after them
    await store.transcript.append("s1", role="user", content="by webhook", turn_id="g1", surface="gateway")  # 2
    await _say(store, "s1", "user", "/sleep 5", "t2")  # 3
    await _say(store, "s1", "assistant", "Sleeping", "t2")  # 4
    await store.transcript.finish_turn("s1", "t2", "cancelled")
    await _say(store, "s1", "user", "two", "t3")  # 5
    await _say(store, "s1", "tool_call", "{}", "t3", tool_call_id="c1", name="bash")  # 6
    await store.transcript.finish_turn("s1", "t3", "failed")
    assert await store.transcript.recover_interrupted("s1", surface="gateway")  # 7: g1's marker row
    await _say(store, "s1", "user", "three", "t4")  # 8: still running

    rows, total, ends = await store.transcript.messages_and_turn_ends("s1")
    assert (rows, total) == await store.transcript.messages("s1")  # the same page as without turn ends
    assert total == 9 and rows[7].marker == "interrupted" and rows[7].turn_id == "g1"
    assert [(e.index, e.stop_reason) for e in ends] == [(1, "end_turn"), (4, "cancelled"), (6, "failed"),
                                                        (7, "interrupted")]  # fmt: skip
    pages = {
        (3, None): [(6, "failed"), (7, "interrupted")],  # rows 6..8: the marker ends g1 at 7; t4 runs
        (2, 3): [(1, "end_turn")],  # rows 1..2: g1 goes on after the page
        (4, 5): [(1, "end_turn"), (4, "cancelled")],  # rows 1..4
        (1, 4): [],  # row 3: t2 goes on at 4
        (3, 8): [(6, "failed"), (7, "interrupted")],  # rows 5..7
        (0, None): [],
        (5, 0): [],
    }
    for (limit, before), expected in pages.items():
        rows, total, ends = await store.transcript.messages_and_turn_ends("s1", limit=limit, before=before)
        assert (rows, total) == await store.transcript.messages("s1", limit=limit, before=before), (limit, before)
        assert [(e.index, e.stop_reason) for e in ends] == expected, (limit, before)
    # the turns table is the ACP sessions': a chat session has no turn ends to give
    await _new(store, "c1", mode="chat")
    await store.transcript.append("c1", mode="chat", role="user", content="hi", turn_id="t", surface="gateway")
    await store.transcript.finish_turn("c1", "t", "cancelled", mode="chat")
    rows, total, ends = await store.transcript.messages_and_turn_ends("c1", mode="chat")
    assert total == 1 and len(rows) == 1 and ends == []
    with pytest.raises(SessionNotFound):
        await store.transcript.messages_and_turn_ends("c1")
    with pytest.raises(ValueError):
        await store.transcript.messages_and_turn_ends("s1", before=-1)


async def test_chat_history_lives_in_its_own_table(store: SessionStore) -> None:
    await _new(store, "c1", mode="chat")
    index = await store.transcript.append(
        "c1", mode="chat", role="assistant", content="Hi", turn_id="t", surface="gateway", complete=False
    )
    await store.transcript.update_text("c1", index, "Hi there", complete=False, mode="chat")
    await store.transcript.finish_turn("c1", "t", "end_turn", mode="chat")
    rows, total = await store.transcript.messages("c1", mode="chat")
    assert total == 1 and (rows[0].content, rows[0].complete, rows[0].surface) == ("Hi there", True, "gateway")
    with pytest.raises(SessionNotFound):
        await store.transcript.messages("c1")  # no ACP session by that id
    context = await store.transcript.context("c1", mode="chat", surface="gateway")
    assert context.messages == [{"role": "assistant", "content": "Hi there"}]
