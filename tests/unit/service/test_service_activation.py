"""`app.service.activation.take` (R-SVC-1): systemd's LISTEN_* protocol, every bad input a one-line error.

The sockets are placed at fds from 500 on (`first_fd`), where the real daemon is given them from 3.
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.service.activation import ActivationError, Inherited, take

pytestmark = pytest.mark.skipif(os.name != "posix", reason="Unix sockets and fds")

BASE = 500
PID = 4242


@pytest.fixture
def fds() -> Iterator[list[int]]:
    """Fds placed at BASE, BASE+1, ...; closed after the test (whatever took them)."""
    placed: list[int] = []
    yield placed
    for fd in placed:
        with contextlib.suppress(OSError):  # a socket object that took it may have closed it already
            os.close(fd)


def place(fds: list[int], *sockets: socket.socket | int) -> None:
    for item in sockets:
        fd = item if isinstance(item, int) else item.fileno()
        os.dup2(fd, BASE + len(fds))
        fds.append(BASE + len(fds))
        if isinstance(item, socket.socket):
            item.close()
        else:
            os.close(item)


def unix_listener(tmp_path: Path, name: str = "s.sock") -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(tmp_path / name))
    s.listen()
    return s


def tcp_listener() -> socket.socket:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    return s


def env_for(count: int | str, names: str | None = None, pid: int | str = PID) -> dict[str, str]:
    env = {"LISTEN_PID": str(pid), "LISTEN_FDS": str(count), "OTHER": "kept"}
    if names is not None:
        env["LISTEN_FDNAMES"] = names
    return env


def taken(env: dict[str, str]) -> Inherited:
    return take(env, pid=PID, first_fd=BASE)


@pytest.mark.req("R-SVC-1")
def test_named_sockets_are_the_endpoint_and_the_gateway_and_the_variables_go(tmp_path: Path, fds: list[int]) -> None:
    place(fds, tcp_listener(), unix_listener(tmp_path))
    env = env_for(2, "gateway:rpc")
    inherited = taken(env)
    assert inherited.rpc is not None and inherited.gateway is not None
    assert inherited.rpc.family == socket.AF_UNIX and inherited.gateway.family == socket.AF_INET
    assert inherited.rpc_path == str(tmp_path / "s.sock")
    assert not inherited.rpc.get_inheritable()  # a tool's child process must not hold it
    assert env == {"OTHER": "kept"}


@pytest.mark.req("R-SVC-1")
@pytest.mark.parametrize("names", [None, "zeroclaw.socket:zeroclaw-gateway.socket", ":"])
def test_unnamed_sockets_are_placed_by_family(tmp_path: Path, fds: list[int], names: str | None) -> None:
    place(fds, unix_listener(tmp_path), tcp_listener())
    inherited = taken(env_for(2, names))
    assert inherited.rpc is not None and inherited.rpc.family == socket.AF_UNIX
    assert inherited.gateway is not None and inherited.gateway.family == socket.AF_INET


@pytest.mark.req("R-SVC-1")
def test_an_abstract_endpoint_has_no_path(fds: list[int]) -> None:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(f"\0zeroclaw-test-{os.getpid()}")
    s.listen()
    place(fds, s)
    inherited = taken(env_for(1, "rpc"))
    assert inherited.rpc is not None and inherited.rpc_path is None


@pytest.mark.req("R-SVC-1")
def test_variables_for_another_process_are_removed_and_not_taken(tmp_path: Path, fds: list[int]) -> None:
    place(fds, unix_listener(tmp_path))
    env = env_for(1, "rpc", pid=PID + 1)
    assert taken(env) == Inherited()
    assert env == {"OTHER": "kept"}
    assert taken({"LISTEN_FDS": "1"}) == Inherited()  # no LISTEN_PID: nothing was passed (sd_listen_fds)


@pytest.mark.req("R-SVC-1")
@pytest.mark.parametrize(
    ("env", "message"),
    [
        (env_for("two"), "LISTEN_FDS='two' is not a number of sockets (1 to 64)"),
        (env_for("0"), "LISTEN_FDS='0' is not a number of sockets (1 to 64)"),
        (env_for("-1"), "LISTEN_FDS='-1' is not a number of sockets (1 to 64)"),
        (env_for("9" * 40), f"LISTEN_FDS={'9' * 32 + '...'!r} is not a number of sockets (1 to 64)"),
        (env_for(1, pid="me"), "LISTEN_PID='me' is not a process id"),
        (env_for(2, "rpc"), "LISTEN_FDNAMES names 1 sockets but LISTEN_FDS=2"),
    ],
)
def test_garbage_in_the_variables_is_one_line(env: dict[str, str], message: str) -> None:
    with pytest.raises(ActivationError) as caught:
        taken(env)
    assert str(caught.value) == message
    assert "LISTEN_FDS" not in env and "LISTEN_PID" not in env


@pytest.mark.req("R-SVC-1")
def test_a_socket_of_the_wrong_family_for_its_name(tmp_path: Path, fds: list[int]) -> None:
    place(fds, tcp_listener())
    with pytest.raises(ActivationError, match=f"^fd {BASE} is named rpc but is an AF_INET socket, not a Unix socket$"):
        taken(env_for(1, "rpc"))


@pytest.mark.req("R-SVC-1")
def test_a_unix_socket_named_gateway(tmp_path: Path, fds: list[int]) -> None:
    place(fds, unix_listener(tmp_path))
    with pytest.raises(ActivationError, match=f"^fd {BASE} is named gateway but is an AF_UNIX socket, not TCP$"):
        taken(env_for(1, "gateway"))


@pytest.mark.req("R-SVC-1")
def test_two_sockets_for_one_role(tmp_path: Path, fds: list[int]) -> None:
    place(fds, unix_listener(tmp_path, "a.sock"), unix_listener(tmp_path, "b.sock"))
    with pytest.raises(ActivationError, match=f"^two sockets for rpc: fd {BASE} and fd {BASE + 1}$"):
        taken(env_for(2))


@pytest.mark.req("R-SVC-1")
def test_a_datagram_socket_a_pipe_a_closed_fd_and_a_connection(tmp_path: Path, fds: list[int]) -> None:
    dgram = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    read_end, write_end = os.pipe()
    os.close(write_end)
    listener = unix_listener(tmp_path)
    connected = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connected.connect(str(tmp_path / "s.sock"))
    place(fds, dgram, read_end, connected)
    listener.close()
    with pytest.raises(ActivationError, match="is not a stream socket \\(use ListenStream="):
        take(env_for(1), pid=PID, first_fd=BASE)
    with pytest.raises(ActivationError, match=f"^LISTEN_FDS: fd {BASE + 1} \\(rpc\\) is not a socket$"):
        take(env_for(1, "rpc"), pid=PID, first_fd=BASE + 1)
    with pytest.raises(ActivationError, match="is not listening \\(a connection socket: use Accept=no"):
        take(env_for(1), pid=PID, first_fd=BASE + 2)
    with pytest.raises(ActivationError, match=f"^LISTEN_FDS: fd {BASE + 3} is not open$"):
        take(env_for(1), pid=PID, first_fd=BASE + 3)
