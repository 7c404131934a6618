"""Steady launches through `specdsl apply` (docs/verdicts.md, "Steady
launches"): a server whose speed settles only after its first requests
and whose log says it compiled while warming (tests/bench/
settling_server.py, a `command` server read with every engine's compile
lines) is warmed until steady and then measured; one that never settles
is dropped with its reason, counted, and a paired comparison replaces it
twice, then stops INCONCLUSIVE with the reason. Each apply ~10-20 s."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

SETTLING = str(Path(__file__).parent.parent / "bench" / "settling_server.py")


def server(name: str, *args: str) -> str:
    argv = [sys.executable, SETTLING, "--port", "{port}", "--itl-ms", "4", *args]
    items = ", ".join(f'"{a}"' for a in argv)
    return f'server "{name}" {{\n  engine = "command"\n  model = "m"\n  command = [{items}]\n  ready_timeout = 30s\n}}\n'


def spec(base_args, cand_args, warmup_time="8s") -> str:
    return ('host "a" {}\nstack "sys" {\n  python = "system"\n}\n' + server("base", *base_args) + server("cand", *cand_args)
            + f'''workload "w" {{
  input_len   = 4
  output_len  = 8
  requests    = 8
  concurrency = 2
  runs        = 2
  max_runs    = 2
  warmup      = 0
  warmup_time = {warmup_time}
  warmup_tolerance = 15%
  ignore_eos  = true
}}
experiment "base" {{
  host     = host.a
  stack    = stack.sys
  server   = server.base
  workload = workload.w
}}
experiment "cand" {{
  host     = host.a
  stack    = stack.sys
  server   = server.cand
  workload = workload.w
  baseline = experiment.base
  assert "faster" {{ output_throughput >= 0.9 * baseline.output_throughput }}
}}
''')


def apply(tmp_path: Path, text: str, *extra: str) -> subprocess.CompletedProcess:
    (tmp_path / "walk.spec").write_text(text)
    env = dict(os.environ, SPECDSL_ENV_ROOT=str(tmp_path / "envs"))
    return subprocess.run([sys.executable, "-m", "specdsl.cli.main", "apply", "walk.spec", "--yes", *extra],
                          cwd=tmp_path, capture_output=True, text=True, timeout=240, env=env)


def result_of(tmp_path: Path) -> dict:
    from specdsl.state import load_state

    state = load_state(tmp_path / ".specdsl")
    run = next(r for r in state.runs if r.step == "benchmark.cand")
    return json.loads((tmp_path / ".specdsl" / run.folder / "result.json").read_text())


def plan(tmp_path: Path) -> str:
    env = dict(os.environ, SPECDSL_ENV_ROOT=str(tmp_path / "envs"))
    done = subprocess.run([sys.executable, "-m", "specdsl.cli.main", "plan", "walk.spec", "--target", "cand"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env)
    return done.stdout + done.stderr


def test_a_server_that_settles_after_its_cold_requests_is_warmed_then_measured(tmp_path):
    # its first request (the launch's readiness check) and its third (the
    # warm-up's second) print a compile line: only the latter is the warm-up's
    settles = ("--settle-after", "12", "--cold-slow", "3", "--jit-at", "3")
    (tmp_path / "walk.spec").write_text(spec(settles, settles))
    assert "the first launch of stack sys on host local is cold (no JIT cache recorded there" in plan(tmp_path)
    done = apply(tmp_path, spec(settles, settles), "--target", "cand", "--json")
    out = json.loads(done.stdout)
    doc = result_of(tmp_path)
    # no launch dropped and no run invalid for a compile or a cold start; a round that a
    # burst of other work hit is measured again (specdsl.bench.bursts), its runs invalid for that alone
    bursts = [r["invalid"] for r in doc["runs"] if r.get("invalid")]
    assert out["dropped_launches"] == 0 and out["invalid_runs"] == len(bursts), done.stderr[-3000:]
    assert all("burst of other work" in why for why in bursts), bursts
    assert len(doc["pairs"]) == 2
    for launch in doc["launches"]:
        warm = launch["warmup"]
        assert warm["settled"] is True and warm["requests"] > 12, warm  # the cold ones all went to the warm-up
        assert warm["jit_lines"] == 1 and "double_kernel" in warm["jit"][0]  # its compile, before the agreeing slices
        assert "dropped" not in launch
    verdict = next(v for v in out["verdicts"] if v["assertion"] == "faster")
    # the same server on both arms: never a FAIL (an ERROR where a busy machine made the client late)
    assert verdict["verdict"] != "fail", verdict
    # the JIT cache of the stack on this host: the first pair's launches (side by side, started
    # together) found it empty, the second pair's found what they filled
    assert [(x["pair"], x["jit_cache_cold"]) for x in doc["launches"]] == [(0, True), (0, True), (1, False), (1, False)]
    (env,) = [d for d in (tmp_path / "envs").iterdir() if (d / "venv").is_dir()]
    logs = [Path(x["log"]).read_text() for x in doc["launches"]]
    assert all(f"TRITON_CACHE_DIR={env / 'jit-cache' / 'triton'}" in log for log in logs), logs[0][:300]
    assert "is cold" not in plan(tmp_path)  # a later plan: the cache is recorded


def test_a_candidate_that_never_settles_is_dropped_replaced_then_inconclusive(tmp_path):
    done = apply(tmp_path, spec((), ("--slowdown", "0.1"), warmup_time="1s"), "--target", "cand", "--json")
    out = json.loads(done.stdout)
    assert out["dropped_launches"] == 3, (out["dropped_launches"], done.stderr[-3000:])
    doc = result_of(tmp_path)
    dropped = [x for x in doc["launches"] if x.get("dropped")]
    assert len(dropped) == 3 and all(x["arm"] == "B" for x in dropped)
    assert all(x["dropped"].startswith("the launch did not settle within warmup_time 1s") for x in dropped), dropped
    assert doc["pairs"] == [] and "did not settle 3 times in pair 1" in doc["stopped"]
    verdict = next(v for v in out["verdicts"] if v["assertion"] == "faster")
    assert verdict["verdict"] == "inconclusive" and verdict["detail"].startswith("stopped: arm B's launch"), verdict
    assert any("launch dropped, never measured: the launch did not settle" in w for w in out["warnings"]), out["warnings"]
    # the text view counts them in its summary
    again = apply(tmp_path / "text", spec((), ("--slowdown", "0.1"), warmup_time="1s"), "--target", "cand") \
        if (tmp_path / "text").mkdir() is None else None
    assert "dropped launches: 3 (did not settle, never measured)." in again.stdout + again.stderr


def test_a_lone_benchmark_whose_launch_never_settles_fails_with_the_reason(tmp_path):
    text = spec(("--jit-every", "2"), (), warmup_time="1s").replace('  baseline = experiment.base\n', '').replace(
        "0.9 * baseline.output_throughput", "1")
    done = apply(tmp_path, text, "--target", "base")
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    assert "launch dropped, never measured: the launch did not settle within warmup_time 1s" in out, out
    assert "double_kernel" in out and "dropped launches: 1 (did not settle, never measured)." in out, out
