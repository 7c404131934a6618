"""diagnose, diff, bisect and calibrate find what apply recorded (issue 26):
they build the step graph as apply does, from the spec's folder, so a
benchmark whose baseline is a track rebuilt from `stacks/TRACK.lock.toml`
and a workload whose dataset is a file beside the spec have the identities
apply recorded, wherever the command is run from. Real apply, real state,
a stdlib streaming server double (tests/apply/decision_double.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import tomli_w

from specdsl.cli.main import main
from specdsl.state import load_state

DOUBLE = str(Path(__file__).parents[1] / "apply" / "decision_double.py")


def _command(life: Path) -> list[str]:
    return [sys.executable, DOUBLE, "{port}", "--life", str(life), "--ttft-ms", "1", "--itl-ms", "1"]


def _server(name: str, life: Path) -> str:
    items = ", ".join(json.dumps(a) for a in _command(life))
    return f'server "{name}" {{\n  engine = "command"\n  model = "m"\n  command = [{items}]\n  ready_timeout = 30s\n}}\n'


def _spec(life: Path) -> str:
    # base and cand: an experiment baseline; up: track t's promoted
    # configuration rebuilt from its lock and measured beside it; every
    # workload reads prompts.jsonl, a file beside the spec
    return ('host "a" {}\nstack "sys" {\n  python = "system"\n}\n'
            + _server("base", life) + _server("cand", life) + _server("up", life) + '''
workload "w" {
  dataset  = "prompts.jsonl"
  requests = 2
  runs     = 2
  max_runs = 2
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
  assert "answers" { output_throughput >= baseline.output_throughput * 0.01 }
}
experiment "up" {
  host     = host.a
  stack    = stack.sys
  server   = server.up
  workload = workload.w
  baseline = track.t
  assert "answers" { output_throughput >= baseline.output_throughput * 0.01 }
}
''')


def _track_lock(life: Path) -> dict:
    """What a promotion of track t writes to stacks/t.lock.toml (the form
    graph/track_arm.py reads): stack sys and the base server, as promoted."""
    return {
        "format_version": 1, "track": "t", "experiment": "old", "run": "r1", "promoted": "2026-12-01T10:00:00Z",
        "stack": {"python": "system", "packages": [], "index": [], "find_links": [], "overrides": [], "exclude": [],
                  "env": {}, "installer": "uv"},
        "server": {"engine": "command", "model": "m", "args": {}, "env": {}, "command": _command(life)},
        "resolved": {"packages": {}},
    }


@pytest.fixture
def specs(tmp_path, monkeypatch, system_env_root):
    """A spec in specs/, the current directory elsewhere/ beside it: the
    spec is named by a relative path, as a user in another folder names it."""
    monkeypatch.setenv("SPECDSL_ENV_ROOT", str(system_env_root))
    specs, elsewhere = tmp_path / "specs", tmp_path / "elsewhere"
    specs.mkdir()
    elsewhere.mkdir()
    life = tmp_path / "life.txt"
    (specs / "x.spec").write_text(_spec(life))
    (specs / "prompts.jsonl").write_text('{"prompt": "a b c"}\n{"prompt": "d e f"}\n')
    (specs / "stacks").mkdir()
    (specs / "stacks" / "t.lock.toml").write_text(tomli_w.dumps(_track_lock(life)))
    monkeypatch.chdir(elsewhere)
    return specs


def test_diagnose_diff_and_bisect_find_what_apply_recorded(specs, capsys):
    # one apply (run from elsewhere) records cand against base and up against track t's rebuilt arm
    code = main(["apply", "../specs/x.spec", "--yes"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "paired with track t rebuilt from stacks/t.lock.toml" in out  # the track's arm was measured
    runs = len(load_state(specs / ".specdsl").runs)
    for name, baseline in (("cand", "base"), ("up", "track.t")):
        assert main(["diagnose", name, "../specs/x.spec"]) == 0, capsys.readouterr().err
        first = capsys.readouterr().out.splitlines()[0]
        assert first.startswith(f"{name} against {baseline}, the two arms of paired run "), first
        assert main(["diff", baseline, name, "../specs/x.spec", "--json"]) == 0, capsys.readouterr().err
        assert json.loads(capsys.readouterr().out)["candidate"]["name"] == name
        # bisect reads the verdicts apply recorded: none failed, so nothing to run
        assert main(["bisect", name, "../specs/x.spec", "--yes"]) == 0, capsys.readouterr().err
        assert f"{name} did not fail (answers recorded without a FAIL): nothing to bisect" in capsys.readouterr().out
    assert len(load_state(specs / ".specdsl").runs) == runs  # nothing more was run


def test_calibrate_records_the_identity_of_the_spec_folder(specs, capsys):
    # the A/A benchmark's identity holds the digest of the dataset file
    # beside the spec, whatever the current directory (elsewhere/ here)
    from specdsl.operations.calibrate import aa_config
    from specdsl.graph.build import build_graph
    from specdsl.resolve.resolver import resolve_file

    assert main(["calibrate", "cand", "../specs/x.spec", "--pairs", "2", "--yes"]) == 0, capsys.readouterr().err
    [record] = [r for r in load_state(specs / ".specdsl").runs if r.step == "calibrate.cand"]
    cfg = resolve_file(specs / "x.spec").config
    aa, cand = aa_config(cfg, cfg.experiment("cand"), 2)
    bench = build_graph(aa, spec_dir=specs).steps[f"benchmark.{cand}"]
    assert "dataset_digest" in bench.content and record.identity == bench.identity
