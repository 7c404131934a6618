"""Planning promotions from recorded verdicts: `!` only when a promotion can
happen (its verdicts will be new, or passed unseen by the track's latest
promotion); `=` after a recorded failure, after the track moved past these
verdicts, and for candidates of one track held because several passed."""

from __future__ import annotations

import attrs
import pytest

from specdsl.plan.model import Action
from specdsl.plan.render import render_text
from specdsl.state import RunRecord
from specdsl.verdict import Verdict

from plan_helpers import SPEC, applied_state, plan_for, resolve_text

TWO = SPEC + '''
experiment "fix" {
  stack    = stack.s
  server   = server.tiny { args = { attention-backend = "fa3" } }
  workload = workload.w
  baseline = experiment.base
  assert "faster" { output_throughput >= baseline.output_throughput * 1.03 }
  promote  = "prod"
}
'''


@pytest.fixture
def two_cfg(tmp_path):
    return resolve_text(tmp_path, TWO, "two.spec")


def verdict(state, graph, addr: str, status: str, n: int) -> tuple:
    """Record a verdict run of check `addr` as the check step does."""
    step = graph.steps[addr]
    run = RunRecord(id=f"v{n}", step=addr, identity=step.identity, experiment=step.experiments[0],
                    status="completed", started="t", verdict=Verdict("faster", status, f"output_throughput = {n}"))
    return state.with_run(run), run.id


def promote(state, graph, exp: str, verdicts: list[str]):
    run = state.result(graph.steps[f"benchmark.{exp}"].identity).id
    return state.with_promotion("prod", run, ["faster"], experiment=exp, verdicts=verdicts)


def change(plan, addr):
    c = plan.change(addr)
    return c.action, c.reason


def test_results_without_verdicts_promote_when_the_checks_pass(spec_cfg):
    graph, _ = plan_for(spec_cfg)
    _, plan = plan_for(spec_cfg, applied_state(graph))
    assert change(plan, "promote.cand") == (Action.PROMOTE, "to track prod when every check passes")


def test_a_recorded_failure_is_nothing_to_do_until_something_changes(spec_cfg, tmp_path):
    graph, _ = plan_for(spec_cfg)
    state, vid = verdict(applied_state(graph), graph, "check.cand.faster", "fail", 1)
    _, plan = plan_for(spec_cfg, state)
    assert change(plan, "promote.cand") == (
        Action.REUSE, f"not promoted: check.cand.faster failed (run {vid}); nothing changed since")
    assert not plan.has_changes, render_text(plan)
    # a change that reruns the candidate's benchmark makes its verdicts new
    _, plan = plan_for(spec_cfg, state, rerun=True)
    assert plan.change("promote.cand").action is Action.PROMOTE
    # so do more runs of the baseline's benchmark alone
    more = SPEC.replace("  requests    = 16\n", "  requests    = 16\n  runs = 3\n")
    base = next(r for r in state.runs if r.step == "benchmark.base")
    fewer = state.with_run(attrs.evolve(base, runs=1))
    fewer = fewer.with_run(attrs.evolve(next(r for r in state.runs if r.step == "benchmark.cand"), runs=4))  # its first look
    _, plan = plan_for(resolve_text(tmp_path, more, "y.spec"), fewer)
    assert plan.change("benchmark.base").action is Action.RUN
    assert plan.change("benchmark.cand").action is Action.REUSE, plan.change("benchmark.cand").reason
    assert plan.change("promote.cand").action is Action.PROMOTE
    # an inconclusive verdict is a stop too
    state, vid = verdict(state, graph, "check.cand.faster", "inconclusive", 2)
    _, plan = plan_for(spec_cfg, state)
    assert change(plan, "promote.cand") == (
        Action.REUSE, f"not promoted: check.cand.faster was inconclusive (run {vid}); nothing changed since")


def test_a_passed_verdict_promotes_once(spec_cfg):
    graph, _ = plan_for(spec_cfg)
    state, vid = verdict(applied_state(graph), graph, "check.cand.faster", "pass", 1)
    _, plan = plan_for(spec_cfg, state)
    assert plan.change("promote.cand").action is Action.PROMOTE
    state = promote(state, graph, "cand", [vid])
    _, plan = plan_for(spec_cfg, state)
    action, reason = change(plan, "promote.cand")
    assert action is Action.REUSE and reason.startswith("track prod already has this result")
    assert not plan.has_changes


def test_two_candidates_that_passed_are_held_until_one_is_chosen(two_cfg):
    graph, _ = plan_for(two_cfg)
    state, v1 = verdict(applied_state(graph), graph, "check.cand.faster", "pass", 1)
    state, v2 = verdict(state, graph, "check.fix.faster", "pass", 2)
    _, plan = plan_for(two_cfg, state)
    held = "held: cand, fix passed for track prod; promote one with --target NAME"
    assert change(plan, "promote.cand") == (Action.REUSE, held)
    assert change(plan, "promote.fix") == (Action.REUSE, held)
    assert not plan.has_changes
    # the user's choice: only fix is planned, and alone it promotes
    _, plan = plan_for(two_cfg, state, targets=("fix",))
    assert "promote.cand" not in {c.addr for c in plan.changes}
    assert plan.change("promote.fix").action is Action.PROMOTE
    state = promote(state, graph, "fix", [v2])
    # the choice stands: cand's verdicts are older than fix's promotion
    _, plan = plan_for(two_cfg, state)
    assert change(plan, "promote.cand") == (
        Action.REUSE, f"not promoted: track prod went to fix (run {state.baseline('prod').run}) after these verdicts")
    assert plan.change("promote.fix").action is Action.REUSE
    assert not plan.has_changes
    # a new verdict of cand, recorded after fix's promotion, is news again
    state, _ = verdict(state, graph, "check.cand.faster", "pass", 3)
    _, plan = plan_for(two_cfg, state)
    assert plan.change("promote.cand").action is Action.PROMOTE


def test_a_failed_candidate_leaves_its_fix_to_promote(two_cfg):
    graph, _ = plan_for(two_cfg)
    state, v1 = verdict(applied_state(graph), graph, "check.cand.faster", "fail", 1)
    state, v2 = verdict(state, graph, "check.fix.faster", "pass", 2)
    _, plan = plan_for(two_cfg, state)
    assert plan.change("promote.cand").action is Action.REUSE
    assert change(plan, "promote.fix") == (Action.PROMOTE, "to track prod when every check passes")
    state = promote(state, graph, "fix", [v2])
    _, plan = plan_for(two_cfg, state)
    assert not plan.has_changes, render_text(plan)


def test_candidates_whose_verdicts_will_be_new_are_both_planned(two_cfg):
    graph, plan = plan_for(two_cfg)  # nothing recorded: both run
    assert plan.change("promote.cand").action is Action.PROMOTE
    assert plan.change("promote.fix").action is Action.PROMOTE
    # one recorded pass and one without a verdict yet: apply decides
    state, _ = verdict(applied_state(graph), graph, "check.cand.faster", "pass", 1)
    _, plan = plan_for(two_cfg, state)
    assert plan.change("promote.cand").action is Action.PROMOTE and plan.change("promote.fix").action is Action.PROMOTE
