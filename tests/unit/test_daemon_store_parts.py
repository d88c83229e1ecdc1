"""The daemon's deferred storage stands in for every part of the session store (`store.transcript`, `store.forks`,
…) before the first call opens the database: a part it does not know made the first call that reached it after a
restart an internal error ('function' object has no attribute …)."""

from __future__ import annotations

import pytest

from app.daemon import SESSION_STORE_PARTS
from app.sessions.store.session_store import SessionStore

pytestmark = pytest.mark.req("R-STORE-1")


async def test_the_stand_in_knows_every_part_of_the_session_store(store: SessionStore) -> None:
    parts = {name for name in vars(store) if not name.startswith("_")}
    assert parts == SESSION_STORE_PARTS
