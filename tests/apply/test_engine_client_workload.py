"""The engine's own benchmark client as a workload, through `specdsl apply`:
a command workload runs with `{python}` of the stack's real uv environment,
its script named relative to the spec's folder (apply runs elsewhere), the
stack's and the server's variables in its process; it writes its result in
`vllm bench serve`'s format at `{result_file}`, and `metrics =
"vllm-bench-serve"` gives the assertions their metrics, paired arms and a
plain benchmark alike. Real processes: stdlib server doubles, a stdlib
client double (tests/apply/vllm_bench_serve_double.py), real HTTP."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
SERVER = HERE / "walk_double.py"
CLIENT = HERE / "vllm_bench_serve_double.py"


def _server(name: str, speed: int, life: Path, seed: int) -> str:
    argv = [sys.executable, str(SERVER), "{port}", "--speed", str(speed), "--life", str(life), "--noise", "0.01",
            "--seed", str(seed)]
    return (f'server "{name}" {{\n  engine  = "command"\n  model   = "m"\n  command = {json.dumps(argv)}\n'
            f'  env     = {{ SERVER_MARK = "{name}-env" }}\n  ready_timeout = 30s\n}}\n')


SPEC = '''stack "sys" {
  python = "system"
  env    = { STACK_MARK = "from-the-stack" }
}

workload "vllm-bench" {
  command = ["{python}", "clients/vllm_bench_serve_double.py", "bench", "serve", "--base-url", "{base_url}",
    "--model", "{model}", "--num-prompts", "3", "--save-result", "--result-filename", "{result_file}"]
  metrics = "vllm-bench-serve"
  runs    = 3
  timeout = 60s
}

experiment "base" {
  stack    = stack.sys
  server   = server.slow
  workload = workload.vllm-bench
  assert "served" { completed >= 3 }
}

experiment "cand" {
  stack    = stack.sys
  server   = server.fast
  workload = workload.vllm-bench
  baseline = experiment.base
  assert "faster" { output_throughput >= baseline.output_throughput * 1.03 }
  assert "none failed" { failed == 0 }
}
'''


def test_vllm_bench_serve_from_the_stack_env_feeds_the_assertions(tmp_path):
    project = tmp_path / "project"
    (project / "clients").mkdir(parents=True)
    shutil.copy(CLIENT, project / "clients" / CLIENT.name)
    life = tmp_path / "life.txt"
    (project / "e.spec").write_text(_server("slow", 100, life, 1) + _server("fast", 130, life, 2) + SPEC)
    elsewhere = tmp_path / "elsewhere"  # the script is the spec folder's, not the working directory's
    elsewhere.mkdir()
    env_root = tmp_path / "envs"
    env = dict(os.environ, SPECDSL_ENV_ROOT=str(env_root))
    proc = subprocess.run([sys.executable, "-m", "specdsl.cli.main", "apply", str(project / "e.spec"), "--yes", "--json",
                           "--state", str(tmp_path / "state")], cwd=elsewhere, capture_output=True, text=True,
                          timeout=300, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    verdicts = {v["assertion"]: v for v in doc["verdicts"]}
    faster = verdicts["faster"]
    assert faster["verdict"] == "pass", faster
    assert faster["evidence"]["low"] > 1.03 and 1.2 < faster["evidence"]["estimate"] < 1.4, faster["evidence"]
    assert verdicts["none failed"]["verdict"] == "pass" and verdicts["served"]["verdict"] == "pass"

    # every run wrote its file where `{result_file}` said, from the stack's interpreter, with the variables
    results = sorted((tmp_path / "state").rglob("command-run-*.result.json"))
    assert len(results) >= 3 + 2 * 3, results  # the plain benchmark's 3 runs, then 3 pairs of two arms
    prefixes, marks = set(), set()
    for path in results:
        got = json.loads(path.read_text())
        prefixes.add(got["python_prefix"])
        marks.add((got["STACK_MARK"], got["SERVER_MARK"]))
        assert got["completed"] == 3 and got["failed"] == 0
    (prefix,) = prefixes
    assert Path(prefix).is_relative_to(env_root) and Path(prefix) != Path(sys.prefix)
    assert marks == {("from-the-stack", "slow-env"), ("from-the-stack", "fast-env")}
    # the plain benchmark's runs (its folder holds their logs) read the client's own figures: the slow
    # server's speed within its 1% noise, the TTFT it measured, NaN TPOT (vLLM writes NaN) left unmeasured
    (plain,) = [p.parent for p in (tmp_path / "state").rglob("command-run-0.log") if not p.parent.name.startswith("pair-")]
    runs = json.loads((plain / "result.json").read_text())["runs"]
    assert len(runs) == 3 and all(95 < r["metrics"]["output_throughput"] < 105 for r in runs), runs
    assert all(r["metrics"]["median_ttft_ms"] > 0 and "median_tpot_ms" not in r["metrics"] for r in runs), runs
