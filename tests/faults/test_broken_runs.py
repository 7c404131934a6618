"""A broken run is never a measurement (docs/reliability.md): a real
`specdsl apply` against the paced streaming double (tests/bench/timed_server.py,
a `command` server) that fails requests on cue, or whose process is killed
(-9) or frozen (SIGSTOP) in the middle of a run. Each asserts the exit code,
the message, what state records, and that a re-apply finishes the work."""

from __future__ import annotations

import json
import os
import signal
import sys
import urllib.request
from pathlib import Path

import pytest

from faults_helpers import state_now, wait_for
from specdsl.report.lookup import gather

TIMED = str(Path(__file__).resolve().parents[1] / "bench" / "timed_server.py")


def spec(folder, *, fail_percent: float = 0, requests: int = 20, runs: int = 2, itl_ms: float = 1, concurrency: int = 4,
         max_failed: str | None = None, timeout: str = "2s", asserts: str = "", servers: dict | None = None) -> None:
    """One experiment `e` on server `paced`, or with `servers` (name ->
    fail percent) one experiment of each name on a server of its own."""
    servers = servers if servers is not None else {"paced": fail_percent}
    text = 'stack "sys" {\n  python = "system"\n}\n'
    for name, percent in servers.items():
        argv = [sys.executable, TIMED, "--port", "{port}", "--ttft-ms", "2", "--itl-ms", str(itl_ms), "--pids", str(folder.pids)]
        if percent:
            argv += ["--fail-percent", f"{percent:g}"]
        items = ", ".join(f'"{a}"' for a in argv)
        text += f'server "{name}" {{\n  engine        = "command"\n  model         = "m"\n  command       = [{items}]\n}}\n'
    limit = f"\n  max_failed  = {max_failed}" if max_failed is not None else ""
    text += f'''workload "w" {{
  input_len   = 8
  output_len  = 8
  requests    = {requests}
  concurrency = {concurrency}
  runs        = {runs}
  warmup      = 0
  timeout     = {timeout}{limit}
}}
'''
    for name in servers:
        exp = "e" if name == "paced" else name
        text += f'experiment "{exp}" {{\n  stack    = stack.sys\n  server   = server.{name}\n  workload = workload.w\n{asserts}}}\n'
    folder.spec.write_text(text)


COUNT = '''  assert "few-failures" { failed <= 1 }
'''
# a gating assertion too (on this loaded machine its verdict may be ERROR
# for a client-bound run: only where no run is valid is it asserted)
ASSERTS = COUNT + '''  assert "fast" { output_throughput >= 1 }
'''


def bench_run(state, exp: str = "e"):
    """The benchmark's latest run record and the run recorded as its result."""
    latest = [r for r in state.runs if r.step == f"benchmark.{exp}"][-1]
    result = state.result(latest.identity)
    return latest, result


def test_one_percent_failed_invalidates_by_default_and_max_failed_allows_it(folder):
    # 100 requests a run, the double fails every 100th: one failure in each run
    spec(folder, fail_percent=1, requests=100, asserts=ASSERTS)
    first = folder.run("apply", "f.spec", "--yes", "--json")
    assert first.returncode == 4, first.out
    doc = json.loads(first.stdout)
    assert doc["exit_code"] == 4 and doc["invalid_runs"] == 2
    [bench] = doc["benchmarks"]
    assert [(r["valid"], r["invalid"]) for r in bench["runs"]] == [
        (False, "1 of 100 requests failed (max_failed 0)")] * 2
    verdicts = {v["assertion"]: v for v in doc["verdicts"]}
    # a count of failures reads every run, invalid ones too (one failure each: `failed <= 1` holds);
    # the throughput reads only valid runs, of which there are none
    assert verdicts["few-failures"]["verdict"] == "pass" and verdicts["fast"]["verdict"] == "error"
    assert "failed <= 1 in every one of 2 runs" in verdicts["few-failures"]["detail"]
    assert "too few valid runs: 0 valid (invalid runs not read: run 0: 1 of 100 requests failed (max_failed 0); run 1:" \
        in verdicts["fast"]["detail"]
    [warning] = [w for w in doc["warnings"] if "invalid runs" in w]
    assert warning.startswith("benchmark.e: 2 invalid runs, not read by any verdict") and "0 valid of 2 wanted" in warning
    _, result = bench_run(folder.state())
    assert result.runs == 0 and dict(result.metrics) == {}
    # the report says so too (its view, as `specdsl report` draws it; the page itself: tests/report)
    view = gather(folder.state(), folder.state_dir, "e")
    assert "invalid runs not read: run 0: 1 of 100 requests failed (max_failed 0); run 1: 1 of 100 requests failed " \
        "(max_failed 0); no verdict reads them" in view.notes
    assert result.invalid == ("run 0: 1 of 100 requests failed (max_failed 0)",
                              "run 1: 1 of 100 requests failed (max_failed 0)")
    # one failure in a hundred allowed: the runs are measurements; the same
    # benchmark identity (max_failed is not measured), the runs made again
    spec(folder, fail_percent=1, requests=100, max_failed="1%", asserts=COUNT)
    again = folder.run("apply", "f.spec", "--yes")
    assert again.returncode == 0, again.out
    assert "few-failures  PASS  failed <= 1 in every one of 2 runs (a count: exact, no interval): 1" in again.out
    latest, result = bench_run(folder.state())
    assert latest is result and result.runs == 2 and result.invalid is None
    assert result.metric("failed") == 1
    assert "invalid runs: 0." in again.out


def test_half_or_all_requests_failing(folder):
    # one apply, two servers: one fails every second request, one every request
    spec(folder, servers={"half": 50, "all": 100}, requests=10, max_failed="1%", asserts=ASSERTS)
    proc = folder.run("apply", "f.spec", "--yes")
    assert proc.returncode == 5, proc.out  # a failed step outranks an ERROR verdict
    state = folder.state()
    latest, result = bench_run(state, "half")
    assert "benchmark.half: 2 invalid runs, not read by any verdict (run 0: 5 of 10 requests failed (max_failed 1%)" in proc.out
    assert latest is result and latest.status == "completed" and latest.runs == 0
    assert latest.invalid == ("run 0: 5 of 10 requests failed (max_failed 1%)",
                              "run 1: 5 of 10 requests failed (max_failed 1%)")
    assert "half: fast  ERROR  too few valid runs: 0 valid" in proc.out
    assert "half: few-failures  FAIL  not failed <= 1 in every one of 2 runs" in proc.out  # it reads the invalid runs
    assert "checks: 0 passed, 1 failed, 0 inconclusive, 1 error; invalid runs: 2." in proc.out
    latest, result = bench_run(state, "all")
    assert "failed: benchmark.all" in proc.out and "all 10 requests" in proc.out and "http 500" in proc.out.lower()
    assert latest.status == "failed" and result is None and "all 10 requests" in latest.reason
    assert not state.servers and folder.groups_alive() == []
    spec(folder, servers={"half": 0, "all": 0}, requests=10, max_failed="1%", asserts=COUNT)  # the servers mended
    again = folder.run("apply", "f.spec", "--yes")
    assert again.returncode == 0, again.out
    for exp in ("half", "all"):  # (now the same server: one benchmark identity, its result shared)
        _, result = bench_run(folder.state(), exp)
        assert result.status == "completed" and result.runs == 2 and result.invalid is None


def _served(base_url: str) -> int:
    text = urllib.request.urlopen(base_url + "/metrics", timeout=5).read().decode()
    return int(next(line.split()[1] for line in text.splitlines() if line.startswith("double:requests_total")))


def _server_under_load(folder, served: int):
    """The recorded server once it has served `served` requests."""
    record = wait_for(lambda: (s := state_now(folder)) is not None and s.servers and s.servers[0].status == "ready"
                      and s.servers[0], 60, "a ready server")
    wait_for(lambda: _served(record.base_url) >= served, 60, f"{served} requests served")
    return record


def test_a_server_killed_then_one_frozen_mid_run_fail_the_step_and_the_reapply_makes_only_the_lost_runs(folder):
    # runs = 2 of 30 requests: the server killed (-9) three requests into the second run
    spec(folder, requests=30, itl_ms=5, concurrency=1, timeout="1s", asserts=COUNT)
    proc = folder.start("apply", "f.spec", "--yes")
    record = _server_under_load(folder, 33)
    os.killpg(record.pgid, signal.SIGKILL)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 5, out
    assert f"server paced (pid {record.pid}, process group {record.pgid}) died at " in out, out
    assert "killed by signal 9" in out and "the 1 valid run before it is recorded" in out
    assert "had already exited (killed by signal 9)" in out, out
    assert "server stopped" not in out
    state = folder.state()
    runs = [r for r in state.runs if r.step == "benchmark.e"]
    failed = [r for r in runs if r.status == "failed"]
    assert len(failed) == 1 and "died at" in failed[0].reason and "killed by signal 9" in failed[0].reason
    result = state.result(runs[0].identity)
    assert result.status == "completed" and result.runs == 1  # the run before the kill, kept
    assert not state.servers and folder.groups_alive() == []

    # the re-apply relaunches and makes only the lost run: its server frozen (SIGSTOP) in it
    proc = folder.start("apply", "f.spec", "--yes")
    record = _server_under_load(folder, 3)
    os.killpg(record.pgid, signal.SIGSTOP)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 5, out
    assert "run 1/1: 30 requests" in out, out  # only the lost run
    assert f"server paced (pid {record.pid}, process group {record.pgid}) stopped answering at " in out, out
    assert "did not answer within 1s" in out
    state = folder.state()
    failed = [r for r in state.runs if r.step == "benchmark.e" and r.status == "failed"]
    assert len(failed) == 2 and "stopped answering" in failed[-1].reason
    assert state.result(failed[-1].identity).runs == 1  # still the first run
    assert not state.servers and folder.groups_alive() == []  # the frozen group was stopped

    again = folder.run("apply", "f.spec", "--yes")
    assert again.returncode == 0, again.out
    assert "run 1/1: 30 requests" in again.out, again.out
    latest, result = bench_run(folder.state())
    assert latest is result and result.runs == 2 and result.invalid is None
    assert len(folder.groups()) == 3 and folder.groups_alive() == []


def test_a_paired_arm_whose_server_dies_fails_the_step(folder):
    def server(name: str) -> str:
        argv = [sys.executable, TIMED, "--port", "{port}", "--ttft-ms", "2", "--itl-ms", "5", "--pids", str(folder.pids)]
        items = ", ".join(f'"{a}"' for a in argv)
        return f'server "{name}" {{\n  engine  = "command"\n  model   = "{name}"\n  command = [{items}]\n}}\n'

    folder.spec.write_text('host "a" {}\nstack "sys" {\n  python = "system"\n}\n' + server("old") + server("new") + '''
workload "w" {
  input_len   = 8
  output_len  = 8
  requests    = 30
  concurrency = 1
  runs        = 2
  max_runs    = 2
  block       = 1
  warmup      = 0
  timeout     = 2s
}
experiment "base" {
  host     = host.a
  stack    = stack.sys
  server   = server.old
  workload = workload.w
}
experiment "cand" {
  host     = host.a
  stack    = stack.sys
  server   = server.new
  workload = workload.w
  baseline = experiment.base
  assert "none-failed" { failed == 0 }
}
''')
    proc = folder.start("apply", "f.spec", "--yes", "--target", "cand")
    # the first block is arm A's (ABBA): its server, a few requests in
    pid, pgid = wait_for(lambda: folder.groups() and _pid_serving(folder), 90, "arm A's server under load")
    os.killpg(pgid, signal.SIGKILL)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 5, out
    assert f"pair 1 arm A (base): server old (pid {pid}, process group {pgid}) died at " in out, out
    assert "killed by signal 9" in out
    state = folder.state()
    [failed] = [r for r in state.runs if r.step == "benchmark.cand" and r.status == "failed"]
    assert "pair 1 arm A (base): server old" in failed.reason and "died at" in failed.reason
    assert not state.servers and folder.groups_alive() == []
    again = folder.run("apply", "f.spec", "--yes", "--target", "cand")
    assert again.returncode == 0, again.out
    assert "none-failed  PASS  failed == 0 in every one of 2 runs" in again.out


def _pid_serving(folder):
    """(pid, pgid) of the server double that has served 3 requests or more."""
    for line in folder.pids.read_text().splitlines():
        pid, pgid = map(int, line.split())
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        port = cmd[cmd.index(b"--port") + 1].decode() if b"--port" in cmd else ""
        try:
            if port and _served(f"http://127.0.0.1:{port}") >= 3:
                return pid, pgid
        except OSError:
            continue
    return None
