"""A burst of other work during one arm's run, through `specdsl apply`: the
stdlib drifting double on both arms (the candidate 24% faster), a user's
probe whose second run (pair 1, arm B: side by side, AB) is hit by a CPU
burst from a process the test started (tests/apply/burst_load.py); that
run is invalid with its reason, its round is measured again, and the
verdicts are right (specdsl.apply.bursts)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).parent


def _server(name: str, speed: float, life: Path, epoch: float, seed: int) -> str:
    argv = [sys.executable, str(HERE / "walk_double.py"), "{port}", "--speed", str(speed), "--life", str(life),
            "--drift", "0.05", "--epoch", f"{epoch:.3f}", "--noise", "0.02", "--seed", str(seed)]
    items = ", ".join(json.dumps(a) for a in argv)
    return f'server "{name}" {{\n  engine = "command"\n  model = "m"\n  command = [{items}]\n  ready_timeout = 30s\n}}\n'


def _spec(tmp: Path) -> str:
    epoch = time.time()
    probe = [sys.executable, str(HERE / "burst_probe.py"), "{base_url}", "--count", str(tmp / "count.txt"),
             "--burst-at", "1", "--trigger", str(tmp / "burst.go"), "--hold", "1.0"]
    items = ", ".join(json.dumps(a) for a in probe)
    return ('host "a" {}\nstack "sys" {\n  python = "system"\n}\n'
            + _server("b", 100, tmp / "life.txt", epoch, 1) + _server("c", 124, tmp / "life.txt", epoch, 2)
            + f'workload "w" {{\n  command = [{items}]\n  runs = 3\n  block = 1\n  timeout = 60s\n'
            '  metric "tps" { regex = "tps: ([0-9.]+)" }\n}\n'
            'experiment "base" {\n  host = host.a\n  stack = stack.sys\n  server = server.b\n  workload = workload.w\n}\n'
            'experiment "cand" {\n  host = host.a\n  stack = stack.sys\n  server = server.c\n  workload = workload.w\n'
            '  baseline = experiment.base\n'
            '  assert "faster" { tps >= baseline.tps * 1.10 }\n  assert "not40" { tps >= baseline.tps * 1.40 }\n}\n')


@pytest.mark.skipif(not Path("/proc/stat").exists(), reason="the host's load is read from /proc")
def test_a_run_a_burst_hit_is_invalid_with_its_reason_and_measured_again(tmp_path):
    (tmp_path / "walk.spec").write_text(_spec(tmp_path))
    burst = subprocess.Popen([sys.executable, str(HERE / "burst_load.py"), "--trigger", str(tmp_path / "burst.go"),
                              "--ready", str(tmp_path / "ready"), "--procs", "8", "--burn", "1.5"], start_new_session=True)
    try:
        while not (tmp_path / "ready").exists():
            assert burst.poll() is None, "the burst generator ended before it was ready"
            time.sleep(0.01)
        env = dict(os.environ, SPECDSL_ENV_ROOT=str(tmp_path / "envs"))
        proc = subprocess.run([sys.executable, "-m", "specdsl.cli.main", "apply", "walk.spec", "--yes", "--json"],
                              cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
        assert burst.wait(timeout=30) == 0, "the burst never came"
    finally:
        if burst.poll() is None:
            os.killpg(burst.pid, 9)
            burst.wait()
    doc = json.loads(proc.stdout)
    verdicts = {v["assertion"]: v for v in doc["verdicts"] if v["experiment"] == "cand"}
    assert verdicts["faster"]["verdict"] == "pass" and verdicts["not40"]["verdict"] == "fail", proc.stdout + proc.stderr
    assert doc["exit_code"] == 3  # a gating FAIL: `not40`
    (result,) = [d for d in (json.loads(p.read_text()) for p in (tmp_path / ".specdsl").rglob("result.json")) if "pairs" in d]
    runs = {r["index"]: r for r in result["runs"]}
    seen = json.dumps({"pairs": result["pairs"], "runs": [(r["index"], r.get("host"), r.get("invalid")) for r in result["runs"]]})
    first = result["pairs"][0]
    hit = next(b for b in first["blocks"] if b["arm"] == "B")
    partner = next(b for b in first["blocks"] if b["arm"] == "A")
    # the burst hit pair 1's arm B run: invalid, with its reason, and its round measured again
    assert hit.get("remeasured"), seen
    (bad,) = hit["remeasured"][:1]
    assert runs[bad]["invalid"].startswith("a burst of other work: "), seen
    assert "other tasks wanted the" in runs[bad]["invalid"] and "during arm A's run of its round" in runs[bad]["invalid"]
    assert runs[bad]["host"]["other_runnable"] > runs[partner["remeasured"][0]]["host"]["other_runnable"] + 1, seen
    assert runs[partner["remeasured"][0]]["invalid"].startswith("its round was measured again: arm B's run beside it")
    # the block still has its run, measured after the burst, and every pair's arms read a valid run each
    assert len(hit["runs"]) == 1 and not runs[hit["runs"][0]].get("invalid")
    assert all(len(b["runs"]) == 1 and not runs[b["runs"][0]].get("invalid") for p in result["pairs"] for b in p["blocks"])
    assert verdicts["faster"]["evidence"]["n"] == len(result["pairs"]) >= 3  # no pair was lost
    # counted and said
    dropped = sum(len(b.get("remeasured", ())) for p in result["pairs"] for b in p["blocks"])
    assert doc["invalid_runs"] == dropped >= 2
    assert any("measured again, not read by any verdict" in w and "pair 1 arm B" in w for w in doc["warnings"]), doc["warnings"]
