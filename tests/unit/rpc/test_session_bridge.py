"""`rpc.session_bridge`: a connection's session sink lives exactly as long as the connection."""

from __future__ import annotations

import gc
import weakref

import pytest
from test_connection import initialized, make_server

from rpc.session_bridge import sink_for


@pytest.mark.req("R-LIM")
async def test_a_closed_connection_that_watched_a_session_is_freed() -> None:
    """Regression: the sinks were kept in a WeakKeyDictionary whose values held their keys, so every connection
    that had prompted or watched a session stayed in memory after it closed."""
    server, _ = make_server()
    transport = await initialized(server)
    connection = transport.connection
    assert connection is not None
    assert sink_for(connection.context) is sink_for(connection.context)  # one sink per connection
    gone = weakref.ref(connection)
    transport.close()
    del connection
    transport.connection = None
    gc.collect()
    assert gone() is None
