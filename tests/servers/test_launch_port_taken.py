"""A server whose port is taken while it starts: real SGLang 0.5.17 on an
H200 logged uvicorn's bind error after 214 s of startup and hung
(tests/servers/data/sglang-0.5.17-port-in-use.log). The launch fails at
once quoting that line, and a port specdsl chose is tried once more.

The collisions are real, and as on the H200: in `on_started` (the server
exists, held at its gate, and has not bound yet) the test opens an
outgoing connection from the server's port, and the double
(openai_double.py --hang-when-taken) really fails to bind it, logs as
uvicorn does and hangs as SGLang did."""

from __future__ import annotations

import socket
import sys
from contextlib import ExitStack
from pathlib import Path

import pytest

from specdsl.hosts import LocalHost
from specdsl.model.config import Server
from specdsl.servers import LaunchError, launch, teardown
from specdsl.servers.lifecycle import log_cause, port_taken

from test_launch_faults import DOUBLE, system_env  # noqa: F401  (fixture)

HOST = LocalHost()
REAL_LOG = Path(__file__).with_name("data") / "sglang-0.5.17-port-in-use.log"
REAL_LINE = "ERROR:    [Errno 98] error while attempting to bind on address ('127.0.0.1', 35069): address already in use"
SLOW = 120  # a ready timeout no test here may reach: each fails long before, or says "not ready within"


def hanging_double(port: int | None = None) -> Server:
    return Server(name="s", engine="command", model="tiny", ready_url="/health", ready_timeout=SLOW, port=port,
                  command=(sys.executable, DOUBLE, "{port}", "--hang-when-taken"))


class Squatter:
    """Takes the port of each started server (its first `times` launches)
    as an outgoing connection's local port: what took it in the H200 run."""

    def __init__(self, stack: ExitStack, times: int) -> None:
        self.stack, self.times, self.ports, self.pgids = stack, times, [], []
        self.peer = stack.enter_context(socket.socket())
        self.peer.bind(("127.0.0.1", 0))
        self.peer.listen()

    def __call__(self, handle) -> None:
        self.pgids.append(handle.pgid)
        if len(self.ports) < self.times:
            sock = self.stack.enter_context(socket.socket())
            sock.bind(("127.0.0.1", handle.port))
            sock.connect(self.peer.getsockname())
            self.ports.append(handle.port)


def gone(pgid: int) -> bool:
    return HOST.group_pids(pgid) == []


def test_the_real_log_reads_as_a_port_taken():
    text = REAL_LOG.read_text()
    assert REAL_LINE in text
    assert port_taken(text) == (REAL_LINE, 35069)
    assert log_cause(text) == REAL_LINE  # not a `SomethingError:` line, still the cause


def test_the_generic_forms_read_as_ports_taken():
    # vLLM binds its API socket itself; a traceback's last line, with its process tag
    assert port_taken("(APIServer pid=4712) OSError: [Errno 98] Address already in use\n") == \
        ("OSError: [Errno 98] Address already in use", None)
    torch = ("torch.distributed.DistNetworkError: The server socket has failed to listen on any local network "
             "address. port: 29500, useIPv6: 0, code: -98, name: EADDRINUSE, message: address already in use")
    assert port_taken(f"loading\n{torch}\nbye\n") == (torch, 29500)
    assert port_taken("[2026-12-02 10:00:00] Port 30000 is in use, trying 30001\nready\n") is None
    assert port_taken("the word address already in use in a sentence\n") is None
    # torch's store falling back from IPv6 to IPv4: a warning, the server goes on
    assert port_taken("[W1202 11:40:01.000000000 socket.cpp:464] [c10d] The server socket has failed to bind to "
                      "[::]:29500 (errno: 98 - Address already in use).\n") is None


def test_a_port_taken_while_starting_is_launched_again_on_another(system_env, tmp_path):  # noqa: F811
    said, warned = [], []
    with ExitStack() as stack:
        squat = Squatter(stack, times=1)
        handle = launch(hanging_double(), system_env, tmp_path, host=HOST, on_started=squat,
                        progress=said.append, warn=warned.append)
        try:
            first = squat.ports[0]
            assert handle.port != first
            message = f"port {first} was taken while the server started; launched again on port {handle.port}"
            assert warned == [message] and message in said
            assert said.index(message) < said.index(f"starting command server s on port {handle.port}")
            assert gone(squat.pgids[0])  # the failed launch's group, stopped before the second began
            assert len(squat.pgids) == 2 and squat.pgids[1] == handle.pgid
            first_log = (tmp_path / "server.log.1").read_text()
            assert f"bind on address ('127.0.0.1', {first}): address already in use" in first_log
            assert "double listening" in Path(handle.log_path).read_text()
        finally:
            teardown(handle, HOST)


def test_a_second_collision_fails_quoting_the_line(system_env, tmp_path):  # noqa: F811
    warned = []
    with ExitStack() as stack:
        squat = Squatter(stack, times=2)
        with pytest.raises(LaunchError) as info:
            launch(hanging_double(), system_env, tmp_path, host=HOST, on_started=squat, warn=warned.append)
    first, second = squat.ports
    what = info.value.what
    assert what.startswith(f"command server 's' could not listen on port {second} (taken while it started): "
                           f"ERROR:    [Errno 98] error while attempting to bind on address ('127.0.0.1', {second}): "
                           "address already in use")
    assert what.endswith(f"(a second launch, after port {first} was taken in the first)")
    assert "not ready within" not in str(info.value)
    assert warned == [f"port {first} was taken while the server started; launched again on port {second}"]
    assert all(gone(pgid) for pgid in squat.pgids)  # the double's child too


def test_a_configured_port_taken_while_starting_fails_without_a_second_launch(system_env, tmp_path):  # noqa: F811
    port = HOST.free_port()
    with ExitStack() as stack:
        squat = Squatter(stack, times=1)
        with pytest.raises(LaunchError) as info:
            launch(hanging_double(port), system_env, tmp_path, host=HOST, on_started=squat)
    assert squat.ports == [port] and len(squat.pgids) == 1
    assert info.value.what.startswith(f"command server 's' could not listen on port {port} (taken while it started): ")
    assert gone(squat.pgids[0])


def test_the_real_log_replayed_by_a_hung_server_fails_at_once(system_env, tmp_path):  # noqa: F811
    """The real log (its port made the server's own) replayed by a server
    that then hangs, as SGLang did; every launch finds it so: the second
    fails quoting the line."""
    replay = ("import sys, time; port = sys.argv[2]; text = open(sys.argv[1]).read().replace('35069', port);"
              "sys.stdout.write(text); sys.stdout.flush(); time.sleep(600)")
    server = Server(name="A", engine="command", model="m", ready_url="/health", ready_timeout=SLOW,
                    command=(sys.executable, "-c", replay, str(REAL_LOG), "{port}"))
    started = []
    with pytest.raises(LaunchError) as info:
        launch(server, system_env, tmp_path, host=HOST, on_started=lambda h: started.append((h.pgid, h.port)))
    (first_pgid, first), (second_pgid, second) = started
    line = REAL_LINE.replace("35069", str(second))
    assert info.value.what == (f"command server 'A' could not listen on port {second} (taken while it started): "
                               f"{line} (a second launch, after port {first} was taken in the first)")
    assert gone(first_pgid) and gone(second_pgid)


def test_a_bind_failure_on_another_port_is_fatal_only_when_the_server_dies(system_env, tmp_path):  # noqa: F811
    """A line naming another port (torch's store) in the log of a server
    that goes on to serve is not its end; in one that exits, it is quoted."""
    torch = ("torch.distributed.DistNetworkError: The server socket has failed to listen on any local network "
             "address. port: 29500, useIPv6: 0, code: -98, name: EADDRINUSE, message: address already in use")
    then_serve = ("import runpy, sys; print(sys.argv[1], flush=True); sys.argv = sys.argv[2:];"
                  "runpy.run_path(sys.argv[0], run_name='__main__')")
    survives = Server(name="t", engine="command", model="tiny", ready_url="/health", ready_timeout=SLOW,
                      command=(sys.executable, "-c", then_serve, torch, DOUBLE, "{port}", "--health-after", "2"))
    handle = launch(survives, system_env, tmp_path / "a", host=HOST)
    teardown(handle, HOST)
    dies = Server(name="t", engine="command", model="tiny", ready_url="/health", ready_timeout=SLOW,
                  command=(sys.executable, "-c", f"import sys; print({torch!r}); sys.exit(1)", "{port}"))
    started = []
    with pytest.raises(LaunchError) as info:
        launch(dies, system_env, tmp_path / "b", host=HOST, on_started=lambda h: started.append(h.pgid))
    assert info.value.what == f"command server 't' exited with code 1 during startup: {torch}"
    assert len(started) == 1  # another port's: a new port of its own would not help


def test_a_server_exiting_on_a_taken_port_is_launched_again(system_env, tmp_path):  # noqa: F811
    """vLLM's form: its API server binds the socket itself and exits with
    Python's bare error, which names no port (so: its own)."""
    code = ("import pathlib, sys; mark = pathlib.Path(sys.argv[1]);"
            "first = not mark.exists(); mark.touch();"
            "print('OSError: [Errno 98] Address already in use', flush=True) if first else None;"
            "sys.exit(1) if first else None;"
            "import runpy; sys.argv = [sys.argv[2], sys.argv[3]]; runpy.run_path(sys.argv[0], run_name='__main__')")
    server = Server(name="v", engine="command", model="tiny", ready_url="/health", ready_timeout=SLOW,
                    command=(sys.executable, "-c", code, str(tmp_path / "tried"), DOUBLE, "{port}"))
    warned = []
    handle = launch(server, system_env, tmp_path / "run", host=HOST, warn=warned.append)
    try:
        assert len(warned) == 1 and warned[0].endswith(f"launched again on port {handle.port}")
        assert "exited with code 1" not in warned[0]
    finally:
        teardown(handle, HOST)
