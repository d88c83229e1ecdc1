"""The session tables (0002, chat snapshots 0006): upgrade and downgrade, no drift, cascading deletes."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from app.storage.engine import default_url
from app.storage.migrate import HEAD_REVISION, alembic_config, upgrade
from app.storage.models import Base

SESSION_TABLES = {
    *("acp_sessions", "acp_transcript", "acp_turns", "acp_snapshots"),
    *("chat_sessions", "chat_messages", "chat_snapshots"),
    *("acp_turn_usage", "chat_turn_usage"),
}


SESSION_ROW = "('s', 'o', 'default', '/w', 'rpc', ?, ?, NULL, NULL, 1, NULL, NULL, 0, NULL, NULL, NULL, NULL)"


def _engine(tmp_path: Path) -> sa.Engine:
    return sa.create_engine(f"sqlite:///{tmp_path / 'zeroclaw.db'}")


@pytest.mark.req("R-ACP-1")
def test_head_has_the_session_tables_and_no_drift(tmp_path: Path) -> None:
    upgrade(default_url(tmp_path))
    engine = _engine(tmp_path)
    try:
        with engine.connect() as conn:
            assert set(sa.inspect(conn).get_table_names()) >= SESSION_TABLES
            context = MigrationContext.configure(conn, opts={"compare_type": True})
            assert compare_metadata(context, Base.metadata) == []
            assert conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalar() == HEAD_REVISION
    finally:
        engine.dispose()
    assert HEAD_REVISION == "0011"


def test_downgrade_to_0001_drops_only_the_session_tables(tmp_path: Path) -> None:
    url = default_url(tmp_path)
    upgrade(url)
    command.downgrade(alembic_config(url), "0001")
    engine = _engine(tmp_path)
    try:
        with engine.connect() as conn:
            tables = set(sa.inspect(conn).get_table_names())
    finally:
        engine.dispose()
    assert "pairing_tokens" in tables and not (SESSION_TABLES & tables)
    upgrade(url)


@pytest.mark.req("R-ACP-10")
def test_deleting_a_session_row_cascades_to_its_children(tmp_path: Path) -> None:
    upgrade(default_url(tmp_path))
    engine = _engine(tmp_path)
    now = "2024-12-01 00:00:00"
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql("PRAGMA foreign_keys=ON")
            conn.exec_driver_sql(f"INSERT INTO acp_sessions VALUES {SESSION_ROW}", (now, now))
            conn.exec_driver_sql(
                "INSERT INTO acp_transcript VALUES ('s', 0, 'user', 'hi', NULL, NULL, NULL, 't', 'rpc', 1, ?, 0)",
                (now,),
            )
            conn.exec_driver_sql("INSERT INTO acp_snapshots VALUES ('s', 1, '[]', 0, 'rpc', ?)", (now,))
            conn.exec_driver_sql(f"INSERT INTO chat_sessions VALUES {SESSION_ROW}", (now, now))
            conn.exec_driver_sql("INSERT INTO chat_snapshots VALUES ('s', 1, '[]', 0, 'rpc', ?)", (now,))
            conn.exec_driver_sql("DELETE FROM acp_sessions")
            for table in ("acp_transcript", "acp_snapshots"):
                assert conn.exec_driver_sql(f"SELECT count(*) FROM {table}").scalar() == 0
            assert conn.exec_driver_sql("SELECT count(*) FROM chat_snapshots").scalar() == 1  # R-ACP-10
            conn.exec_driver_sql("DELETE FROM chat_sessions")
            assert conn.exec_driver_sql("SELECT count(*) FROM chat_snapshots").scalar() == 0
    finally:
        engine.dispose()
