"""Faults of an ssh host: each a clear HostError naming the host and the
step, within a bounded time."""

from __future__ import annotations

import socket
import subprocess
import threading
import time

import pytest

from specdsl.hosts import HostError
from specdsl.hosts.ssh import SshHost


def _host(sshd, alias, tmp_path, **kw):
    return SshHost(alias, name="gpu8", workdir=str(tmp_path / "wd"), config=str(sshd.config), **kw)


@pytest.mark.parametrize(("alias", "cause"), [
    ("specdsl-nohost", "unknown host"),
    ("specdsl-badkey", "refused the key"),
    ("specdsl-badhostkey", "host key verification failed"),
])
def test_connection_faults_are_named(sshd, tmp_path, alias, cause):
    host = _host(sshd, alias, tmp_path)
    started = time.monotonic()
    try:
        with pytest.raises(HostError) as info:
            host.exists(tmp_path)
    finally:
        host.close()
    message = str(info.value)
    assert message.startswith(f"host gpu8 ({alias}): looking for {tmp_path}: ") and cause in message, message
    assert time.monotonic() - started < 30


def test_a_host_that_never_answers_times_out(sshd, tmp_path):
    # accepts the TCP connection, never says a word of SSH
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    held = []
    threading.Thread(target=lambda: held.append(listener.accept()), daemon=True).start()
    host = SshHost("specdsl-test", name="gpu8", workdir=str(tmp_path), config=str(sshd.config),
                   port=listener.getsockname()[1], connect_timeout=2)
    started = time.monotonic()
    try:
        with pytest.raises(HostError, match=r"host gpu8 \(specdsl-test\): making .*/x: (connection timed out|no connection within)"):
            host.mkdir(tmp_path / "x")
    finally:
        host.close()
        listener.close()
    assert time.monotonic() - started < 20


def test_a_lost_connection_fails_the_command_and_stops_it_on_the_host(ssh_host, tmp_path):
    marker = ssh_host.workdir / "pid"
    killer = threading.Timer(2.0, lambda: ssh_host.conn._master.kill())
    killer.start()
    with pytest.raises(HostError, match=r"host loop \(specdsl-test\): running sh: the ssh connection failed or was lost"):
        ssh_host.run(["sh", "-c", f"echo $$ > '{marker}'; sleep 300"], log_path=tmp_path / "l.log", timeout=120)
    killer.join()
    # the next operation connects again; the command did not outlive the failure
    assert ssh_host.group_pids(int(ssh_host.read_text(marker))) == []


@pytest.fixture
def full_disk(tmp_path):
    folder = tmp_path / "small"
    folder.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(folder)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def test_a_full_remote_disk_is_named(ssh_host, full_disk):
    with pytest.raises(HostError, match=r"host loop \(specdsl-test\): writing .*big.txt: .*No space left on device"):
        ssh_host.write_text(full_disk / "big.txt", "x" * 2_000_000)
    assert not ssh_host.exists(full_disk / "big.txt")
    result = ssh_host.run(["sh", "-c", f"head -c 2000000 /dev/zero > '{full_disk}/fill'"], log_path=full_disk / "run.log",
                          timeout=30)
    assert not result.ok
    assert f"the file system of {full_disk} is full" in result.tail


def test_the_bundled_uv_is_copied_into_the_workdir(ssh_host, tmp_path):
    uv = ssh_host._bundled_uv()
    assert uv == str(ssh_host.workdir / "bin" / "uv")
    result = ssh_host.run([uv, "--version"], log_path=tmp_path / "uv.log", timeout=60)
    assert result.ok and "uv " in ssh_host.read_text(tmp_path / "uv.log")


def test_an_operation_that_hangs_on_the_host_is_bounded(ssh_host):
    started = time.monotonic()
    with pytest.raises(HostError, match=r"host loop \(specdsl-test\): reading a fifo: no answer within 2s"):
        ssh_host.conn.quick(f"echo $$ > {ssh_host.workdir}/hung; sleep 60", step="reading a fifo", timeout=2)
    assert time.monotonic() - started < 15
    # the worker that hung is gone; the next operation gets a new one
    assert ssh_host.exists(ssh_host.workdir)
    # and what hung was stopped there: killed (gone, or a zombie that sshd,
    # its parent, has not reaped yet: CI saw /proc/PID a moment after the kill)
    pid = int(ssh_host.read_text(ssh_host.workdir / "hung"))
    deadline = time.monotonic() + 5
    while not _dead(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _dead(pid), open(f"/proc/{pid}/status").read()


def _dead(pid: int) -> bool:
    try:
        status = open(f"/proc/{pid}/status").read()
    except OSError:
        return True
    return "\nState:\tZ" in status
