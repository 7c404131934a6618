"""Plans: actions, reasons, sharing, determinism, no-change re-plans."""

import os
import subprocess
import sys

from specdsl.cli.main import main
from specdsl.plan.model import Action
from specdsl.plan.render import render_text
from specdsl.state import write_state

from plan_helpers import ROOT, SPEC, applied_state, plan_for, resolve_text


def actions(plan):
    return {c.addr: c.action for c in plan.changes}


def test_empty_state_plans_everything(spec_cfg):
    graph, plan = plan_for(spec_cfg)
    acts = actions(plan)
    assert acts["provision.s"] is Action.CREATE  # one environment shared by both experiments
    assert [a for a in acts if a.startswith("provision.")] == ["provision.s"]
    assert acts["launch.tiny"] is Action.CREATE and "launch.tiny/cand" not in acts  # the pairs start their own servers
    assert acts["benchmark.base"] is Action.RUN and acts["benchmark.cand"] is Action.RUN
    assert "paired with base (two fresh launches a pair)" in plan.change("benchmark.cand").reason
    assert acts["check.cand.faster"] is Action.CHECK
    assert acts["promote.cand"] is Action.PROMOTE
    assert acts["teardown.tiny"] is Action.DESTROY
    assert acts["preflight.local"] is Action.RUN
    assert plan.has_changes
    # the candidate's benchmark holds both arms: its checks read it alone
    assert graph.steps["benchmark.cand"].payload["paired"].name == "base"
    assert set(graph.steps["check.cand.faster"].deps) == {"benchmark.cand"}


def test_applied_state_gives_no_changes(spec_cfg):
    graph, _ = plan_for(spec_cfg)
    state = applied_state(graph)
    state = state.with_promotion("prod", state.result(graph.steps["benchmark.cand"].identity).id, ["faster"])
    _, plan = plan_for(spec_cfg, state)
    assert not plan.has_changes, render_text(plan)
    assert actions(plan)["launch.tiny"] is Action.REUSE
    assert "No changes." in render_text(plan)


def test_changed_server_arg_replaces_launch_with_reason(tmp_path, spec_cfg):
    graph, _ = plan_for(spec_cfg)
    state = applied_state(graph)
    changed = resolve_text(tmp_path, SPEC.replace('attention-backend = "flashinfer"', 'attention-backend = "fa3"'), "y.spec")
    _, plan = plan_for(changed, state)
    bench = plan.change("benchmark.cand")  # paired: the candidate arm's server is part of it
    assert bench.action is Action.RUN
    assert bench.reason.startswith('arms.candidate.server.args.attention-backend: "flashinfer" -> "fa3"'), bench.reason
    assert plan.change("benchmark.base").action is Action.REUSE
    assert plan.change("launch.tiny").action is Action.REUSE
    assert plan.change("provision.s").action is Action.REUSE


def test_changed_package_replaces_provision_and_downstream_only(tmp_path, spec_cfg):
    graph, _ = plan_for(spec_cfg)
    state = applied_state(graph)
    changed = resolve_text(tmp_path, SPEC.replace("transformers==5.19.0", "transformers==5.20.0"), "y.spec")
    _, plan = plan_for(changed, state)
    prov = plan.change("provision.s")
    assert prov.action is Action.REPLACE
    assert prov.reason == 'packages: +"transformers==5.20.0" -"transformers==5.19.0"'
    assert plan.change("launch.tiny").action is Action.REPLACE
    assert plan.change("benchmark.base").action is Action.RUN


def test_rerun_forces_benchmarks(spec_cfg):
    graph, _ = plan_for(spec_cfg)
    state = applied_state(graph)
    _, plan = plan_for(spec_cfg, state, rerun=True)
    assert plan.change("benchmark.base").action is Action.RUN
    assert plan.change("benchmark.base").reason.startswith("rerun requested")
    assert plan.change("launch.tiny").action is Action.CREATE


def test_target_limits_to_experiment_and_upstream(spec_cfg):
    _, plan = plan_for(spec_cfg, targets=("base",))
    addrs = {c.addr for c in plan.changes}
    assert "benchmark.base" in addrs and "provision.s" in addrs and "teardown.tiny" in addrs
    assert "benchmark.cand" not in addrs and "promote.cand" not in addrs


def test_dead_server_is_relaunched(spec_cfg):
    graph, _ = plan_for(spec_cfg)
    state = applied_state(graph, keep_servers=True)
    # refresh says nothing answers: benchmarks cached, so nothing is needed...
    from specdsl.plan.model import Refresh

    _, plan = plan_for(spec_cfg, state, refresh=Refresh(frozenset(e.identity for e in state.environments), frozenset(), ("server gone",)))
    assert plan.change("launch.tiny").action is Action.REUSE
    assert plan.drift == ("server gone",)
    # ...but a rerun needs it, and says the recorded server is not running
    _, plan = plan_for(spec_cfg, state, refresh=Refresh(frozenset(e.identity for e in state.environments), frozenset()), rerun=True)
    assert plan.change("launch.tiny").action is Action.CREATE
    assert "not running" in plan.change("launch.tiny").reason


def _plan_in_process(args: list[str], seed: str, fmt: list[str]) -> bytes:
    """`specdsl plan --no-refresh ARGS` in a fresh process under PYTHONHASHSEED=seed: its stdout."""
    env = dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-m", "specdsl.cli.main", "plan", "--no-refresh", *fmt, *args],
                          cwd=ROOT, env=env, capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr.decode()
    return proc.stdout


def test_plan_output_is_the_same_bytes_under_other_hash_seeds(tmp_path, monkeypatch, capsys):
    """Two processes with different PYTHONHASHSEEDs (and this one) print the
    same JSON, byte for byte: against an empty state (the examples, one with
    a matrix) and against recorded state with changes (fields, reasons)."""
    spec = tmp_path / "y.spec"
    spec.write_text(SPEC)
    graph, _ = plan_for(resolve_text(tmp_path, SPEC, "y.spec"))
    write_state(tmp_path / "state", applied_state(graph))
    spec.write_text(SPEC.replace('attention-backend = "flashinfer"', 'attention-backend = "fa3"'))
    empty = str(tmp_path / "empty")
    cases = [
        [str(spec), "--state", str(tmp_path / "state")],
        ["examples/kimi-k25/upgrade.spec", "--state", empty],
        ["examples/sweep/sweep.spec", "--state", empty],
    ]
    monkeypatch.chdir(ROOT)
    for args in cases:
        a, b = (_plan_in_process(args, seed, ["--json"]) for seed in ("0", "4242"))
        assert a == b, args
        capsys.readouterr()
        assert main(["plan", "--no-refresh", "--json", *args]) == 0
        assert capsys.readouterr().out.encode() == a, args
    # and the text view
    a, b = (_plan_in_process(cases[0], seed, []) for seed in ("0", "4242"))
    assert a == b and b"> benchmark.cand" in a


def test_identity_ignores_names_and_arg_order(tmp_path):
    a = resolve_text(tmp_path, SPEC, "a.spec")
    b = resolve_text(tmp_path, SPEC.replace('stack "s"', 'stack "renamed"').replace("stack.s", "stack.renamed"), "b.spec")
    ga, _ = plan_for(a)
    gb, _ = plan_for(b)
    assert ga.steps["provision.s"].identity == gb.steps["provision.renamed"].identity
    assert ga.steps["benchmark.cand"].identity == gb.steps["benchmark.cand"].identity
