"""Apply through a real Slurm (cluster.py: slurmctld, slurmd, munged on
localhost), with the OpenAI double as the server so each job takes
seconds: one job per matrix cell, job ids live and in state, re-apply
submits nothing; and faults: a job that fails, one cancelled from outside,
its node set down, one past its time limit. Each gives a clear error,
keeps what was recorded, and a re-apply resumes with the cells left."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import signal
from pathlib import Path

from apply_helpers import cli_env, processes_mentioning
from slurm_helpers import job_folders, setup, spec_text, wait_for
from specdsl.state import load_state


def run(cluster, folder: Path, *args, timeout=240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "specdsl.cli.main", *args], cwd=folder, capture_output=True, text=True,
                          timeout=timeout, env=cli_env(**cluster.env()))


def start(cluster, folder: Path, *args) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "specdsl.cli.main", *args], cwd=folder, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=cli_env(**cluster.env()), start_new_session=True)








def held_job(cluster, gates: Path, cell: int | None) -> str:
    """The id of the running job of matrix cell `cell` (None: any)."""
    def find():
        for job in cluster.jobs():
            info = cluster.scontrol("show", "job", "-o", job)
            if "JobState=RUNNING" in info and (cell is None or f"c={cell}]" in info):
                return job
        return None
    return wait_for(find, 60, f"the job of cell {cell} running")


def benchmark_runs(folder: Path, status="completed"):
    state = load_state(folder / ".specdsl")
    return [r for r in state.runs if r.step.startswith("benchmark.") and r.status == status]


def test_matrix_runs_one_job_per_cell_and_reapply_submits_nothing(fresh, tmp_path):
    folder, _ = setup(tmp_path)
    plan = run(fresh, folder, "plan", "m.spec")
    assert plan.returncode == 0, plan.stdout + plan.stderr
    assert "Slurm jobs" in plan.stdout and plan.stdout.count("--partition=debug --gres=gpu:1 --time=00:05:00") == 3
    out = run(fresh, folder, "apply", "m.spec", "--yes")
    text = out.stdout + out.stderr
    assert out.returncode == 0, text
    jobs = set(re.findall(r"slurm job (\d+) submitted", text))
    assert len(jobs) == 3, text
    assert re.search(r"slurm job \d+ \(s/e\[c=2\]\): RUNNING on localhost", text), text
    runs = benchmark_runs(folder)
    assert sorted(r.step for r in runs) == ["benchmark.e[c=1]", "benchmark.e[c=2]", "benchmark.e[c=3]"]
    assert {r.job for r in runs} == jobs  # each cell's run records the job it ran in
    assert all(r.metric("output_throughput") for r in runs)
    assert all((folder / ".specdsl" / r.folder).is_dir() for r in runs)  # results came back into the state folder
    shown = run(fresh, folder, "state", "show", f"run.{runs[0].id}", "m.spec")
    assert f'job = "{runs[0].job}"' in shown.stdout, shown.stdout + shown.stderr
    assert processes_mentioning(str(folder)) == []
    before = len(job_folders(folder))
    again = run(fresh, folder, "apply", "m.spec", "--yes")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "No changes." in again.stdout
    assert len(job_folders(folder)) == before and fresh.jobs() == []


def test_failing_job_is_an_error_and_keeps_state(fresh, tmp_path):
    folder, _ = setup(tmp_path, server_args=', "--fail-completions"')
    out = run(fresh, folder, "apply", "m.spec", "--yes")
    text = out.stdout + out.stderr
    assert out.returncode == 5, text
    assert text.count("first completion failed") == 3, text  # each cell's job says why
    assert "skipped because launch.s/e[c=1] failed" in text and "skipped because launch.s/e[c=3] failed" in text
    state = load_state(folder / ".specdsl")
    failed = [r for r in state.runs if r.status == "failed"]
    assert len(failed) == 3 and all(r.job for r in failed)
    assert processes_mentioning(str(folder)) == []


def _fault_then_resume(cluster, tmp_path, fault, expect: str, **kw):
    """Cells 1 and 2 complete; cell 3's server is held and its job faulted
    by `fault(job_id)`; the apply names `expect`; state keeps cells 1 and 2;
    once released, a re-apply runs cell 3 alone."""
    folder, gates = setup(tmp_path, **kw)
    (gates / "hold-3").write_text("")
    proc = start(cluster, folder, "apply", "m.spec", "--yes")
    try:
        job = held_job(cluster, gates, 3)
        wait_for(lambda: any('"addr": "launch.s/e[c=3]", "event": "start"' in (f / "events.jsonl").read_text()
                             for f in job_folders(folder) if (f / "events.jsonl").exists()), 60, "cell 3's launch started")
        wait_for(lambda: len(benchmark_runs(folder)) == 2 if (folder / ".specdsl" / "state.toml").exists() else False,
                 120, "cells 1 and 2 recorded")
        fault(job)
        out, _ = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 5, out
    assert expect in out, out
    assert f"slurm job {job}" in out
    done = benchmark_runs(folder)
    assert sorted(r.step for r in done) == ["benchmark.e[c=1]", "benchmark.e[c=2]"]
    failed = [r for r in load_state(folder / ".specdsl").runs if r.status == "failed"]
    assert failed and all(r.job == job for r in failed)
    assert processes_mentioning(str(gates)) == []
    (gates / "hold-3").unlink()
    if not cluster.idle():
        cluster.resume()
    again = run(cluster, folder, "apply", "m.spec", "--yes")
    text = again.stdout + again.stderr
    assert again.returncode == 0, text
    assert len(re.findall(r"slurm job \d+ submitted", text)) == 1, text  # only the cell left
    assert sorted(r.step for r in benchmark_runs(folder)) == ["benchmark.e[c=1]", "benchmark.e[c=2]", "benchmark.e[c=3]"]
    assert [r.id for r in benchmark_runs(folder)][:2] == [r.id for r in done]  # kept, not rerun


def test_job_cancelled_from_outside(fresh, tmp_path):
    _fault_then_resume(fresh, tmp_path, lambda job: subprocess.run(["scancel", job], env=cli_env(**fresh.env()), check=True),
                       "was cancelled outside specdsl (scancel)")


def test_node_set_down_under_a_job(fresh, tmp_path):
    _fault_then_resume(fresh, tmp_path, lambda job: fresh.scontrol("update", "nodename=localhost", "state=down",
                                                                   "reason=specdsl-test"),
                       "lost its node")


def test_job_past_its_time_limit(fresh, tmp_path):
    # Slurm counts time limits in minutes: this test waits one out
    _fault_then_resume(fresh, tmp_path, lambda job: None, "reached its time limit", time_limit="1m")


def test_ctrl_c_cancels_the_jobs(fresh, tmp_path):
    folder, gates = setup(tmp_path)
    for c in (1, 2, 3):
        (gates / f"hold-{c}").write_text("")
    proc = start(fresh, folder, "apply", "m.spec", "--yes")
    try:
        held_job(fresh, gates, None)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, out
    wait_for(lambda: fresh.jobs() == [], 30, "every job cancelled")
    assert processes_mentioning(str(gates)) == []


def test_a_failure_in_a_job_skips_what_the_local_walk_skips(fresh, tmp_path):
    """One failure propagation (`scheduler.skip_dependants`): a launch that
    fails inside a Slurm job skips exactly the steps the same failure skips
    on this machine, with the same words and root cause, the local check
    of its benchmark among them."""
    ended = {}
    for where in ("slurm", "local"):
        folder = tmp_path / where
        folder.mkdir()
        text = spec_text(folder, server_args=', "--fail-completions"')
        text = text.replace("server.s { env = { CELL = matrix.c } }", "server.s")
        text = text.replace("matrix   = { c = [1, 2, 3] }", 'assert "serves" { output_throughput > 0 }')
        if where == "local":
            text = re.sub(r"slurm = \{[^}]*\}", "", text)
        (folder / "m.spec").write_text(text)
        out = run(fresh, folder, "apply", "m.spec", "--yes", "--json")
        assert out.returncode == 5, out.stdout + out.stderr
        steps = json.loads(out.stdout)["steps"]
        ended[where] = {s["addr"]: (s["status"], s["reason"], s["detail"], s["root"])
                        for s in steps if s["status"] == "skipped"}
        ended[where + " failed"] = sorted(s["addr"] for s in steps if s["status"] == "failed")
    [launch] = ended["local failed"]
    assert launch.startswith("launch.") and ended["slurm failed"] == [launch]
    check = next(a for a in ended["local"] if a.startswith("check."))
    assert ended["local"][check] == ("skipped", "upstream_failed", f"skipped because {launch} failed", launch)
    assert ended["slurm"] == ended["local"]
