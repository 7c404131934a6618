"""SshHost against a real sshd on loopback: commands, processes, files, ports."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from specdsl.bench.command import expand_command
from specdsl.hosts import Cancelled, HostError
from specdsl.servers.args import render_args

# Each would run something, split a word or change bytes if a shell parsed it unquoted.
HOSTILE = [
    "two words", "it's", '"double"', "$(touch {canary}/dollar)", "`touch {canary}/backtick`",
    "; touch {canary}/semicolon", "a\nb; touch {canary}/newline", "ünïcødé €✓", "*", "back\\slash",
    "--flag=$(id)", "", "  ", "$HOME", "'; touch {canary}/quote; '", "a|b&c>d<e",
]

RECORDER = (
    "import json, os, sys\n"
    "json.dump({'argv': sys.argv[2:], 'env': os.environ.get('SPECDSL_HOSTILE'), 'cwd': os.getcwd()},"
    " open(sys.argv[1], 'w', encoding='utf-8'))\n"
)


def hostile(canary: Path) -> list[str]:
    return [v.replace("{canary}", str(canary)) for v in HOSTILE]


def test_a_remote_command_runs_and_logs(ssh_host):
    log = ssh_host.workdir / "logs" / "echo.log"
    result = ssh_host.run(["sh", "-c", "echo hello; echo oops >&2; exit 3"], log_path=log, timeout=30)
    assert result.returncode == 3 and not result.ok and not result.timed_out
    text = ssh_host.read_text(log)
    assert "hello" in text and "oops" in text
    assert text.startswith("$ sh -c ") and "[specdsl] exit 3" in text
    assert "hello" in result.tail


def test_hostile_values_arrive_byte_identical_and_run_nothing(ssh_host, tmp_path):
    canary = tmp_path / "canary"
    canary.mkdir()
    values = hostile(canary)
    script = ssh_host.workdir / "recorder.py"
    ssh_host.write_text(script, RECORDER)
    out = ssh_host.workdir / "out.json"
    # a model name and flags as the server adapter renders them, and a command workload's arguments
    flags = render_args("transformers", [("attn-implementation", v) for v in values[:3]])
    workload = expand_command(["{model}", "--x", "{model}-{port}"], host="127.0.0.1", port=8000, model=values[3])
    words = [*values, *flags, *workload]
    env = {"SPECDSL_HOSTILE": "\n".join(values)}
    cwd = ssh_host.workdir / "dir with space $(x) 'q'"
    ssh_host.mkdir(cwd)
    result = ssh_host.run([ssh_host.default_python, str(script), str(out), *words], log_path=tmp_path / "r.log",
                          timeout=60, env=env, cwd=cwd)
    assert result.ok, result.tail
    got = json.loads(ssh_host.read_text(out))
    assert got["argv"] == words
    assert got["env"] == "\n".join(values)
    assert got["cwd"] == str(cwd)
    # and through a detached process
    handle = ssh_host.start([ssh_host.default_python, str(script), str(out), *words], log_path=ssh_host.workdir / "s.log",
                            env=env, cwd=cwd)
    deadline = time.monotonic() + 30
    while ssh_host.alive(handle) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert ssh_host.returncode(handle) == 0
    assert json.loads(ssh_host.read_text(out))["argv"] == words
    # file contents and names too
    name = ssh_host.workdir / "ünï $(touch x) 'q'.txt"
    text = "\n".join(values) + "\n"
    ssh_host.write_text(name, text)
    assert ssh_host.exists(name) and ssh_host.read_text(name) == text
    assert list(canary.iterdir()) == [], "a value was run as a command"


def test_env_none_removes_a_variable(ssh_host, tmp_path):
    log = tmp_path / "env.log"
    result = ssh_host.run(["sh", "-c", 'echo "HOME=${HOME-unset}"'], log_path=log, timeout=30, env={"HOME": None})
    assert result.ok and "HOME=unset" in ssh_host.read_text(log)


def test_a_missing_program_is_a_host_error(ssh_host, tmp_path):
    with pytest.raises(HostError, match=r"host loop \(specdsl-test\): could not start 'no-such-program-x'"):
        ssh_host.run(["no-such-program-x"], log_path=tmp_path / "x.log", timeout=10)


def test_start_detaches_with_a_pid_file_and_stop_ends_the_group(ssh_host):
    log = ssh_host.workdir / "srv" / "server.log"
    handle = ssh_host.start(["sh", "-c", "sleep 300 & sleep 300 & echo started; wait"], log_path=log)
    assert handle.pid == handle.pgid
    assert ssh_host.read_text(log.with_suffix(".pid")).strip() == str(handle.pid)
    deadline = time.monotonic() + 10
    while len(ssh_host.group_pids(handle.pgid)) < 3 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert ssh_host.alive(handle) and len(ssh_host.group_pids(handle.pgid)) >= 3
    # the session that started it is gone: the process outlives it
    ssh_host.close()
    assert ssh_host.alive(handle)
    ssh_host.stop(handle, grace_s=5)
    assert not ssh_host.alive(handle) and ssh_host.group_pids(handle.pgid) == []
    assert "started" in ssh_host.tail(log)


def test_returncode_of_a_started_process(ssh_host):
    handle = ssh_host.start(["sh", "-c", "exit 7"], log_path=ssh_host.workdir / "rc" / "job.log")
    deadline = time.monotonic() + 10
    while ssh_host.alive(handle) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert ssh_host.returncode(handle) == 7


def test_timeout_stops_the_remote_group(ssh_host, tmp_path):
    marker = ssh_host.workdir / "pid"
    started = time.monotonic()
    result = ssh_host.run(["sh", "-c", f"echo $$ > '{marker}'; sleep 300"], log_path=tmp_path / "t.log", timeout=2)
    assert result.timed_out and not result.ok
    assert time.monotonic() - started < 20
    pid = int(ssh_host.read_text(marker))
    assert ssh_host.group_pids(pid) == []


def test_stop_event_cancels_and_stops_the_remote_group(ssh_host, tmp_path):
    marker = ssh_host.workdir / "pid"
    stop = threading.Event()
    threading.Timer(1.5, stop.set).start()
    with pytest.raises(Cancelled):
        ssh_host.run(["sh", "-c", f"echo $$ > '{marker}'; sleep 300"], log_path=tmp_path / "c.log", timeout=60, stop=stop)
    assert ssh_host.group_pids(int(ssh_host.read_text(marker))) == []


def test_files_folders_and_collect(ssh_host, tmp_path):
    folder = ssh_host.run_folder(tmp_path / "run-1")
    assert str(folder).startswith(str(ssh_host.workdir / "runs" / "run-1-"))
    ssh_host.write_text(folder / "a" / "one.txt", "1\n")
    ssh_host.write_text(folder / "two.txt", "22\n", mode=0o640)
    assert ssh_host.read_text(folder / "two.txt", max_bytes=2) == "2\n"
    with pytest.raises(FileNotFoundError):
        ssh_host.read_text(folder / "missing")
    assert ssh_host.tail(folder / "missing") == ""
    ssh_host.collect(folder, tmp_path / "run-1")
    assert (tmp_path / "run-1" / "a" / "one.txt").read_text() == "1\n"
    assert (tmp_path / "run-1" / "two.txt").stat().st_mode & 0o777 == 0o640
    assert ssh_host.fetch(folder / "two.txt", tmp_path / "got" / "two.txt").read_text() == "22\n"
    with ssh_host.temp_dir() as tmp:
        assert ssh_host.exists(tmp)
    assert not ssh_host.exists(tmp)
    ssh_host.remove_tree(folder)
    assert not ssh_host.exists(folder)
    assert ssh_host.getenv("HOME") and ssh_host.getenv("SPECDSL_NO_SUCH_VARIABLE") is None
    assert ssh_host.which("sh").endswith("/sh") and ssh_host.which("no-such-program-x") is None
    # the workdir is private
    mode = subprocess.run(["stat", "-c", "%a", str(ssh_host.workdir)], capture_output=True, text=True).stdout.strip()
    assert mode == "700"


def test_lock_excludes_a_second_holder(ssh_host, sshd):
    from specdsl.hosts.ssh import SshHost

    other = SshHost("specdsl-test", name="loop2", workdir=str(ssh_host.workdir), config=str(sshd.config))
    path = ssh_host.workdir / "x.lock"
    order = []
    try:
        with ssh_host.lock(path):
            waiter = threading.Thread(target=lambda: (other.lock(path).__enter__(), order.append("second")))
            waiter.start()
            time.sleep(1.0)
            order.append("first released")
        waiter.join(timeout=20)
        assert order == ["first released", "second"]
    finally:
        other.close()


def test_free_port_is_outside_the_hosts_ephemeral_range(ssh_host):
    """Chosen by the host's Python from the host's own range (read here
    through the host), in one round trip."""
    first, last = map(int, ssh_host.read_text(Path("/proc/sys/net/ipv4/ip_local_port_range")).split())
    chosen = {ssh_host.free_port() for _ in range(5)}
    assert all(not first <= port <= last and ssh_host.port_free(port) for port in chosen), (chosen, first, last)


def test_forwarded_port_reaches_a_server_on_the_host(ssh_host):
    port = ssh_host.free_port()
    assert ssh_host.port_free(port)
    handle = ssh_host.start([ssh_host.default_python, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
                            log_path=ssh_host.workdir / "http" / "server.log", cwd=ssh_host.workdir)
    try:
        here, here_port = ssh_host.reach(port)
        assert here == "127.0.0.1" and here_port != port
        deadline = time.monotonic() + 20
        while True:
            try:
                with socket.create_connection((here, here_port), timeout=2) as sock:
                    sock.sendall(b"GET / HTTP/1.0\r\n\r\n")
                    if sock.recv(12).startswith(b"HTTP/1.0 200"):
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, ssh_host.tail(Path(handle.log_path))
            time.sleep(0.2)
        assert not ssh_host.port_free(port)
        assert ssh_host.reach(port) == (here, here_port)
    finally:
        ssh_host.stop(handle, grace_s=5)


def test_close_ends_the_master_and_its_socket_folder(ssh_host):
    assert ssh_host.exists(ssh_host.workdir)
    pid = ssh_host.conn.master_pid()
    folder = os.path.dirname(ssh_host.conn.socket)
    assert pid and os.stat(folder).st_mode & 0o777 == 0o700
    ssh_host.close()
    assert not os.path.exists(folder)
    assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z"
