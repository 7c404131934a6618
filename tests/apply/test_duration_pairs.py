"""A paired comparison of timed runs (`duration`) through `specdsl apply`:
each run is a call of its own on its launch, after one warm-up, and takes
the launch's rate from that warm-up, so that no run sends a prompt twice
(on the H200 every such run cycled its `requests` = 64 prompts: 128 of 192
requests met the prefix cache, docs/gpu-run.md). ~15 s."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

SETTLING = str(Path(__file__).parent.parent / "bench" / "settling_server.py")


def server(name: str, itl_ms: str) -> str:
    argv = ", ".join(f'"{a}"' for a in (sys.executable, SETTLING, "--port", "{port}", "--itl-ms", itl_ms))
    return f'server "{name}" {{\n  engine = "command"\n  model = "m"\n  command = [{argv}]\n  ready_timeout = 30s\n}}\n'


SPEC = ('host "a" {}\nstack "sys" {\n  python = "system"\n}\n' + server("base", "4") + server("cand", "4") + '''
workload "w" {
  input_len   = 4
  output_len  = 8
  requests    = 4
  concurrency = 2
  duration    = 1s
  block       = 1
  runs        = 2
  max_runs    = 2
  warmup      = 4
  ignore_eos  = true
}
experiment "base" {
  host     = host.a
  stack    = stack.sys
  server   = server.base
  workload = workload.w
}
experiment "cand" {
  host     = host.a
  stack    = stack.sys
  server   = server.cand
  workload = workload.w
  baseline = experiment.base
  assert "same" { output_throughput >= 0.5 * baseline.output_throughput }
}
''')


def test_every_timed_run_of_a_pair_sends_fresh_prompts_only(tmp_path):
    (tmp_path / "walk.spec").write_text(SPEC)
    env = dict(os.environ, SPECDSL_ENV_ROOT=str(tmp_path / "envs"))
    done = subprocess.run([sys.executable, "-m", "specdsl.cli.main", "apply", "walk.spec", "--yes", "--target", "cand"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=240, env=env)
    assert done.returncode in (0, 4), done.stdout[-2000:] + done.stderr[-2000:]
    assert "reused a prompt" not in done.stdout + done.stderr
    from specdsl.state import load_state

    run = next(r for r in load_state(tmp_path / ".specdsl").runs if r.step == "benchmark.cand")
    doc = json.loads((tmp_path / ".specdsl" / run.folder / "result.json").read_text())
    assert len(doc["runs"]) >= 4 and all(launch["warmup"]["peak_rate"] > 0 for launch in doc["launches"])
    for r in doc["runs"]:
        sent = r["metrics"]["completed"] + r["metrics"]["failed"]
        # a run of 1 s at 2 streams of ~40 ms requests sends far more than `requests`
        assert sent > 4 and r["prompts"]["count"] >= sent and r["prompts"]["reused"] == 0, r["prompts"]
