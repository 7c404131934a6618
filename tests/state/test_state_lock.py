"""The state lock, with real processes: a live holder, a dead one, two
writers racing, and force-unlock."""

from __future__ import annotations

import multiprocessing
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from specdsl.state import (
    LockError, StaleLockWarning, StateConflict, StateError, force_unlock, load_state, locked,
    read_lock, write_state,
)
from specdsl.state.commands import cmd_force_unlock
from specdsl.state.lock import lock_path, this_host

HOLD = textwrap.dedent("""
    import os, sys
    from pathlib import Path
    from specdsl.state import locked
    with locked(Path(sys.argv[1]), "apply") as info:
        print(info.id, flush=True)
        if sys.argv[2] == "die":
            os._exit(0)  # dies holding the lock: nothing cleans up
        sys.stdin.read()  # hold until the parent closes stdin
""")


def _holder(state_dir: Path, mode: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(state_dir), mode],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    lock_id = proc.stdout.readline().strip()
    assert lock_id, "holder did not take the lock"
    return proc, lock_id


def test_lock_is_released_after_the_block(state_dir, sample_state):
    with locked(state_dir, "apply") as info:
        assert read_lock(state_dir) == info
        write_state(state_dir, sample_state, lock=info)
    assert read_lock(state_dir) is None
    assert not lock_path(state_dir).exists()


def test_lock_held_by_live_process(state_dir):
    proc, lock_id = _holder(state_dir, "hold")
    try:
        with pytest.raises(LockError) as err:
            with locked(state_dir, "plan"):
                pytest.fail("took a lock that a live process holds")
        holder = err.value.holder
        assert (holder.id, holder.pid, holder.host, holder.operation) == (lock_id, proc.pid, this_host(), "apply")
        msg = str(err.value)
        assert str(lock_path(state_dir)) in msg and f"pid {proc.pid}" in msg
        assert f"specdsl force-unlock {lock_id}" in msg
        assert err.value.conflict
    finally:
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0
    assert read_lock(state_dir) is None  # the holder released it on exit


def test_lock_of_dead_process_is_broken_with_a_message(state_dir):
    proc, lock_id = _holder(state_dir, "die")
    assert proc.wait(timeout=30) == 0
    stale = read_lock(state_dir)
    assert stale is not None and stale.id == lock_id and stale.pid == proc.pid
    messages: list[str] = []
    with locked(state_dir, "apply", notify=messages.append) as info:
        assert info.id != lock_id and read_lock(state_dir) == info
    assert len(messages) == 1
    assert "broke a stale lock" in messages[0] and lock_id in messages[0] and f"pid {proc.pid}" in messages[0]


def test_stale_lock_message_defaults_to_a_warning(state_dir):
    proc, lock_id = _holder(state_dir, "die")
    proc.wait(timeout=30)
    with pytest.warns(StaleLockWarning, match=lock_id):
        with locked(state_dir, "apply"):
            pass


def test_force_unlock(state_dir):
    proc, lock_id = _holder(state_dir, "hold")
    try:
        with pytest.raises(StateError, match=f"force-unlock {lock_id}"):
            force_unlock(state_dir, "wrong-id")
        assert read_lock(state_dir).id == lock_id
        code, text = cmd_force_unlock(state_dir, lock_id)
        assert code == 0 and lock_id in text and f"pid {proc.pid}" in text
        assert read_lock(state_dir) is None
        with locked(state_dir, "apply") as mine:  # now free for us
            pass
        assert mine.pid != proc.pid
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    code, text = cmd_force_unlock(state_dir, lock_id)
    assert code == 1 and "not locked" in text


def test_holder_that_was_force_unlocked_cannot_write(state_dir, sample_state):
    with locked(state_dir, "apply") as info:
        force_unlock(state_dir, info.id)
        with pytest.raises(StateConflict, match="no longer holds the state lock"):
            write_state(state_dir, sample_state, lock=info)
        with locked(state_dir, "plan") as other:
            pass
    assert load_state(state_dir) is None
    assert other.id != info.id


def test_unreadable_lock_file_says_what_to_do(state_dir):
    state_dir.mkdir(parents=True)
    lock_path(state_dir).write_text("id = ")
    with pytest.raises(StateError, match=f"rm {lock_path(state_dir)}"):
        with locked(state_dir, "apply"):
            pass


def _racer(state_dir: str, barrier, results) -> None:
    """Try to take the lock and write; wait until every racer has tried before
    letting go, so the lock is contended for real."""
    path = Path(state_dir)
    try:
        with locked(path, "apply") as info:
            state = load_state(path)
            from specdsl.state import State
            write_state(path, state or State.new(), lock=info)
            results.put("won")
            barrier.wait(timeout=60)
    except LockError:
        results.put("locked")
        barrier.wait(timeout=60)


@pytest.mark.parametrize("attempt", range(3))
def test_two_processes_race_exactly_one_wins(state_dir, attempt):
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_racer, args=(str(state_dir), barrier, results)) for _ in range(2)]
    for p in procs:
        p.start()
    outcomes = sorted(results.get(timeout=60) for _ in procs)
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert outcomes == ["locked", "won"]
    assert load_state(state_dir).serial == 1
    assert read_lock(state_dir) is None


def test_write_without_the_lock_while_another_process_holds_it(state_dir, sample_state):
    proc, lock_id = _holder(state_dir, "hold")
    try:
        with pytest.raises(LockError, match=lock_id):
            write_state(state_dir, sample_state)
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    assert load_state(state_dir) is None
    assert write_state(state_dir, sample_state).serial == 1  # free again
