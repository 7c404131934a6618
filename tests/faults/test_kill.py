"""kill -9 of a real `specdsl apply` at every step boundary, and while its
server starts: the server is recorded before anything waits on it, the
re-apply finds it (alive, frozen or dead) and stops it or drops its record,
and nothing recorded is lost."""

import os
import signal

import pytest

from faults_helpers import run_ids, state_now, wait_for
from specdsl.state.lock import lock_path


def kill_at_serial(folder, serial, *apply_args):
    """Start apply, SIGKILL it as soon as the state file reaches `serial`
    (or the apply ends first); return the state then."""
    proc = folder.start("apply", "f.spec", "--yes", *apply_args)
    try:
        wait_for(lambda: proc.poll() is not None or ((s := state_now(folder)) is not None and s.serial >= serial),
                 60, f"serial {serial}")
    finally:
        proc.kill()
        proc.communicate(timeout=30)
    return folder.state()


def assert_every_live_server_recorded(folder, state):
    """The rule kill -9 must not break: each live server group is in state."""
    recorded = {s.pgid for s in state.servers} if state is not None else set()
    alive = set(folder.groups_alive())
    assert alive <= recorded, f"servers running untracked: {alive - recorded} (recorded: {recorded})"


def test_kill_at_every_step_boundary(folder):
    folder.write(sleep=0.3)
    first = folder.run("apply", "f.spec", "--yes")
    assert first.returncode == 0, first.out
    base = folder.state()
    writes = base.serial  # one full apply's writes: every boundary between its steps
    assert writes >= 5, writes
    before = run_ids(base)
    for k in range(1, writes):
        # each killed apply starts from what the last one left: it stops that first
        state = kill_at_serial(folder, folder.state().serial + k, "--rerun")
        assert before <= run_ids(state), "a run recorded before was lost"
        assert_every_live_server_recorded(folder, state)
        before = run_ids(state)
    # the last kill may land after its apply released the lock (its final
    # write done, the process not yet gone): only a lock left behind is broken
    left = lock_path(folder.state_dir).exists()
    again = folder.run("apply", "f.spec", "--yes", "--rerun")
    assert again.returncode == 0, again.out
    assert ("broke a stale lock" in again.out) == left, again.out  # the killed apply's lock: its holder is dead
    state = folder.state()
    assert not state.servers and folder.groups_alive() == [], again.out
    assert before <= run_ids(state)


def test_kill_while_the_server_starts_leaves_a_record_the_reapply_uses(folder):
    gate = folder.path / "gate"
    folder.write("--gate", str(gate))
    proc = folder.start("apply", "f.spec", "--yes")
    # recorded, then let through its gate: the double itself runs (and waits on `gate`)
    wait_for(lambda: (s := state_now(folder)) is not None and s.servers and folder.groups(), 60, "a starting server")
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    [record] = folder.state().servers
    assert record.status == "starting" and record.addr == "launch.s"
    assert record.pgid in folder.groups_alive() and record.port > 0
    assert record.spec.endswith("f.spec") and "--gate" in record.argv
    gate.touch()  # it becomes ready after all: the re-apply reuses it, then stops it
    again = folder.run("apply", "f.spec", "--yes")
    assert again.returncode == 0, again.out
    assert "= launch.s" in again.out or "running at" in again.out, again.out
    assert not folder.state().servers and folder.groups_alive() == []
    assert len(folder.groups()) == 1, "the re-apply started no second server beside it"


@pytest.mark.parametrize("fate", ["frozen", "dead"])
def test_kill_then_the_server_freezes_or_dies(folder, fate):
    folder.write(sleep=30)
    proc = folder.start("apply", "f.spec", "--yes")
    wait_for(lambda: (s := state_now(folder)) is not None and s.servers and s.servers[0].status == "ready", 60,
             "a ready server")
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    [old] = folder.state().servers
    os.killpg(old.pgid, signal.SIGSTOP if fate == "frozen" else signal.SIGKILL)
    folder.write()  # no sleep in the benchmark now
    again = folder.run("apply", "f.spec", "--yes")
    assert again.returncode == 0, again.out
    assert f"pid {old.pid}" in again.out
    assert ("alive, not answering" if fate == "frozen" else "not running") in again.out
    assert old.pgid not in folder.groups_alive()
    state = folder.state()
    assert not state.servers and folder.groups_alive() == []
    assert [r.status for r in state.runs if r.step == "benchmark.e"][-1] == "completed"
