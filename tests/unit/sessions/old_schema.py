"""Sessions stored the way an older release stored them, for the tests of a migration over its database: today's
store reads columns an older schema lacks (`model`, `temperature` of 0008), so the rows are inserted as SQL."""

from __future__ import annotations

from datetime import UTC, datetime
from os import PathLike

from db_backend import execute

__all__ = ["insert_session"]


def insert_session(
    url: str, session_id: str, *, owner: str, workspace_dir: str | PathLike[str], mode: str = "acp"
) -> None:
    """A new, empty, open session row in the table of `mode` ("acp" or "chat"), at any revision since 0002."""
    now = datetime.now(UTC).replace(tzinfo=None)
    at: object = now.strftime("%Y-%m-%d %H:%M:%S.%f") if url.startswith("sqlite") else now
    table = "chat_sessions" if mode == "chat" else "acp_sessions"
    execute(
        url,
        f"INSERT INTO {table} (session_id, owner, agent_alias, workspace_dir, interaction_surface, created_at, "
        "last_activity, next_index) VALUES (:sid, :owner, 'default', :workspace, 'rpc', :at, :at, 0)",
        sid=session_id,
        owner=owner,
        workspace=str(workspace_dir),
        at=at,
    )
