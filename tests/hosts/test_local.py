"""LocalHost against real subprocesses and real sockets."""

from __future__ import annotations

import os
import socket
import sys
import threading
import time

import pytest

from specdsl.hosts import Cancelled, Host, HostError, LocalHost
from specdsl.hosts.http import session

PY = sys.executable


@pytest.fixture
def host():
    return LocalHost()


def test_local_host_implements_protocol(host):
    assert isinstance(host, Host)


def test_run_logs_output_env_cwd_and_status(host, tmp_path):
    log = tmp_path / "run.log"
    code = "import os,sys; print('out', os.environ['SPX'], os.getcwd()); print('err', file=sys.stderr); sys.exit(3)"
    result = host.run([PY, "-c", code], log_path=log, timeout=30, env={"SPX": "v1"}, cwd=tmp_path)
    assert result.returncode == 3
    assert not result.ok and not result.timed_out
    text = log.read_text()
    assert text.startswith("$ ")  # the exact command heads its output
    assert f"out v1 {tmp_path}" in text
    assert "err" in text
    assert "exit 3" in result.tail


def test_run_env_none_removes_variable(host, tmp_path):
    os.environ["SPECDSL_TEST_UNSET"] = "x"
    try:
        code = "import os; print('has', 'SPECDSL_TEST_UNSET' in os.environ)"
        result = host.run([PY, "-c", code], log_path=tmp_path / "l", timeout=30, env={"SPECDSL_TEST_UNSET": None})
    finally:
        del os.environ["SPECDSL_TEST_UNSET"]
    assert result.ok
    assert "has False" in result.tail


def test_run_timeout_kills_the_whole_group(host, tmp_path):
    # The child forks a grandchild that also sleeps: both must be gone.
    code = "import subprocess,sys,time; subprocess.Popen([sys.executable,'-c','import time; time.sleep(60)']); time.sleep(60)"
    started = time.monotonic()
    result = host.run([PY, "-c", code], log_path=tmp_path / "l", timeout=1.5)
    assert result.timed_out and not result.ok
    assert time.monotonic() - started < 15
    assert "timed out" in result.tail


def test_run_cancelled_by_stop_event(host, tmp_path):
    stop = threading.Event()
    threading.Timer(0.5, stop.set).start()
    with pytest.raises(Cancelled):
        host.run([PY, "-c", "import time; time.sleep(60)"], log_path=tmp_path / "l", timeout=60, stop=stop)


def test_run_missing_program_is_a_host_error(host, tmp_path):
    with pytest.raises(HostError, match="no-such-program"):
        host.run(["/nonexistent/no-such-program"], log_path=tmp_path / "l", timeout=5)


def test_start_alive_stop_confirms_group_gone(host, tmp_path):
    code = "import subprocess,sys,time; subprocess.Popen([sys.executable,'-c','import time; time.sleep(60)']); print('up', flush=True); time.sleep(60)"
    handle = host.start([PY, "-c", code], log_path=tmp_path / "srv.log")
    try:
        assert handle.pgid == handle.pid != os.getpgid(0)
        deadline = time.monotonic() + 10
        while len(host.group_pids(handle.pgid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(host.group_pids(handle.pgid)) == 2
        assert host.alive(handle)
    finally:
        host.stop(handle, grace_s=5)
    assert not host.alive(handle)
    assert host.group_pids(handle.pgid) == []
    assert "up" in (tmp_path / "srv.log").read_text()


def test_stop_kills_a_process_that_ignores_term(host, tmp_path):
    code = "import signal,time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); time.sleep(60)"
    handle = host.start([PY, "-c", code], log_path=tmp_path / "l")
    try:
        deadline = time.monotonic() + 10
        while "ready" not in host.tail(tmp_path / "l") and time.monotonic() < deadline:
            time.sleep(0.05)
        started = time.monotonic()
        host.stop(handle, grace_s=0.5)
        assert time.monotonic() - started < 5
    finally:
        host.stop(handle, grace_s=0)
    assert host.group_pids(handle.pgid) == []


def test_alive_false_after_exit_and_stop_is_idempotent(host, tmp_path):
    handle = host.start([PY, "-c", "pass"], log_path=tmp_path / "l")
    deadline = time.monotonic() + 10
    while host.alive(handle) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not host.alive(handle)
    host.stop(handle)  # nothing left: no error


def test_stop_refuses_our_own_group(host, tmp_path):
    from specdsl.hosts import ProcessHandle

    with pytest.raises(HostError, match="refusing"):
        host.stop(ProcessHandle(os.getpid(), os.getpgid(0), ("x",), str(tmp_path / "l")))


def test_free_port_and_busy_port(host):
    port = host.free_port()
    assert host.port_free(port)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))
        sock.listen()
        assert not host.port_free(port)


def ephemeral_range() -> tuple[int, int]:
    """This machine's ephemeral ports, read here as the test's own fact."""
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        first, last = map(int, f.read().split())
    return first, last


@pytest.mark.skipif(not os.path.exists("/proc/sys/net/ipv4/ip_local_port_range"), reason="not Linux")
def test_free_port_is_outside_the_ephemeral_range(host):
    """An outgoing connection can never take it while a server starts."""
    first, last = ephemeral_range()
    chosen = {host.free_port() for _ in range(30)}
    assert all(not first <= port <= last for port in chosen), (chosen, first, last)
    assert all(1024 <= port <= 65535 and host.port_free(port) for port in chosen)
    assert len(chosen) > 1  # at random: two launches choosing at once rarely meet


@pytest.mark.skipif(not os.path.exists("/proc/sys/net/ipv4/ip_local_port_range"), reason="not Linux")
def test_pick_port_reads_the_range_it_is_given(tmp_path):
    from specdsl.hosts import ports

    def picks(text: str) -> set[int]:
        (tmp_path / "range").write_text(text)
        return {ports.pick_port(path=str(tmp_path / "range")) for _ in range(20)}

    assert all(20000 <= p < 32768 for p in picks("32768\t60999\n"))  # Linux's default: the room below it
    assert all(50001 <= p <= 65535 for p in picks("15000 50000"))  # more room above than from 20000 up
    assert all(1024 <= p < 9000 for p in picks("9000 65535"))  # starting below 20000: from 1024
    first, last = ephemeral_range()
    for unknown in ("1024 65535", "garbage", "60999 32768", ""):  # no room, or not a range: the kernel's choice
        assert all(first <= p <= last for p in picks(unknown)), unknown
    assert ports.ephemeral_range(str(tmp_path / "missing")) is None


class ScriptedRandom:
    """A stand-in for `random` whose `randint` gives the ports listed, then the last forever."""

    def __init__(self, *values: int) -> None:
        self.values = list(values)

    def randint(self, lo: int, hi: int) -> int:
        value = self.values.pop(0) if len(self.values) > 1 else self.values[0]
        assert lo <= value <= hi
        return value


@pytest.mark.skipif(not os.path.exists("/proc/sys/net/ipv4/ip_local_port_range"), reason="not Linux")
def test_pick_port_passes_over_a_taken_port(tmp_path):
    from specdsl.hosts import ports

    (tmp_path / "range").write_text("1024 20000")  # room: 20001-65535
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        taken = sock.getsockname()[1]
        if taken <= 20000:
            pytest.skip("the kernel's port is inside the test's range")
        free = next(p for p in range(taken + 1, 65536) if ports.port_free(p))
        assert ports.pick_port(path=str(tmp_path / "range"), rng=ScriptedRandom(taken, free)) == free
        kernel = ports.pick_port(path=str(tmp_path / "range"), rng=ScriptedRandom(taken))  # never a free one
        first, last = ephemeral_range()
        assert first <= kernel <= last and ports.port_free(kernel)


def test_tail_of_missing_file_is_empty(host, tmp_path):
    assert host.tail(tmp_path / "none") == ""
    (tmp_path / "f").write_text("".join(f"line {i}\n" for i in range(100)))
    assert host.tail(tmp_path / "f", 3) == "line 97\nline 98\nline 99"


def test_http_session_always_has_a_timeout(host, tmp_path):
    # A real server that accepts and never answers: the default timeout fires.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        import requests

        started = time.monotonic()
        with pytest.raises(requests.exceptions.ReadTimeout):
            session(timeout=0.5).get(f"http://127.0.0.1:{port}/")
        assert time.monotonic() - started < 5
        with pytest.raises(ValueError, match="timeout"):
            session().get(f"http://127.0.0.1:{port}/", timeout=None)


# -- files, programs, ports, and the registry ---------------------------------

def test_write_text_is_atomic_and_private(tmp_path):
    host = LocalHost(env_root=tmp_path / "envs")
    target = tmp_path / "deep" / "er" / "file.txt"
    host.write_text(target, "one")
    host.write_text(target, "two")
    assert host.read_text(target) == "two"
    assert oct(target.stat().st_mode & 0o777) == oct(0o600)
    assert oct((tmp_path / "deep").stat().st_mode & 0o777) == oct(0o700)
    assert [p.name for p in target.parent.iterdir()] == ["file.txt"]  # no temporary left


def test_read_text_tail_and_missing(tmp_path):
    host = LocalHost(env_root=tmp_path)
    f = tmp_path / "log"
    f.write_bytes(b"abc\xffdef")
    assert host.read_text(f, max_bytes=3) == "def"
    assert "\ufffd" in host.read_text(f)
    with pytest.raises(FileNotFoundError):
        host.read_text(tmp_path / "nope")


def test_remove_tree_temp_dir_lock_and_exists(tmp_path):
    host = LocalHost(env_root=tmp_path)
    (tmp_path / "t" / "a").mkdir(parents=True)
    host.remove_tree(tmp_path / "t")
    host.remove_tree(tmp_path / "t")  # missing is fine
    assert not host.exists(tmp_path / "t")
    with host.temp_dir() as tmp:
        kept = tmp
        assert host.exists(tmp)
    assert not host.exists(kept)
    with host.lock(tmp_path / "x.lock"):
        assert host.exists(tmp_path / "x.lock")


def test_which_finds_programs_and_the_bundled_uv(tmp_path):
    host = LocalHost(env_root=tmp_path)
    assert host.which("sh") and os.path.isabs(host.which("sh"))
    assert host.which("no-such-program-here") is None
    assert host.which("/bin/sh") == "/bin/sh"
    assert host.which(str(tmp_path)) is None  # a folder is not a program
    assert host.which("uv") is not None


def test_run_unframed_log_holds_only_the_output(tmp_path):
    host = LocalHost(env_root=tmp_path)
    log = tmp_path / "out.log"
    result = host.run(["sh", "-c", "echo hello"], log_path=log, timeout=10, framed=False)
    assert result.ok
    assert log.read_text() == "hello\n"
    assert oct(log.stat().st_mode & 0o777) == oct(0o600)


def test_registry_one_host_per_machine_and_clear_error_for_ssh(tmp_path, monkeypatch):
    from specdsl.hosts import HostError, HostRegistry, host_key
    from specdsl.hosts.registry import KINDS, SSH_CONFIG_ENV
    from specdsl.model.config import Host as HostDecl

    reg = HostRegistry(env_root=tmp_path)
    a, b = HostDecl("a"), HostDecl("b", gpus=2)
    assert host_key(a) == host_key(b) == "local"
    assert reg.get(a) is reg.get(b)
    assert reg.get(a).env_root == tmp_path
    # an ssh host is connected when it is made: one that cannot be reached is a clear error
    (tmp_path / "ssh_config").write_text("Host gpu8\n  HostName no-such-host.invalid\n")
    monkeypatch.setenv(SSH_CONFIG_ENV, str(tmp_path / "ssh_config"))
    with pytest.raises(HostError, match=r"host gpu8 \(bench@gpu8\): connecting: unknown host"):
        reg.get(HostDecl("gpu8", ssh="bench@gpu8"))
    # a kind this registry has no class for
    with pytest.raises(HostError, match="reached over ssh"):
        HostRegistry(kinds={"local": KINDS["local"]}).get(HostDecl("gpu8", ssh="bench@gpu8"))
    assert host_key(HostDecl("gpu8", ssh="bench@gpu8")) == "ssh:bench@gpu8"
