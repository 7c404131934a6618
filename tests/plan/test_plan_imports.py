"""`specdsl plan` never imports the load generator, aiohttp or scipy.

A plan checks each workload's dataset (specdsl.bench.datasets) and lays out
the looks of a paired comparison (plan.looks -> verdict): neither needs the
load generator (aiohttp and its SSL context, ~0.6 s) or scipy (~0.4 s), which
once made half of a 1,000-cell plan's CPU time (benchmarks/bench_plan.py).
The plan runs in a fresh interpreter, so nothing another test imported
counts.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "examples" / "quickstart" / "quickstart.spec"  # paired, a benchmark to run
HEAVY = ("specdsl.bench.loadgen", "specdsl.bench.client", "aiohttp", "scipy", "numpy", "specdsl.apply.api", "specdsl.apply.steps")
# what shows that the code paths that used to pull them in did run
RAN = ("specdsl.bench.datasets", "specdsl.plan.looks", "specdsl.verdict.looks")

CODE = """
import json, sys
from specdsl.cli.main import main
rc = main(sys.argv[1:])
print(json.dumps({"rc": rc, "modules": sorted(sys.modules)}))
"""


def test_plan_imports_neither_the_load_generator_nor_scipy(tmp_path):
    argv = [sys.executable, "-c", CODE, "plan", "--no-refresh", str(SPEC), "--state", str(tmp_path / "state")]
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    plan_text, _, last = proc.stdout.rstrip().rpartition("\n")
    doc = json.loads(last)
    assert doc["rc"] == 0, plan_text + proc.stderr
    assert "to run" in plan_text, plan_text  # benchmarks to run: their datasets were checked
    modules = set(doc["modules"])
    assert not [m for m in RAN if m not in modules], "the plan did not take the path this test guards"
    assert not [m for m in HEAVY if m in modules], [m for m in HEAVY if m in modules]
