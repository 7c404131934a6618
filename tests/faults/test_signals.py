"""Signals to a real `specdsl apply` while its benchmark runs: Ctrl-C,
SIGTERM and a hang-up stop it cleanly (exit 130, servers stopped, the
interrupted run recorded); a second signal kills the servers at once and
never hangs (it used to deadlock in the console's progress lock)."""

import os
import signal
import time

import pytest

from faults_helpers import wait_for, state_now


def start_benchmark(folder, *server_flags):
    folder.write(*server_flags, sleep=60)
    proc = folder.start("apply", "f.spec", "--yes")
    wait_for(lambda: proc.poll() is not None or ((s := state_now(folder)) is not None and s.servers
                                                 and s.servers[0].status == "ready"), 60, "a ready server")
    assert proc.poll() is None, proc.communicate()[0]
    time.sleep(0.5)  # the benchmark is under way
    return proc


def assert_interrupted_cleanly(folder, proc, out):
    assert proc.returncode == 130, out
    assert "benchmark.e" in out and "interrupted" in out
    assert "run apply again to resume" in out
    state = folder.state()
    assert not state.servers and folder.groups_alive() == []
    assert [r.status for r in state.runs if r.step == "benchmark.e"] == ["interrupted"]
    assert [r.status for r in state.runs if r.step == "launch.s"] == ["completed"]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGHUP], ids=lambda s: s.name)
def test_one_signal_stops_cleanly(folder, sig):
    proc = start_benchmark(folder)
    os.killpg(proc.pid, sig)  # as a terminal does: to apply's process group
    out, _ = proc.communicate(timeout=60)
    assert f"{sig.name} received" in out
    assert_interrupted_cleanly(folder, proc, out)


def test_second_signal_kills_at_once_and_never_hangs(folder):
    # SIGTERM first (the SIGINT/SIGHUP path above, by another name), then
    # Ctrl-C. A server that ignores SIGTERM: a graceful stop waits its 10 s grace.
    proc = start_benchmark(folder, "--ignore-term")
    os.kill(proc.pid, signal.SIGTERM)
    time.sleep(1.0)
    sent = time.monotonic()
    os.kill(proc.pid, signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    assert time.monotonic() - sent < 8, f"took {time.monotonic() - sent:.1f}s after the second signal:\n{out}"
    assert "SIGTERM received" in out and "stopping at once" in out
    assert_interrupted_cleanly(folder, proc, out)
