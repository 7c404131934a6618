"""Refresh asks this machine what still exists, whatever the host is named."""

import socket
import subprocess
import sys
import time

from specdsl.apply.refresh import refresh
from specdsl.model.config import Host as HostDecl
from specdsl.state import Environment, ServerRecord, State


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_records_of_a_named_local_host_are_checked(tmp_path):
    port = _free_port()
    live = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(tmp_path)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        state = State.new()
        state = state.with_server(ServerRecord("alive", "launch.a", "gpu", live.pid, live.pid, port, f"http://127.0.0.1:{port}"))
        state = state.with_server(ServerRecord("gone", "launch.b", "gpu", dead.pid, dead.pid, port + 1, f"http://127.0.0.1:{port + 1}"))
        state = state.with_environment(Environment("env-gone", "gpu", str(tmp_path / "nope"), str(tmp_path / "nope/bin/python"), "3.11"))
        fresh = refresh(state, names={"gpu": HostDecl("gpu")})
        assert fresh.servers == frozenset({"alive"})
        assert fresh.environments == frozenset()
        assert any("launch.b" in d and "does not answer" in d for d in fresh.drift)
        # a host that is not this machine is trusted, not asked
        remote = refresh(state, names={"gpu": HostDecl("gpu", ssh="bench@gpu8")})
        assert remote.servers == frozenset({"alive", "gone"})
    finally:
        live.terminate()
        live.wait(timeout=10)
