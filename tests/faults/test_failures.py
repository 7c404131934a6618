"""Faults of servers and of the state folder under a real `specdsl apply`:
each ends with a message naming the step and what to do, no process left,
a state that parses with a serial that only grew, nothing recorded lost."""

import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from faults_helpers import DOUBLE, PROBE, run_ids, state_now, wait_for


def three_faults(pids) -> str:
    """One spec, three servers that fail after readiness: a crash, 500s, a hung response."""
    def server(name, *flags):
        argv = ", ".join(f'"{a}"' for a in [sys.executable, DOUBLE, "{port}", "--pids", str(pids), *flags])
        return f'server "{name}" {{\n  engine = "command"\n  model = "m"\n  command = [{argv}]\n}}\n'

    probe = ", ".join(f'"{a}"' for a in [sys.executable, PROBE, "{base_url}"])
    text = 'stack "sys" {\n  python = "system"\n}\n'
    text += server("crash", "--crash-after", "0") + server("fail", "--fail-after", "0") + server("hang", "--hang-after", "0")
    text += f'workload "w" {{\n  command = [{probe}]\n  timeout = 3s\n  metric "tps" {{ regex = "tps: ([0-9.]+)" }}\n}}\n'
    for name in ("crash", "fail", "hang"):
        text += f'experiment "{name}" {{\n  stack = stack.sys\n  server = server.{name}\n  workload = workload.w\n}}\n'
    return text


def test_server_crash_500s_and_a_hung_response_after_readiness(folder):
    folder.spec.write_text(three_faults(folder.pids))
    proc = folder.run("apply", "f.spec", "--yes")
    assert proc.returncode == 5, proc.out
    for name in ("crash", "fail", "hang"):
        assert f"failed: benchmark.{name}" in proc.out
    assert "500" in proc.out and "timed out" in proc.out.lower() or "timeout" in proc.out.lower(), proc.out
    state = folder.state()
    assert {r.step: r.status for r in state.runs if r.step.startswith("benchmark.")} == {
        "benchmark.crash": "failed", "benchmark.fail": "failed", "benchmark.hang": "failed"}
    assert all(r.reason for r in state.runs if r.status == "failed")
    assert not state.servers and folder.groups_alive() == [] and len(folder.groups()) == 3


def test_two_applies_at_once(folder):
    gate = folder.path / "gate"
    folder.write("--gate", str(gate))
    first = folder.start("apply", "f.spec", "--yes")
    wait_for(lambda: (s := state_now(folder)) is not None and s.servers, 60, "the first apply's server")
    second = folder.run("apply", "f.spec", "--yes")
    assert second.returncode == 6, second.out
    assert "State is locked by 'apply'" in second.out and "force-unlock" in second.out
    gate.touch()
    out, _ = first.communicate(timeout=60)
    assert first.returncode == 0, out
    assert not folder.state().servers and folder.groups_alive() == []


@pytest.fixture
def small_disk(tmp_path):
    """A 200 KiB tmpfs for the state folder (root only: skipped where mount is not permitted)."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=200k", "tmpfs", str(mnt)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip() or done.returncode}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_disk_full_while_the_server_runs_then_read_only(folder, small_disk):
    folder.state_dir = small_disk / "state"
    folder.write()
    ok = folder.run("apply", "f.spec", "--yes", "--json")
    assert ok.returncode == 0, ok.out
    assert json.loads(ok.stdout)["state_failure"] is None
    before = folder.state()
    # the benchmark script fills the disk while the server runs
    folder.write(fill=str(small_disk / "ballast"))
    full = folder.run("apply", "f.spec", "--yes", "--rerun", "--json")
    assert full.returncode == 5, full.out
    doc = json.loads(full.stdout)  # --json carries the failure too, for CI
    assert doc["exit_code"] == 5 and doc["state_failure"]["servers_left"] == []
    failure = doc["state_failure"]["message"]
    assert "No space left on device" in failure and "NOT recorded" in failure and "benchmark.e" in failure
    assert failure in full.stderr
    assert "No space left on device" in full.out
    assert "NOT recorded" in full.out and "benchmark.e" in full.out and "re-apply" in full.out
    assert "servers: none left running" in full.out and "Apply interrupted" not in full.out
    assert "Traceback" not in full.out
    state = folder.state()  # parses, serial did not go back
    assert run_ids(before) <= run_ids(state)
    assert folder.groups_alive() == [], "the server was stopped"
    # room again: the re-apply records what was not, and stops nothing twice
    os.unlink(small_disk / "ballast")
    folder.write()
    again = folder.run("apply", "f.spec", "--yes")
    assert again.returncode == 0, again.out
    state = folder.state()
    assert not state.servers and run_ids(before) <= run_ids(state)
    assert [r.status for r in state.runs if r.step == "benchmark.e"][-1] == "completed"
    # read-only state: nothing runs (the lock cannot even be taken), the
    # state is left as it was, and plan still reads it
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    ro = folder.run("apply", "f.spec", "--yes", "--rerun")
    assert ro.returncode == 1, ro.out
    assert "State folder is not writable" in ro.out and "Traceback" not in ro.out
    assert folder.groups_alive() == [] and folder.state() == state
    plan = folder.run("plan", "f.spec")
    assert plan.returncode == 0, plan.out
