"""The watch on a server during its benchmark (specdsl.apply.server_watch),
on a real process of this machine: the stdlib OpenAI double of
tests/servers, started through LocalHost in its own group, then frozen
(SIGSTOP) and killed (-9)."""

from __future__ import annotations

import os
import signal
import socket
import sys
import time
from pathlib import Path

from specdsl.apply.server_watch import ServerWatch, already_exited
from specdsl.hosts.local import LocalHost
from specdsl.servers.base import ServerHandle

DOUBLE = str(Path(__file__).resolve().parents[1] / "servers" / "openai_double.py")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def test_a_watch_names_a_frozen_then_a_killed_server(tmp_path):
    host = LocalHost()
    port = _free_port()
    proc = host.start([sys.executable, DOUBLE, str(port)], log_path=tmp_path / "server.log")
    try:
        deadline = time.monotonic() + 30
        while not _listening(port):
            assert time.monotonic() < deadline, "the double never listened"
            time.sleep(0.05)
        base = f"http://127.0.0.1:{port}"
        handle = ServerHandle(pid=proc.pid, pgid=proc.pgid, port=port, bind="127.0.0.1", base_url=base,
                              log_path=str(tmp_path / "server.log"), argv=proc.argv, health_url=base + "/health")
        watch = ServerWatch("s", handle, host, answer_timeout_s=0.5)
        assert watch.check() == "" and already_exited(handle, host) == ""
        os.killpg(proc.pgid, signal.SIGSTOP)
        frozen = ServerWatch("s", handle, host, answer_timeout_s=0.5).start()
        try:
            deadline = time.monotonic() + 30
            while not frozen.stop.is_set():  # the thread finds it: two misses in a row
                assert time.monotonic() < deadline, "the watch never saw the frozen server"
                time.sleep(0.05)
        finally:
            frozen.close()
        assert frozen.lost.startswith(f"server s (pid {proc.pid}, process group {proc.pgid}) stopped answering at ")
        assert frozen.lost.endswith(f"its process runs but {base}/health did not answer within 0.5s")
        assert already_exited(handle, host) == ""  # frozen is not gone
        os.killpg(proc.pgid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while host.alive(proc):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        dead = ServerWatch("s", handle, host)
        lost = dead.check()
        assert lost.startswith(f"server s (pid {proc.pid}, process group {proc.pgid}) died at ")
        assert lost.endswith("during the benchmark, killed by signal 9")
        assert dead.log.startswith(f"its log ({tmp_path / 'server.log'}) is empty") or "the last lines of its log" in dead.log
        assert already_exited(handle, host) == "had already exited (killed by signal 9)"
    finally:
        host.stop(proc, grace_s=0)
