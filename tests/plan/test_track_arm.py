"""A track baseline rebuilt from its stack lock (specdsl/graph/track_arm.py):
the arm's stack is pinned to what the track resolved to, its server is the
one the lock records, a lock that cannot be used is a diagnostic that says
what to do, and `baseline_mode` is checked where it is written."""

from __future__ import annotations

from pathlib import Path

import tomli_w

from specdsl.graph.build import build_graph
from specdsl.plan.diff import make_plan
from specdsl.plan.model import Refresh
from specdsl.resolve.resolver import resolve_file

SPEC = '''
stack "s" {
  python   = "3.11"
  packages = ["vllm>=0.11", "./local-plugin"]
}
server "new" {
  engine = "vllm"
  model  = "m"
  args   = { max-num-seqs = 8 }
  env    = { HF_TOKEN = "hf_candidatesecret123" }
}
workload "w" { runs = 3 }
experiment "up" {
  stack    = stack.s
  server   = server.new
  workload = workload.w
  baseline = track.prod
  assert "faster" { output_throughput >= baseline.output_throughput * 1.03 }
}
'''

LOCK = {
    "format_version": 1, "track": "prod", "experiment": "old", "run": "r1", "promoted": "2026-11-30T10:00:00Z",
    "stack": {"python": "3.11", "packages": ["vllm>=0.10", "./local-plugin"], "index": [], "find_links": [],
              "overrides": [], "exclude": [], "env": {}, "installer": "uv"},
    "server": {"engine": "vllm", "model": "m", "args": {"max-num-seqs": 4, "enforce-eager": True},
               "env": {"HF_TOKEN": "(sensitive)"}, "argv": ["vllm", "serve"]},
    "resolved": {"python_version": "3.11.9", "packages": {"vllm": "0.10.2", "torch": "2.8.0", "local-plugin": "0.1"}},
}


def _graph(tmp_path: Path, text: str = SPEC, lock: dict | None = LOCK):
    spec = tmp_path / "x.spec"
    spec.write_text(text)
    if lock is not None:
        (tmp_path / "stacks").mkdir(exist_ok=True)
        (tmp_path / "stacks" / "prod.lock.toml").write_text(tomli_w.dumps(lock))
    resolved = resolve_file(spec)
    assert resolved.ok, [d.summary for d in resolved.diags]
    return build_graph(resolved.config, spec_dir=tmp_path)


def test_the_arm_is_the_locked_stack_pinned_and_the_locked_server(tmp_path):
    graph = _graph(tmp_path)
    assert not graph.diags, graph.diags
    bench = graph.steps["benchmark.up"]
    arm = bench.payload["paired"]
    assert arm.name == "track.prod" and arm.workload == bench.payload["experiment"].workload
    # every resolved version forced (uv overrides), except a package installed from a path
    assert arm.stack.packages == ("vllm>=0.10", "./local-plugin")
    assert arm.stack.overrides == ("torch==2.8.0", "vllm==0.10.2")
    # the server as it ran; a value the lock hides is the candidate's
    assert dict(arm.server.args) == {"max-num-seqs": 4, "enforce-eager": True}
    assert dict(arm.server.env) == {"HF_TOKEN": "hf_candidatesecret123"}
    assert "provision.track.prod" in bench.deps and "launch.new" not in graph.steps
    plan = make_plan(graph, None, Refresh(), spec="x.spec", spec_digest="d")
    assert "paired with track prod rebuilt from stacks/prod.lock.toml (two fresh launches a pair): 2 pairs to the first look, 4 launches, 12 runs" in plan.change("benchmark.up").reason


def test_pip_pins_the_declared_requirements(tmp_path):
    lock = dict(LOCK, stack=dict(LOCK["stack"], installer="pip"))
    arm = _graph(tmp_path, lock=lock).steps["benchmark.up"].payload["paired"]
    assert arm.stack.packages == ("vllm==0.10.2", "./local-plugin") and arm.stack.overrides == ()


def test_recorded_mode_reads_the_recorded_numbers_and_the_plan_says_so(tmp_path):
    graph = _graph(tmp_path, SPEC.replace("baseline = track.prod", 'baseline = track.prod\n  baseline_mode = "recorded"'))
    assert "paired" not in graph.steps["benchmark.up"].payload and "launch.new" in graph.steps
    plan = make_plan(graph, None, Refresh(), spec="x.spec", spec_digest="d")
    assert 'track prod\'s recorded result (baseline_mode = "recorded": drift not controlled)' in plan.change("check.up.faster").reason


def test_a_lock_that_cannot_be_used_is_a_diagnostic_that_says_what_to_do(tmp_path):
    (tmp_path / "stacks").mkdir()
    (tmp_path / "stacks" / "prod.lock.toml").write_text("this is [not toml")
    [diag] = _graph(tmp_path, lock=None).diags
    assert diag.summary == "Track `prod`'s stack lock is unreadable" and 'baseline_mode = "recorded"' in diag.detail
    hidden = _graph(tmp_path, SPEC.replace('  env    = { HF_TOKEN = "hf_candidatesecret123" }\n', ""), LOCK).diags
    assert [d.summary for d in hidden] == ["Track `prod`'s stack lock hides `server.env.HF_TOKEN`"]


def test_no_lock_is_no_arm_and_the_check_knows_why(tmp_path):
    graph = _graph(tmp_path, lock=None)
    assert not graph.diags and "paired" not in graph.steps["benchmark.up"].payload
    why = graph.steps["check.up.faster"].payload["baseline_missing"]
    assert "track prod has no stack lock to rebuild its baseline from (stacks/prod.lock.toml is missing" in why


def test_baseline_mode_is_checked_where_it_is_written(tmp_path):
    spec = tmp_path / "x.spec"
    spec.write_text(SPEC.replace("baseline = track.prod", 'baseline = track.prod\n  baseline_mode = "record"'))
    [diag] = resolve_file(spec).diags
    assert diag.summary == '`baseline_mode` is "record"' and (diag.span.line, diag.span.col) == (18, 19)
    assert "recorded" in diag.detail and "paired" in diag.detail
    base = 'experiment "base" {\n  stack = stack.s\n  server = server.new\n  workload = workload.w\n}\n'
    spec.write_text(SPEC.replace("baseline = track.prod", 'baseline = experiment.base\n  baseline_mode = "recorded"') + base)
    assert "`baseline_mode` applies to a track baseline" in [d.summary for d in resolve_file(spec).diags]
    spec.write_text(SPEC.replace("baseline = track.prod", 'baseline = track.prod\n  baseline_mode = "paired"'))
    assert resolve_file(spec).ok
