"""`rpc.core.session_bridge`: a connection's session sink lives exactly as long as the connection."""

from __future__ import annotations

import weakref

import pytest
from gc_probe import cyclic_garbage
from test_connection import initialized, make_server

from rpc.core.session_bridge import sink_for


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
    with cyclic_garbage() as garbage:
        transport.close()
        del connection
        transport.connection = None
        # Regression: the connection held its sink and the sink its connection, a cycle that only the cyclic GC
        # freed (a slow reader's connection, cut off mid-turn, in benchmarks/soak.py; docs/limits.md "Garbage").
        assert gone() is None, "not freed by reference counting alone"
    assert not {"Connection", "ClientSink"} & set(garbage), garbage
