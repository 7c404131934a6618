"""state.toml on disk: round trip, serial/lineage, backup, atomicity and the
ways a state folder can be wrong (each a clear error, nothing overwritten)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import attrs
import pytest

from specdsl.state import (
    FORMAT_VERSION, StateConflict, StateError, backup_path, load_state, locked, run_folder, state_dir_for, state_path,
    write_state,
)


def test_state_dir_beside_spec_unless_overridden(tmp_path):
    spec = tmp_path / "exp" / "kimi.spec"
    assert state_dir_for(spec, None) == tmp_path / "exp" / ".specdsl"
    assert state_dir_for(spec, tmp_path / "elsewhere") == tmp_path / "elsewhere"


def test_no_state_yet_is_none(state_dir):
    assert load_state(state_dir) is None


def test_round_trip_bumps_serial_and_keeps_lineage(state_dir, sample_state):
    first = write_state(state_dir, sample_state)
    assert first.serial == 1
    assert load_state(state_dir) == first
    second = write_state(state_dir, first.without_server("launch-3c4d"))
    assert second.serial == 2 and second.lineage == sample_state.lineage
    loaded = load_state(state_dir)
    assert loaded == second and loaded.servers == ()
    assert f"format_version = {FORMAT_VERSION}" in state_path(state_dir).read_text()


def test_backup_is_the_previous_file(state_dir, sample_state):
    first = write_state(state_dir, sample_state)
    assert not backup_path(state_dir).exists()
    before = state_path(state_dir).read_bytes()
    write_state(state_dir, first)
    assert backup_path(state_dir).read_bytes() == before
    assert sorted(p.name for p in state_dir.iterdir()) == ["state.toml", "state.toml.backup"]


def test_stale_serial_is_refused_and_nothing_written(state_dir, sample_state):
    first = write_state(state_dir, sample_state)
    write_state(state_dir, first)  # another writer got there first
    on_disk = state_path(state_dir).read_bytes()
    with pytest.raises(StateConflict, match=r"changed since it was read \(serial 1 -> 2\)"):
        write_state(state_dir, first.without_environment("prov-1a2b"))
    assert state_path(state_dir).read_bytes() == on_disk


def test_other_lineage_is_refused(state_dir, sample_state):
    write_state(state_dir, sample_state)
    other = attrs.evolve(sample_state, lineage="another-lineage")
    with pytest.raises(StateConflict, match="another lineage") as err:
        write_state(state_dir, other)
    assert err.value.conflict and err.value.path == state_path(state_dir)


def test_fresh_state_over_existing_file_is_refused(state_dir, sample_state):
    write_state(state_dir, sample_state)
    from specdsl.state import State
    with pytest.raises(StateConflict):
        write_state(state_dir, State.new())


def test_interrupted_write_leaves_old_file_intact(state_dir, sample_state):
    """A real child process whose file-size limit makes the temp-file write
    fail (EFBIG) after the backup is written and before the rename."""
    first = write_state(state_dir, sample_state)
    before = state_path(state_dir).read_bytes()
    code = textwrap.dedent(f"""
        import resource, signal, sys
        from pathlib import Path
        import attrs
        from specdsl.state import RunRecord, StateError, load_state, write_state
        d = Path({str(state_dir)!r})
        state = load_state(d)
        for i in range(400):  # make the new file far larger than the old one
            state = state.with_run(RunRecord(id=f"r{{i}}", step="benchmark.x", identity=f"b{{i}}",
                                   experiment="x", status="completed", started="t",
                                   metrics={{"output_throughput": float(i)}}))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, ({len(before) + 100}, {len(before) + 100}))
        try:
            write_state(d, state)
        except StateError as err:
            print(err)
            sys.exit(3)
        sys.exit(0)
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3, proc.stderr
    assert "Cannot write the state file" in proc.stdout and str(state_path(state_dir)) in proc.stdout
    assert state_path(state_dir).read_bytes() == before
    assert load_state(state_dir) == first
    leftovers = [p.name for p in state_dir.iterdir() if p.name.startswith(".")]
    assert leftovers == []


def test_newer_format_is_refused(state_dir, sample_state):
    write_state(state_dir, sample_state)
    path = state_path(state_dir)
    path.write_text(path.read_text().replace(f"format_version = {FORMAT_VERSION}", "format_version = 7"))
    before = path.read_bytes()
    with pytest.raises(StateError) as err:
        load_state(state_dir)
    msg = str(err.value)
    assert str(path) in msg and "newer specdsl (format 7" in msg and "upgrade specdsl" in msg
    with pytest.raises(StateError, match="newer specdsl"):
        write_state(state_dir, sample_state)
    assert path.read_bytes() == before


def test_truncated_file_is_a_clear_error(state_dir, sample_state):
    first = write_state(state_dir, sample_state)
    write_state(state_dir, first)
    path = state_path(state_dir)
    text = path.read_text()
    path.write_text(text[: len(text) // 2 - 3])
    with pytest.raises(StateError) as err:
        load_state(state_dir)
    msg = str(err.value)
    assert msg.startswith(f"{path}: error:")
    assert ("truncated" in msg or "Invalid state file" in msg) and "state.toml.backup" in msg


@pytest.mark.parametrize("old, new, where, expected", [
    ('port = 30000', 'port = "30000"', "servers[0].port", "expected an integer, found a string '30000'"),
    ('output_throughput = 92.6', 'output_throughput = "fast"', "runs[0].metrics.output_throughput",
     "expected a number"),
    ('status = "failed"', 'status = "crashed"', "runs[1].status", "expected one of 'completed'"),
    ('serial = 1', 'serial = -4', "serial", "expected a count"),
    ('experiment = "upgrade"\nstatus', 'experimnt = "upgrade"\nstatus', "runs[0].experimnt",
     "unknown key; did you mean `experiment`?"),
])
def test_hand_edited_wrong_type_names_the_key(state_dir, sample_state, old, new, where, expected):
    write_state(state_dir, sample_state)
    path = state_path(state_dir)
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(StateError) as err:
        load_state(state_dir)
    msg = str(err.value)
    assert str(path) in msg and f"{where}: {expected}" in msg, msg


def test_hand_edited_dangling_baseline(state_dir, sample_state):
    write_state(state_dir, sample_state)
    path = state_path(state_dir)
    path.write_text(path.read_text().replace('run = "20260301T101000Z-aaaa0001"\nexperiment = "upgrade"\n'
                                             'promoted', 'run = "gone"\nexperiment = "upgrade"\npromoted'))
    with pytest.raises(StateError, match=r"baselines\[0\].run: run 'gone' is not a completed run"):
        load_state(state_dir)


def test_all_problems_reported_at_once(state_dir, sample_state):
    write_state(state_dir, sample_state)
    path = state_path(state_dir)
    path.write_text(path.read_text().replace("pid = 4242", "pid = true").replace("port = 30000", "port = 1.5"))
    with pytest.raises(StateError) as err:
        load_state(state_dir)
    assert "servers[0].pid" in str(err.value) and "servers[0].port" in str(err.value)


def test_missing_state_with_backup_is_not_started_afresh(state_dir, sample_state):
    write_state(state_dir, write_state(state_dir, sample_state))
    state_path(state_dir).unlink()
    with pytest.raises(StateError, match="missing but its backup exists"):
        load_state(state_dir)


def test_state_folder_under_a_file_is_a_clear_error(tmp_path, sample_state):
    blocker = tmp_path / "proj"
    blocker.write_text("not a folder")
    state_dir = blocker / ".specdsl"
    with pytest.raises(StateError) as err:
        write_state(state_dir, sample_state)
    assert str(state_dir) in str(err.value) and "--state DIR" in str(err.value)
    with pytest.raises(StateError, match="not a folder"):
        load_state(state_dir)
    assert blocker.read_text() == "not a folder"


def _in_unprivileged_child(fn) -> str:
    """Run `fn()` in a forked child that has dropped root (uid/gid 65534),
    and return what it returned (a str) or its exception as text."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: no pytest machinery from here on, just report and exit
        os.close(read_fd)
        try:
            os.setgid(65534)
            os.setuid(65534)
            out = fn()
        except BaseException as err:  # noqa: BLE001 - everything goes back to the parent
            out = f"{type(err).__name__}: {err}"
        os.write(write_fd, out.encode())
        os._exit(0)
    os.close(write_fd)
    chunks = []
    while chunk := os.read(read_fd, 65536):
        chunks.append(chunk)
    os.close(read_fd)
    os.waitpid(pid, 0)
    return b"".join(chunks).decode()


def test_read_only_state_folder(sample_state):
    """Root ignores folder permissions, so the writer is a real child process
    that drops root first; a non-root run checks the same in-process."""
    base = Path(tempfile.mkdtemp(prefix="specdsl-ro-"))
    state_dir = base / ".specdsl"
    try:
        write_state(state_dir, sample_state)
        before = state_path(state_dir).read_bytes()
        base.chmod(0o755)
        # the state is its owner's only (0600): the unprivileged child reads
        # it because this test lets it, the folder stays unwritable
        state_path(state_dir).chmod(0o644)
        state_dir.chmod(0o555)

        def attempt() -> str:
            state = load_state(state_dir)
            out = []
            for action in (lambda: write_state(state_dir, state), lambda: locked(state_dir, "apply").__enter__()):
                try:
                    action()
                    out.append("WROTE")
                except StateError as err:
                    out.append(str(err))
            return "\n".join(out)

        if os.geteuid() == 0:
            if not hasattr(os, "fork"):
                pytest.skip("running as root without fork: cannot make a folder unwritable")
            report = _in_unprivileged_child(attempt)
        else:
            report = attempt()
        assert "WROTE" not in report, report
        assert report.count("State folder is not writable") == 2, report
        assert f"{state_dir}: error:" in report and "--state DIR" in report
        assert state_path(state_dir).read_bytes() == before
        assert sorted(p.name for p in state_dir.iterdir()) == ["state.toml"]
    finally:
        state_dir.chmod(0o755)
        shutil.rmtree(base)


def test_run_folder(tmp_path):
    assert run_folder(tmp_path, "20260301T101000Z-aaaa0001") == tmp_path / "runs" / "20260301T101000Z-aaaa0001"
    with pytest.raises(ValueError):
        run_folder(tmp_path, "../etc")


def test_unsound_state_is_never_written(state_dir, sample_state):
    broken = attrs.evolve(sample_state, results={"bench-x": "no-such-run"})
    with pytest.raises(ValueError, match="unsound"):
        write_state(state_dir, broken)
    assert not state_path(state_dir).exists()


def test_hint_without_a_backup(state_dir, sample_state):
    write_state(state_dir, sample_state)
    state_path(state_dir).write_text("format_version = 1\nlineage = ")
    with pytest.raises(StateError, match="there is no backup"):
        load_state(state_dir)
