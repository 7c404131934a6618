"""Saved plans: the examples' plans against an empty state are kept in
plans/ and must regenerate byte for byte; plan files round-trip and refuse
hand edits; the plan CLI's exit codes."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from specdsl.cli.main import main
from specdsl.plan.planfile import PlanFileError, dumps, read_plan

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = sorted((ROOT / "plans").glob("*.plan.toml"))


def test_golden_plans_exist_for_examples():
    names = {p.name for p in GOLDEN}
    assert names >= {"kimi-k25-upgrade.plan.toml", "quickstart.plan.toml", "sweep.plan.toml", "vllm-cpu.plan.toml"}
    # every example spec has its golden plan
    specs = {read_plan(p).spec for p in GOLDEN}
    examples = {str(p.relative_to(ROOT)) for p in (ROOT / "examples").glob("*/*.spec") if p.name != "common.spec"}
    assert examples <= specs, examples - specs


@pytest.mark.parametrize("golden", GOLDEN, ids=lambda p: p.name)
def test_golden_plan_regenerates(golden, tmp_path, monkeypatch):
    kept = read_plan(golden)
    monkeypatch.chdir(ROOT)
    out = tmp_path / "fresh.plan.toml"
    code = main(["plan", "--no-refresh", kept.spec, "--state", str(tmp_path / "empty-state"), "-o", str(out)]
                + [f"-var={k}={v}" for k, v in kept.variables])
    assert code == 0
    if os.environ.get("SPECDSL_UPDATE_GOLDEN"):
        golden.write_text(out.read_text())
    assert out.read_text() == golden.read_text(), f"{golden.name} is stale: rerun with SPECDSL_UPDATE_GOLDEN=1 and review"


def test_planfile_round_trip_and_show(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    out = tmp_path / "p.plan.toml"
    assert main(["plan", "--no-refresh", "examples/kimi-k25/upgrade.spec", "--state", str(tmp_path / "s"), "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    plan = read_plan(out)
    assert dumps(plan) == out.read_text()
    assert main(["show", str(out)]) == 0
    shown = capsys.readouterr().out
    assert shown.splitlines()[:-1] == printed.split("\nSaved the plan")[0].splitlines()[:-1]


def test_hand_edited_plan_is_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    out = tmp_path / "p.plan.toml"
    main(["plan", "--no-refresh", "examples/kimi-k25/upgrade.spec", "--state", str(tmp_path / "s"), "-o", str(out)])
    out.write_text(out.read_text().replace('action = "+"', 'action = "="', 1))
    with pytest.raises(PlanFileError, match="changed after it was written"):
        read_plan(out)
    assert main(["show", str(out)]) == 1
    assert "changed after it was written" in capsys.readouterr().err
    out.write_text("format_version = 99\n")
    with pytest.raises(PlanFileError, match="newer specdsl"):
        read_plan(out)
    out.write_text("not toml [")
    with pytest.raises(PlanFileError, match="not a valid plan file"):
        read_plan(out)


def test_detailed_exitcode_and_json(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    args = ["plan", "--no-refresh", "examples/kimi-k25/upgrade.spec", "--state", str(tmp_path / "s")]
    assert main(args + ["--detailed-exitcode"]) == 2
    capsys.readouterr()
    assert main(args + ["--json"]) == 0
    import json

    doc = json.loads(capsys.readouterr().out)
    assert doc["format_version"] == 1 and doc["has_changes"] is True
    assert {c["action"] for c in doc["changes"]} >= {"+", ">", "?", "!", "-"}
    bad = tmp_path / "bad.spec"
    bad.write_text("experiment \"x\" {}\n")
    assert main(["plan", "--no-refresh", str(bad), "--detailed-exitcode"]) == 1


def test_plan_contacts_no_host_and_prints_reasons(tmp_path):
    # a fresh process, as a user runs it: the example names an ssh host that
    # must not be contacted with --no-refresh
    proc = subprocess.run(
        [sys.executable, "-m", "specdsl.cli.main", "plan", "--no-refresh", "examples/kimi-k25/upgrade.spec", "--state", str(tmp_path / "s")],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "+ provision.cu130" in proc.stdout and "(new environment: python 3.12, cuda 13.0, 4 packages)" in proc.stdout
    assert proc.stdout.rstrip().endswith("reused.")


def test_graph_dot(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    assert main(["graph", "--no-refresh", "examples/kimi-k25/upgrade.spec", "--state", str(tmp_path / "s")]) == 0
    dot = capsys.readouterr().out
    assert dot.startswith("digraph specdsl {")
    assert '"provision.cu130" -> "benchmark.upgrade";' in dot
    assert '"benchmark.backends[backend=triton]" -> "teardown.kimi/backends[backend=triton]" [style=dotted];' in dot  # an ordering edge
