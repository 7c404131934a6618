"""Two candidates against one baseline share the baseline's launches
(specdsl.graph.pairs, "Sharing the baseline's launch"): block i is one
fresh launch of the baseline and one of each candidate, and the baseline's
runs of block i are arm A of pair i of both comparisons. Through the real
CLI against the decision double (a stdlib streaming server whose speed is
drawn per launch; tests/apply/decision_double.py): the plan counts the
shared launches, the apply makes exactly that many, each comparison keeps
its own pairs under its own identity (no launch serves two pairs of one
comparison), and a re-apply changes nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOUBLE = Path(__file__).with_name("decision_double.py")


def _server(name: str, speed: float, life: Path) -> str:
    argv = [sys.executable, str(DOUBLE), "{port}", "--life", str(life), "--speed", f"{speed:g}", "--seed", "3",
            "--launch-sd", "0.01", "--noise", "0.005", "--ttft-ms", "20", "--itl-ms", "10"]
    items = ", ".join(json.dumps(a) for a in argv)
    return f'server "{name}" {{\n  engine = "command"\n  model = "m"\n  command = [{items}]\n  ready_timeout = 30s\n}}\n'


def _spec(life: Path, speeds=(("base", 1.0), ("up", 0.7), ("fix", 1.4)), max_runs: int = 3, runs: int = 3) -> str:
    text = ('stack "sys" {\n  python = "system"\n}\n'
            'workload "w" {\n  endpoint = "completions"\n  input_len = 8\n  output_len = 8\n  requests = 4\n'
            f'  concurrency = 4\n  runs = {runs}\n  max_runs = {max_runs}\n  block = 1\n  warmup = 4\n  timeout = 30s\n}}\n')
    for name, speed in speeds:
        text += _server(name, speed, life)
        text += f'experiment "{name}" {{\n  stack = stack.sys\n  server = server.{name}\n  workload = workload.w\n'
        if name != "base":
            text += '  baseline = experiment.base\n  assert "faster" { output_throughput >= baseline.output_throughput * 1.0 }\n'
        text += "}\n"
    return text


def _cli(folder: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), SPECDSL_ENV_ROOT=str(folder / "envs"))
    return subprocess.run([sys.executable, "-m", "specdsl.cli.main", *args], cwd=folder, capture_output=True,
                          text=True, env=env, timeout=timeout)


def _results(folder: Path) -> dict[str, dict]:
    """experiment -> the result.json of its paired benchmark."""
    out = {}
    for path in (folder / ".specdsl").rglob("result.json"):
        doc = json.loads(path.read_text())
        if "pairs" in doc:
            out[doc["arms"]["B"]] = doc
    return out


def test_two_candidates_share_each_blocks_baseline_launch(tmp_path):
    life = tmp_path / "life.txt"
    (tmp_path / "bench.spec").write_text(_spec(life))

    plan = _cli(tmp_path, "plan", "bench.spec", "--json")
    assert plan.returncode == 0, plan.stderr
    doc = json.loads(plan.stdout)
    costs = {c["addr"]: c["cost"] for c in doc["changes"] if c.get("cost")}
    # fix comes first in plan order: it leads and counts the baseline's launches; up counts its own
    assert costs["benchmark.fix"]["launches_first"] == 6 and "shares_baseline_launches_with" not in costs["benchmark.fix"]
    assert costs["benchmark.up"]["launches_first"] == 3
    assert costs["benchmark.up"]["shares_baseline_launches_with"] == "benchmark.fix"
    assert doc["cost"]["launches_first"] == 9, doc["cost"]
    text = _cli(tmp_path, "plan", "bench.spec").stdout
    assert "each pair's baseline launch shared with benchmark.fix" in text, text
    assert "each baseline launch also serves benchmark.up" in text, text

    applied = _cli(tmp_path, "apply", "bench.spec", "--yes", "--json")
    out = json.loads(applied.stdout)
    verdicts = {v["experiment"]: v["verdict"] for v in out["verdicts"] if v.get("assertion") == "faster"}
    assert verdicts == {"up": "fail", "fix": "pass"}, (verdicts, applied.stderr[-2000:])
    starts = [line for line in life.read_text().splitlines() if line.startswith("start ")]
    assert out["launches"] == len(starts) == 9, (out["launches"], starts)  # 3 blocks x (base, up, fix): not 12

    results = _results(tmp_path)
    assert set(results) == {"up", "fix"}
    logs = {}
    for name, result in results.items():
        assert len(result["pairs"]) == 3
        a_logs, b_logs = [], []
        for pair in result["pairs"]:
            blocks = {b["arm"]: b for b in pair["blocks"]}
            a_logs.append(result["launches"][blocks["A"]["launch"]]["log"])
            b_logs.append(result["launches"][blocks["B"]["launch"]]["log"])
            assert blocks["A"]["runs"] and blocks["B"]["runs"]
        # within one comparison no launch serves two pairs
        assert len(set(a_logs)) == 3 and len(set(b_logs)) == 3
        logs[name] = (a_logs, b_logs)
        assert set(result["shared"]["with"]) == {"benchmark.up", "benchmark.fix"} - {f"benchmark.{name}"}
    # the baseline's launch of pair i is the same for both; the candidates' are their own
    assert logs["up"][0] == logs["fix"][0]
    assert not set(logs["up"][1]) & set(logs["fix"][1])
    # the baseline's runs of a block are the same measurements in both comparisons
    for i in range(3):
        a_runs = [[r["metrics"]["output_throughput"] for r in res["runs"]
                   if r["index"] in next(b for b in res["pairs"][i]["blocks"] if b["arm"] == "A")["runs"]]
                  for res in results.values()]
        assert a_runs[0] == a_runs[1]

    again = _cli(tmp_path, "plan", "bench.spec", "--detailed-exitcode")
    assert again.returncode == 0, again.stdout  # both recorded: nothing to do


def test_a_comparison_still_undecided_goes_on_alone_after_the_other_is_decided(tmp_path):
    """up (half the baseline's speed) is decided at its first look that can
    decide; fix, at the threshold, is not (with a horizon of 12 pairs that
    look's level is a few in 10,000): its later pairs are blocks of its own,
    both arms launched for each."""
    life = tmp_path / "life.txt"
    (tmp_path / "bench.spec").write_text(_spec(life, (("base", 1.0), ("up", 0.5), ("fix", 1.0)), max_runs=12))
    applied = _cli(tmp_path, "apply", "bench.spec", "--yes", "--json")
    out = json.loads(applied.stdout)
    verdicts = {v["experiment"]: v for v in out["verdicts"] if v.get("assertion") == "faster"}
    assert verdicts["up"]["verdict"] == "fail", applied.stderr[-2000:]
    results = _results(tmp_path)
    up, fix = len(results["up"]["pairs"]), len(results["fix"]["pairs"])
    assert 3 <= up < fix, (up, fix, verdicts)
    starts = [line for line in life.read_text().splitlines() if line.startswith("start ")]
    assert out["launches"] == len(starts) == 3 * up + 2 * (fix - up)  # shared blocks, then base and fix alone
    shared = [results["fix"]["launches"][b["launch"]].get("shared_by")
              for p in results["fix"]["pairs"] for b in p["blocks"] if b["arm"] == "A"]
    assert shared[:up] == [["benchmark.fix", "benchmark.up"]] * up and set(shared[up:]) == {None}, shared


def test_a_shared_comparison_continues_from_its_own_recorded_pairs(tmp_path):
    """Both measured in 3 shared blocks; then `runs` raised to 4: each
    re-apply continues its own recorded pairs (the ones it shared), alone,
    and launches only for the new pair."""
    life = tmp_path / "life.txt"
    speeds = (("base", 1.0), ("up", 0.5), ("fix", 1.0))
    (tmp_path / "bench.spec").write_text(_spec(life, speeds))
    first = json.loads(_cli(tmp_path, "apply", "bench.spec", "--yes", "--json").stdout)
    assert first["launches"] == 9
    kept = _results(tmp_path)["fix"]
    assert len(kept["pairs"]) == 3 and kept["shared"]["leader"] == "benchmark.fix"

    (tmp_path / "bench.spec").write_text(_spec(life, speeds, runs=4, max_runs=4))
    plan = _cli(tmp_path, "plan", "bench.spec")
    assert "benchmark.fix" in plan.stdout and "1 more run needed (3 recorded, 4 wanted)" in plan.stdout, plan.stdout
    assert "shared with" not in plan.stdout and "also serves" not in plan.stdout, plan.stdout
    again = json.loads(_cli(tmp_path, "apply", "bench.spec", "--yes", "--json").stdout)
    assert again["launches"] == 4  # each comparison's pair 4 alone: its baseline and its candidate
    newest = {}
    for path in (tmp_path / ".specdsl").rglob("result.json"):
        doc = json.loads(path.read_text())
        if "pairs" in doc and doc.get("continued"):
            newest[doc["arms"]["B"]] = doc
    doc = newest["fix"]
    assert len(doc["pairs"]) == 4 and doc["continued"] == 3
    assert doc["pairs"][:3] == kept["pairs"]  # the shared pairs, as recorded
