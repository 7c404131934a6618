"""A run's warnings reach apply's output also when the run is one arm of a
pair (they did only for a lone benchmark). Two servers of known timing
(tests/bench/timed_server.py, started by the walk as `command` servers);
the candidate's stops every request after 3 tokens although the workload
asks for exactly 6 (`ignore_eos`), as transformers serve did on the H200:
those runs are invalid (specdsl.bench.validity), their pairs left out."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
TIMED = str(HERE.parent / "bench" / "timed_server.py")


def server(name: str, model: str) -> str:
    argv = [sys.executable, TIMED, "--port", "{port}", "--ttft-ms", "5", "--itl-ms", "1"]
    items = ", ".join(f'"{a}"' for a in argv)
    return (f'server "{name}" {{\n  engine = "command"\n  model = "{model}"\n  command = [{items}]\n'
            f'  ready_timeout = 30s\n}}\n')


SPEC = '''host "a" {}
stack "sys" {
  python = "system"
}
''' + server("whole", "timed:5:1") + server("short", "timed:5:1:3") + '''
workload "w" {
  input_len   = 8
  output_len  = 6
  requests    = 4
  concurrency = 2
  runs        = 2
  max_runs    = 2
  block       = 1
  warmup      = 0
  ignore_eos  = true
}
experiment "base" {
  host     = host.a
  stack    = stack.sys
  server   = server.whole
  workload = workload.w
}
experiment "cand" {
  host     = host.a
  stack    = stack.sys
  server   = server.short
  workload = workload.w
  baseline = experiment.base
  assert "no-failures" { failed == 0 }
}
'''


def test_short_outputs_of_a_paired_arm_are_named_by_pair_and_arm(tmp_path):
    (tmp_path / "walk.spec").write_text(SPEC)
    env = dict(os.environ, SPECDSL_ENV_ROOT=str(tmp_path / "envs"))
    done = subprocess.run([sys.executable, "-m", "specdsl.cli.main", "apply", "walk.spec", "--yes", "--target", "cand"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=240, env=env)
    out = done.stdout + done.stderr
    # short outputs where the length was exact: the candidate's runs are
    # invalid and every pair is left out; `failed == 0` reads every run,
    # invalid ones too (issue 34), and no request failed
    assert done.returncode == 0, out
    assert "no-failures  PASS  failed == 0 in every one of 2 runs (a count: exact, no interval): 0" in out
    assert "benchmark.cand: 2 of 2 pairs left out of every verdict" in out and "invalid runs: 2." in out
    lines = [line for line in out.splitlines()
             if line.startswith("warning:") and "short outputs" in line and "left out" not in line]
    # both pairs' candidate arm, never the baseline's: said once, with its count (apply.repeats)
    assert len(lines) == 1, out
    assert lines[0].startswith("warning: benchmark.cand: short outputs: 4 of 4 requests ended at 3 tokens"), lines
    assert lines[0].endswith("(said by 2 runs: pairs 1-2, arm B (cand))"), lines
