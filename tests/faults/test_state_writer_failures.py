"""The state writer when the state file cannot be written: nothing is lost
in memory, the first failure stops the walk, a step's result that could not
be written is failed (not claimed), and the report says what is on disk."""

import pytest

from specdsl.apply import state_writer as sw
from specdsl.apply.context import StepFailed
from specdsl.graph.steps import Step
from specdsl.state import ServerRecord, State, StateConflict, StateError, decode_state, encode_state, load_state, write_state


class Disk:
    """write_state that fails while `full` (as a full disk does), else writes."""

    def __init__(self, monkeypatch):
        self.full = False
        real = sw.write_state

        def fake(state_dir, state, *, lock=None):
            if self.full:
                raise StateError(state_dir / "state.toml", "Cannot write the state file (No space left on device)")
            return real(state_dir, state, lock=lock)

        monkeypatch.setattr(sw, "write_state", fake)


def step(addr="benchmark.e"):
    return Step(addr=addr, kind="benchmark", identity="id-" + addr, content={"a": 1}, experiments=("e",))


def test_a_failed_write_keeps_the_change_stops_once_and_fails_the_step(tmp_path, monkeypatch):
    disk = Disk(monkeypatch)
    stops = []
    writer = sw.StateWriter(tmp_path, write_state(tmp_path, State.new()), None, on_failure=lambda: stops.append(1))
    run_id, folder = writer.new_run()
    run = writer.run_record(step(), run_id, folder, "t0", "completed", metrics={"tps": 1.0})
    disk.full = True
    with pytest.raises(StepFailed, match="could not be recorded"):
        writer.step_done(step(), run)
    assert writer.state.run(run_id).status == "failed"  # not claimed completed
    assert writer.state.result("id-benchmark.e") is None
    writer.change(lambda s: s.with_server(ServerRecord("x", "launch.s", "local", 1, 1, 1, "u")), "launch.s (starting)")
    assert stops == [1], "the walk is stopped once"
    assert load_state(tmp_path).serial == 1 and writer.state.serial == 1
    report = writer.report()
    assert "serial 1" in report and "NOT recorded: benchmark.e (completed); launch.s (starting)" in report
    assert "free space" in report
    disk.full = False
    assert writer.flush()
    on_disk = load_state(tmp_path)
    assert on_disk.serial == 2 and on_disk.run(run_id).status == "failed" and on_disk.server("x") is not None
    assert "recorded: everything, in the end" in writer.report()


def test_a_conflict_still_raises(tmp_path):
    writer = sw.StateWriter(tmp_path, write_state(tmp_path, State.new()), None)
    write_state(tmp_path, load_state(tmp_path))  # another writer got there first
    with pytest.raises(StateConflict):
        writer.change(lambda s: s)
    assert writer.failure is None


def test_server_records_keep_status_argv_and_spec_and_old_ones_read_as_ready(tmp_path):
    record = ServerRecord("i", "launch.s", "local", 10, 10, 4000, "http://127.0.0.1:4000", status="starting",
                          argv=("python", "serve.py", "--api-key", "(sensitive)"), spec="f.spec")
    state = State.new().with_server(record)
    again = decode_state(encode_state(state), tmp_path / "state.toml")
    assert again.server("i") == record
    old = encode_state(State.new().with_server(ServerRecord("i", "launch.s", "local", 10, 10, 4000, "u")))
    old = "\n".join(line for line in old.splitlines() if not line.startswith(("status", "argv", "spec")))
    read = decode_state(old, tmp_path / "state.toml").server("i")
    assert read.status == "ready" and read.argv == () and read.spec == ""
    bad = encode_state(state).replace('status = "starting"', 'status = "sleeping"')
    with pytest.raises(StateError, match="servers\\[0\\].status"):
        decode_state(bad, tmp_path / "state.toml")
