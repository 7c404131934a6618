"""Promotion you can audit, walked for real (stdlib server doubles, a real
uv environment over this interpreter, real state; see test_walk.py): a
promotion happens once, when its verdicts are new; a no-op apply writes
nothing (no state write, no lock rewrite); candidates of one track that
pass together are held, and the user's choice stands; an apply after a
failed candidate converges; `specdsl history` lists what was promoted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from specdsl.apply import Reason, Status, apply_plan
from specdsl.apply.refresh import refresh
from specdsl.graph.build import build_graph
from specdsl.hosts import HostRegistry
from specdsl.plan.diff import make_plan
from specdsl.plan.model import Action
from specdsl.plan.render import render_text
from specdsl.resolve.resolver import resolve_file
from specdsl.state import load_state, locked

from test_walk import COMMON, TRACK_PAIRED, failures, outcome, server, workload

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def env_root(tmp_path_factory):
    return tmp_path_factory.mktemp("envs")


def spec_text(life: Path, candidates: dict[str, float], base: float = 50, track: str = "t") -> str:
    """A baseline at `base` tps and one candidate per name at its speed,
    each asserting it is 1.5 times faster and promoting `track`."""
    text = COMMON + server("base", base, life) + workload(runs=1) + '''
experiment "base" {
  host     = host.a
  stack    = stack.sys
  server   = server.base
  workload = workload.w
}
'''
    for name, speed in candidates.items():
        text += server(name, speed, life) + f'''
experiment "{name}" {{
  host     = host.a
  stack    = stack.sys
  server   = server.{name}
  workload = workload.w
  baseline = experiment.base
  assert "faster" {{ tps >= baseline.tps * 1.5 }}
  assert "answers" {{ tps > 0 }}
  promote  = "{track}"
}}
'''
    return text


def plan_spec(folder: Path, text: str, env_root: Path, targets=()):
    spec = folder / "walk.spec"
    spec.write_text(text)
    resolved = resolve_file(spec)
    assert resolved.ok, [d.summary for d in resolved.diags]
    cfg = resolved.config
    graph = build_graph(cfg, spec_dir=folder)
    state_dir = folder / ".specdsl"
    state = load_state(state_dir)
    registry = HostRegistry(env_root=env_root)
    wanted = {st.identity: st.payload["host"] for st in graph.steps.values() if st.kind == "provision"}
    fresh = refresh(state, registry, {h.name: h for h in cfg.hosts}, wanted)
    plan = make_plan(graph, state, fresh, spec=str(spec), spec_digest="d", targets=tuple(targets))
    return graph, plan, state, registry


def apply_spec(folder: Path, text: str, env_root: Path, targets=()):
    graph, plan, state, registry = plan_spec(folder, text, env_root, targets)
    state_dir = folder / ".specdsl"
    with locked(state_dir, "apply") as lock:
        result = apply_plan(plan, graph, state_dir=state_dir, state=state, lock=lock, spec_dir=folder, registry=registry)
    return plan, result, load_state(state_dir)


def replan(folder: Path, text: str, env_root: Path, targets=()):
    return plan_spec(folder, text, env_root, targets)[1]


def lock_file(folder: Path, track: str = "t") -> Path:
    return folder / "stacks" / f"{track}.lock.toml"


def test_a_promotion_happens_once_and_a_noop_apply_writes_nothing(tmp_path, env_root):
    text = spec_text(tmp_path / "life.txt", {"cand": 100})
    _, first, state = apply_spec(tmp_path, text, env_root)
    assert first.exit_code() == 0, failures(first)
    assert outcome(first, "promote.cand").status is Status.COMPLETED
    [p] = state.promotions
    assert (p.track, p.experiment, p.checks) == ("t", "cand", ("faster", "answers"))
    assert [state.run(v).step for v in p.verdicts] == ["check.cand.faster", "check.cand.answers"]
    assert all(state.run(v).verdict.status == "pass" for v in p.verdicts)
    assert p.lock == "../stacks/t.lock.toml" and (tmp_path / ".specdsl" / p.lock).resolve() == lock_file(tmp_path).resolve()
    lock = lock_file(tmp_path)
    content, mtime = lock.read_bytes(), lock.stat().st_mtime_ns
    state_bytes = (tmp_path / ".specdsl" / "state.toml").read_bytes()

    plan = replan(tmp_path, text, env_root)
    assert not plan.has_changes, render_text(plan)
    assert plan.change("promote.cand").reason.startswith("track t already has this result")
    _, again, state2 = apply_spec(tmp_path, text, env_root)
    assert again.exit_code() == 0 and again.launches == 0
    assert outcome(again, "promote.cand").status is Status.REUSED
    assert state2.serial == state.serial and len(state2.promotions) == 1
    assert (tmp_path / ".specdsl" / "state.toml").read_bytes() == state_bytes
    assert lock.read_bytes() == content and lock.stat().st_mtime_ns == mtime


def test_two_candidates_that_pass_together_are_held_and_the_choice_stays_with_the_user(tmp_path, env_root):
    text = spec_text(tmp_path / "life.txt", {"cand": 100, "fix": 120})
    plan, first, state = apply_spec(tmp_path, text, env_root)
    assert [plan.change(a).action for a in ("promote.cand", "promote.fix")] == [Action.PROMOTE] * 2
    assert first.exit_code() == 0, failures(first)
    for addr in ("promote.cand", "promote.fix"):
        o = outcome(first, addr)
        assert (o.status, o.reason) == (Status.SKIPPED, Reason.SEVERAL_PASSED), o
        assert o.detail == "not promoted: cand, fix passed for track t"
    [warning] = [w for w in first.warnings if w.startswith("track t:")]
    assert "cand, fix passed; none was promoted" in warning and "--target NAME" in warning
    assert state.baseline("t") is None and not state.promotions and not lock_file(tmp_path).exists()

    # held on recorded verdicts: nothing to do, and a no-op apply says so again and writes nothing
    plan = replan(tmp_path, text, env_root)
    assert not plan.has_changes, render_text(plan)
    assert plan.change("promote.fix").reason == "held: cand, fix passed for track t; promote one with --target NAME"
    _, again, state2 = apply_spec(tmp_path, text, env_root)
    assert state2.serial == state.serial and again.launches == 0
    assert any(w.startswith("track t: cand, fix passed") for w in again.warnings)

    # the user chooses fix: planned alone, it is promoted
    _, chosen, state3 = apply_spec(tmp_path, text, env_root, targets=("fix",))
    assert outcome(chosen, "promote.fix").status is Status.COMPLETED, outcome(chosen, "promote.fix")
    assert state3.baseline("t").experiment == "fix"
    # and the choice stands: a full plan has nothing to do
    plan = replan(tmp_path, text, env_root)
    assert not plan.has_changes, render_text(plan)
    assert plan.change("promote.cand").reason.startswith("not promoted: track t went to fix")


def test_after_a_failed_candidate_its_fix_is_promoted_and_the_apply_converges(tmp_path, env_root):
    life = tmp_path / "life.txt"
    # the upgrade fails its check
    upgrade = spec_text(life, {"cand": 60})
    _, first, state = apply_spec(tmp_path, upgrade, env_root)
    assert first.exit_code() == 3, failures(first)
    o = outcome(first, "promote.cand")
    assert (o.status, o.reason) == (Status.SKIPPED, Reason.CHECK_NOT_PASSED)
    plan = replan(tmp_path, upgrade, env_root)
    assert not plan.has_changes, render_text(plan)  # the failed promotion is not left pending
    assert plan.change("promote.cand").reason.startswith("not promoted: check.cand.faster failed (run ")

    # its fix, beside it, promoting the same track: exactly one passes
    both = spec_text(life, {"cand": 60, "fix": 100})
    _, second, state = apply_spec(tmp_path, both, env_root)
    assert outcome(second, "promote.fix").status is Status.COMPLETED, failures(second)
    assert outcome(second, "promote.cand").status is Status.REUSED
    assert state.baseline("t").experiment == "fix"
    assert not replan(tmp_path, both, env_root).has_changes


def test_cli_plan_exits_0_after_apply_and_history_lists_promotions(tmp_path, env_root):
    life = tmp_path / "life.txt"
    spec = tmp_path / "walk.spec"
    spec.write_text(spec_text(life, {"cand": 60, "fix": 100}))
    env = dict(os.environ, SPECDSL_ENV_ROOT=str(env_root), PYTHONPATH=str(REPO))

    def specdsl(*args):
        return subprocess.run([sys.executable, "-m", "specdsl.cli.main", *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)

    applied = specdsl("apply", "walk.spec", "--yes")
    assert applied.returncode == 3, applied.stdout + applied.stderr  # cand's check failed
    assert "fix" in applied.stdout
    planned = specdsl("plan", "walk.spec", "--detailed-exitcode")
    assert planned.returncode == 0, planned.stdout + planned.stderr
    assert "No changes." in planned.stdout

    shown = specdsl("history", "t", "walk.spec")
    assert shown.returncode == 0, shown.stderr
    state = load_state(tmp_path / ".specdsl")
    [p] = state.promotions
    assert p.run in shown.stdout and "fix" in shown.stdout and "faster" in shown.stdout
    assert "stacks/t.lock.toml" in shown.stdout
    doc = json.loads(specdsl("history", "t", "--state", ".specdsl", "--json").stdout)
    assert [e["run"] for e in doc["promotions"]] == [p.run]
    assert [c["check"] for c in doc["promotions"][0]["verdicts"]] == ["faster", "answers"]
    unknown = specdsl("history", "tt", "walk.spec")
    assert unknown.returncode == 1 and "No promotions of track `tt` recorded; did you mean `t`?" in unknown.stderr


def test_a_later_candidate_takes_the_track_once_and_the_track_does_not_flip_back(tmp_path, env_root):
    life = tmp_path / "life.txt"
    first_text = spec_text(life, {"cand": 100})
    _, first, state = apply_spec(tmp_path, first_text, env_root)
    assert state.baseline("t").experiment == "cand", failures(first)
    cand_run = state.baseline("t").run
    # a second candidate of the track, added later, passes: it takes the track
    both = spec_text(life, {"cand": 100, "fix": 120})
    plan, second, state = apply_spec(tmp_path, both, env_root)
    assert plan.change("promote.cand").action is Action.REUSE
    assert outcome(second, "promote.fix").status is Status.COMPLETED, failures(second)
    assert state.baseline("t").experiment == "fix"
    # and keeps it: no apply moves it back to cand, or writes anything
    plan = replan(tmp_path, both, env_root)
    assert not plan.has_changes, render_text(plan)
    _, third, state3 = apply_spec(tmp_path, both, env_root)
    assert state3.serial == state.serial and state3.baseline("t").experiment == "fix"
    # the audit trail: newest first, each with its previous run, the older lock rewritten since
    from specdsl.cli.history import render_text as history_text
    from specdsl.state.promotions import history
    entries = history(state3, "t")
    assert [(e.promotion.experiment, e.promotion.previous, e.previous_experiment) for e in entries] == \
        [("fix", cand_run, "cand"), ("cand", None, None)]
    old = Path.cwd()
    try:
        os.chdir(tmp_path)
        text = history_text("t", Path(".specdsl/state.toml"), entries, Path(".specdsl"))
    finally:
        os.chdir(old)
    assert text.index("experiment fix") < text.index("experiment cand")
    assert f"previous  run {cand_run} (cand)" in text
    assert f"lock      stacks/t.lock.toml (now records run {state3.baseline('t').run})" in text


# test_walk's track spec, compared with the recorded numbers instead of a rebuilt arm
TRACK_SPEC = TRACK_PAIRED.replace("  baseline = track.t\n", '  baseline = track.t\n  baseline_mode = "recorded"\n')


def _up_promoted_over_seed(tmp_path, env_root):
    """seed takes track t, then up (which compares with track t) takes it from seed."""
    life = tmp_path / "life.txt"
    text = COMMON + server("seed", 50, life) + server("up", 100, life) + workload(runs=2) + TRACK_SPEC
    # the track has no baseline yet: up cannot be decided, seed alone passes and is promoted
    _, first, state = apply_spec(tmp_path, text, env_root)
    assert first.exit_code() == 4 and state.baseline("t").experiment == "seed", failures(first)
    # the plan cannot know that up's recorded verdict read no baseline (the
    # check's identity names the track, not its run): the apply that
    # re-checks up records its pass, and the plan after it promotes
    plan, result, state = apply_spec(tmp_path, text, env_root)
    assert plan.change("promote.up").reason.startswith("not promoted: check.up.faster could not be decided")
    assert [v.status for _, v in result.verdicts if v.name == "faster"] == ["pass"]
    plan, result, state = apply_spec(tmp_path, text, env_root)
    assert plan.change("promote.up").action is Action.PROMOTE
    assert state.baseline("t").experiment == "up", [o.detail for o in result.outcomes if o.kind == "promote"]
    assert result.exit_code() == 0
    return text, state


def test_a_candidate_against_its_track_is_not_compared_with_itself_once_promoted(tmp_path, env_root):
    text, state = _up_promoted_over_seed(tmp_path, env_root)
    # now up is the track's baseline: its check still compares with seed's run
    plan = replan(tmp_path, text, env_root)
    assert not plan.has_changes, render_text(plan)
    _, again, _ = apply_spec(tmp_path, text, env_root)
    assert again.exit_code() == 0, again.verdicts
    [faster] = [v for _, v in again.verdicts if v.name == "faster"]
    assert faster.status == "pass" and "baseline value 50 x 1.5" in faster.detail


def test_a_candidate_against_its_track_writes_nothing_once_promoted(tmp_path, env_root):
    text, state = _up_promoted_over_seed(tmp_path, env_root)
    _, result, again = apply_spec(tmp_path, text, env_root)
    assert again.serial == state.serial  # the verdict's text names the run it replaced, before and after
    [faster] = [v for _, v in result.verdicts if v.name == "faster"]
    seed_run = state.promotions_of("t")[0].run
    assert f"baseline: the recorded result of track t (measured {state.run(seed_run).finished}): drift since then is not controlled" \
        in faster.detail


def test_a_rival_whose_verdict_turned_to_pass_in_this_apply_competes(tmp_path, env_root):
    life = tmp_path / "life.txt"
    text = COMMON + server("seed", 50, life) + server("up", 100, life) + workload(runs=2) + '''
experiment "seed" {
  host     = host.a
  stack    = stack.sys
  server   = server.seed
  workload = workload.w
  assert "answers" { tps > 0 }
  promote  = "t"
}
experiment "up" {
  host     = host.a
  stack    = stack.sys
  server   = server.up
  workload = workload.w
  baseline = track.t
  baseline_mode = "recorded"
  assert "faster" { tps >= baseline.tps * 1.5 }
  promote  = "t"
}
'''
    _, first, state = apply_spec(tmp_path, text, env_root)
    assert state.baseline("t").experiment == "seed", failures(first)
    # a fix is added; up's promotion is planned `=` (inconclusive recorded) but
    # its check, re-read against seed, passes in the same apply as the fix's
    text += server("fix", 90, life) + '''
experiment "fix" {
  host     = host.a
  stack    = stack.sys
  server   = server.fix
  workload = workload.w
  baseline = experiment.seed
  assert "faster" { tps >= baseline.tps * 1.5 }
  promote  = "t"
}
'''
    plan, second, state = apply_spec(tmp_path, text, env_root)
    assert plan.change("promote.up").action is Action.REUSE and plan.change("promote.fix").action is Action.PROMOTE
    o = outcome(second, "promote.fix")
    assert (o.status, o.reason, o.detail) == (Status.SKIPPED, Reason.SEVERAL_PASSED, "not promoted: fix, up passed for track t")
    assert state.baseline("t").experiment == "seed"
    plan = replan(tmp_path, text, env_root)
    assert not plan.has_changes and plan.change("promote.up").reason.startswith("held: fix, up passed")
