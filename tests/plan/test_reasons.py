"""Each change's action is decided by a rule with a code (plan.reasons.Why)
and its prose rendered from the code (plan.reasons.render), as Terraform
keeps a change's ActionReason apart from its words: the codes of the usual
plans, and the prose each code renders being the start of the reason."""

from specdsl.plan.model import Action
from specdsl.plan.reasons import _TEXT, Why, render

from plan_helpers import SPEC, applied_state, plan_for, resolve_text

# the codes whose prose needs no facts: the reason starts with it
_PLAIN = {Why.NO_RESULTS, Why.SERVER_RUNNING, Why.SERVER_NOT_NEEDED, Why.SERVER_NOT_RUNNING, Why.NEW_SERVER,
          Why.ENV_EXISTS, Why.ENV_NOT_NEEDED, Why.ENV_MISSING, Why.NOTHING_TO_START, Why.STOP_SERVER, Why.NOTHING_RUNNING}


def whys(plan) -> dict:
    return {c.addr: c.why for c in plan.changes}


def _said(plan) -> None:
    for c in plan.changes:
        assert isinstance(c.why, Why), c
        if c.why in _PLAIN:
            assert c.reason.startswith(render(c.why)), (c.addr, c.reason)


def test_every_code_renders():
    assert set(_TEXT) == set(Why)


def test_a_plan_from_nothing(spec_cfg):
    _, plan = plan_for(spec_cfg)
    got = whys(plan)
    assert got["provision.s"] is Why.NEW_ENV and got["launch.tiny"] is Why.NEW_SERVER
    assert got["benchmark.base"] is got["benchmark.cand"] is Why.NO_RESULTS
    assert got["preflight.local"] is Why.BEFORE_STARTS and got["teardown.tiny"] is Why.STOP_SERVER
    assert got["check.cand.faster"] is Why.READS and got["promote.cand"] is Why.PROMOTION
    assert plan.change("preflight.local").reason == render(Why.BEFORE_STARTS, starts=["benchmark.cand", "launch.tiny", "provision.s"])
    _said(plan)


def test_a_plan_over_what_was_applied(spec_cfg):
    graph, _ = plan_for(spec_cfg)
    _, plan = plan_for(spec_cfg, applied_state(graph))
    got = whys(plan)
    assert got["benchmark.base"] is got["benchmark.cand"] is Why.RESULTS_RECORDED
    assert got["launch.tiny"] is Why.SERVER_NOT_NEEDED and got["provision.s"] is Why.ENV_EXISTS
    assert got["teardown.tiny"] is Why.NOTHING_RUNNING and got["preflight.local"] is Why.NOTHING_TO_START
    run = plan.change("benchmark.base").reason.rpartition(" ")[2]
    assert plan.change("benchmark.base").reason == render(Why.RESULTS_RECORDED, run=run)
    _said(plan)


def test_changed_content_rerun_and_a_server_gone(tmp_path, spec_cfg):
    graph, _ = plan_for(spec_cfg)
    state = applied_state(graph)
    changed = resolve_text(tmp_path, SPEC.replace('attention-backend = "flashinfer"', 'attention-backend = "fa3"'), "y.spec")
    _, plan = plan_for(changed, state)
    assert plan.change("benchmark.cand").why is Why.FIELDS_CHANGED and plan.change("benchmark.cand").action is Action.RUN
    _, plan = plan_for(spec_cfg, state, rerun=True)
    assert plan.change("benchmark.base").why is Why.RERUN
    assert plan.change("launch.tiny").why is Why.SERVER_NOT_RUNNING  # recorded, not running: launched again
    _said(plan)
