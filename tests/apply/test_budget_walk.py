"""A budget through `specdsl apply` against the decision double (a stdlib
streaming server whose speed is drawn per launch;
tests/apply/decision_double.py), its runs a command that reads each
launch's speed (tests/apply/factor_client.py): a comparison at its threshold wants more
pairs than `max_launches` allows, stops at the budget with its checks
INCONCLUSIVE (exit 4) and says what a decision would still cost; raising
the budget continues from the recorded pairs, none measured again. About
15 s on 2 cores."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOUBLE = Path(__file__).with_name("decision_double.py")
CLIENT = Path(__file__).with_name("factor_client.py")

pytestmark = pytest.mark.e2e


def _server(name: str, speed: float, life: Path) -> str:
    argv = [sys.executable, str(DOUBLE), "{port}", "--life", str(life), "--speed", f"{speed:g}", "--seed", "5",
            "--launch-sd", "0.03", "--noise", "0.01", "--ttft-ms", "20", "--itl-ms", "20"]
    items = ", ".join(json.dumps(a) for a in argv)
    return f'server "{name}" {{\n  engine = "command"\n  model = "m"\n  command = [{items}]\n  ready_timeout = 30s\n}}\n'


def _spec(life: Path, max_launches: int) -> str:
    # the same speed both arms, asserted 1% faster: no handful of pairs decides it. The
    # runs read each launch's factor (tests/apply/factor_client.py), not a clock: a busy
    # machine changes nothing the verdict reads
    client = ", ".join(json.dumps(a) for a in (sys.executable, str(CLIENT), "{base_url}"))
    return ('stack "sys" {\n  python = "system"\n}\n'
            f'workload "w" {{\n  command = [{client}]\n'
            '  metric "output_throughput" { json = "output_throughput" }\n'
            f'  runs = 2\n  max_runs = 20\n  block = 1\n  timeout = 30s\n'
            f'  max_launches = {max_launches}\n  launch_estimate = 2s\n}}\n'
            + _server("base", 1.0, life) + _server("cand", 1.0, life)
            + 'experiment "base" {\n  stack = stack.sys\n  server = server.base\n  workload = workload.w\n}\n'
              'experiment "cand" {\n  stack = stack.sys\n  server = server.cand\n  workload = workload.w\n'
              '  baseline = experiment.base\n'
              '  assert "faster" { output_throughput >= baseline.output_throughput * 1.01 }\n}\n')


def _cli(folder: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), SPECDSL_ENV_ROOT=str(folder / "envs"))
    return subprocess.run([sys.executable, "-m", "specdsl.cli.main", *args], cwd=folder, capture_output=True,
                          text=True, env=env, timeout=timeout)


def _starts(life: Path) -> int:
    return sum(1 for line in life.read_text().splitlines() if line.startswith("start "))


def _result(folder: Path) -> dict:
    docs = [json.loads(p.read_text()) for p in (folder / ".specdsl").rglob("result.json")]
    return max((d for d in docs if "pairs" in d), key=lambda d: len(d["pairs"]))


BUDGET_LINE = re.compile(r"budget reached: (\d+) of (\d+) launches; a decision at this margin would still cost "
                         r"(?:about|more than) (\d+) more pairs? \((\d+) launches, ~[0-9.]+ (?:s|min|h)\)")


def test_apply_stops_at_the_budget_and_continues_when_it_is_raised(tmp_path):
    life = tmp_path / "life.txt"
    spec = tmp_path / "bench.spec"
    spec.write_text(_spec(life, 4))

    plan = _cli(tmp_path, "plan", "bench.spec", "--no-refresh")
    assert plan.returncode == 0, plan.stderr
    # on an empty state, from the stated guess: 20 pairs at 2 s a launch, of which the budget allows 2
    assert re.search(r"benchmark\.cand\s+at most 20 pairs, 40 launches, ~80 s; a launch ~2 s \(stated: "
                     r"launch_estimate of workload w\); exceeds max_launches 4: 2 of 20 pairs fit", plan.stdout), plan.stdout

    applied = _cli(tmp_path, "apply", "bench.spec", "--yes")
    assert applied.returncode == 4, (applied.stdout[-3000:], applied.stderr[-3000:])
    m = BUDGET_LINE.search(applied.stdout)
    assert m is not None, [line for line in applied.stdout.splitlines() if "faster" in line or "budget" in line]
    assert m.group(1, 2) == ("4", "4") and int(m.group(4)) == 2 * int(m.group(3))
    assert _starts(life) == 4  # never past the budget
    first = _result(tmp_path)
    assert len(first["pairs"]) == 2 and first["budget"]["reached"] == "4 of 4 launches"
    assert all(p["wall_s"] > 0 for p in first["pairs"])

    # the next plan: nothing more within this budget; measured launches now estimate the cost
    again = _cli(tmp_path, "plan", "bench.spec", "--no-refresh", "--json")
    doc = json.loads(again.stdout)
    assert not [c for c in doc["changes"] if c["addr"] == "benchmark.cand" and c["action"] == ">"], again.stdout
    advice = doc["undecided"][0]["advice"]
    assert advice.startswith("its budget (max_launches 4 of workload w) is reached at 2 pairs: raise it"), advice
    assert "allows it: apply again" not in advice

    spec.write_text(_spec(life, 8))  # raised: 2 more pairs, the recorded 2 kept
    planned = _cli(tmp_path, "plan", "bench.spec", "--no-refresh", "--json")
    doc = json.loads(planned.stdout)
    change = next(c for c in doc["changes"] if c["addr"] == "benchmark.cand")
    # its first look is at 5 pairs: the raised budget allows 4 of them
    assert change["action"] == ">" and change["reason"].startswith(
        "2 more runs needed (2 recorded, 4 wanted within max_launches 8)"), change["reason"]
    assert change["budget"]["pairs_done"] == 2 and change["budget"]["pairs_fit"] == 4, change["budget"]
    assert change["budget"]["launch_estimate"]["candidate"]["source"] == "recorded", change["budget"]

    applied = _cli(tmp_path, "apply", "bench.spec", "--yes")
    assert applied.returncode == 4, (applied.stdout[-3000:], applied.stderr[-3000:])
    m = BUDGET_LINE.search(applied.stdout)
    assert m is not None and m.group(1, 2) == ("8", "8"), applied.stdout[-3000:]
    assert _starts(life) == 8  # 4 more launches: the first 2 pairs were not measured again
    second = _result(tmp_path)
    assert len(second["pairs"]) == 4 and second["continued"] == 2
    assert second["pairs"][:2] == first["pairs"]


def test_the_apply_wide_budget_caps_every_comparison(tmp_path):
    """--max-launches 4 on the command line: two pairs, whatever the workload allows."""
    life = tmp_path / "life.txt"
    (tmp_path / "bench.spec").write_text(_spec(life, 40))
    plan = _cli(tmp_path, "plan", "bench.spec", "--no-refresh", "--max-launches", "4", "--json")
    assert json.loads(plan.stdout)["budget"]["worst"]["pairs_fit"] == 2, plan.stdout
    applied = _cli(tmp_path, "apply", "bench.spec", "--yes", "--max-launches", "4")
    assert applied.returncode == 4, (applied.stdout[-3000:], applied.stderr[-3000:])
    assert re.search(r"INCONCLUSIVE.*budget reached: 4 of 4 launches \(the apply's --max-launches / --max-time\); "
                     r"a decision at this margin would still cost", applied.stdout), applied.stdout[-3000:]
    assert _starts(life) == 4
    bad = _cli(tmp_path, "plan", "bench.spec", "--max-time", "90")
    assert bad.returncode == 1 and "--max-time: '90' is not a duration" in bad.stderr, bad.stderr
