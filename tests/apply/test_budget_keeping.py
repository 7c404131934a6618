"""How apply keeps a budget (specdsl.apply.budget), without servers: which
comparisons may measure their next pair under their own and the apply's
limits, what is recorded when one is stopped, the block's launches and
time counted once, and the verdict line of a comparison its budget
stopped. The comparisons are the walk's own records of pairs
(paired._Pairing)."""

from __future__ import annotations

import attrs
import pytest

from specdsl.apply.budget import Ledger, Spending, annotate
from specdsl.apply.steps.paired import _Pairing
from specdsl.plan.budget import Limit
from specdsl.verdict import ratio_decision
from specdsl.verdict.decision import Status
from specdsl.verdict.record import Verdict


@attrs.define
class Comparison:
    """What Spending reads of a comparison the walk measures: its address and its pairs so far."""

    addr: str
    done: _Pairing = attrs.Factory(_Pairing)


def _with_pairs(comp: Comparison, n: int, wall_s: float | None = None) -> Comparison:
    for i in range(n):
        comp.done.add_runs(i, "A", [], 2 * i)
        comp.done.add_runs(i, "B", [], 2 * i + 1)
        if wall_s is not None:
            comp.done.pairs[-1]["wall_s"] = wall_s
    return comp


def _spending(limits: dict, apply_limit: Limit = Limit(), estimate: float = 10.0) -> Spending:
    return Spending(Ledger(apply_limit), limits, lambda: estimate)


def test_a_comparison_stops_before_the_pair_that_would_pass_its_launches():
    comp = _with_pairs(Comparison("benchmark.up"), 3)
    spending = _spending({"benchmark.up": Limit(6)})
    assert spending.allowed(3, [comp]) == []
    assert comp.done.budget == {"reached": "6 of 6 launches", "by": "its own", "pairs": 3, "pair_s": 10.0,
                                "pair_launches": 2, "max_launches": 6, "max_seconds": None}
    assert "budget" in comp.done.to_json({})  # recorded with the pairs
    raised = _spending({"benchmark.up": Limit(8)})
    assert raised.allowed(3, [comp]) == [comp] and comp.done.budget == {}


def test_time_counts_the_timed_pairs_and_estimates_the_next_from_them():
    comp = _with_pairs(Comparison("benchmark.up"), 2, wall_s=30.0)
    spending = _spending({"benchmark.up": Limit(None, 89.0)}, estimate=1.0)  # the estimate is not used: pairs are timed
    assert spending.pair_s(comp) == 30.0
    assert spending.allowed(2, [comp]) == [] and comp.done.budget["reached"] == "~60 s of 89 s"
    assert _spending({"benchmark.up": Limit(None, 90.0)}).allowed(2, [comp]) == [comp]


def test_the_apply_wide_budget_counts_a_shared_blocks_launches_once_and_reserves_them():
    up, fix = Comparison("benchmark.up"), Comparison("benchmark.fix")
    spending = _spending({"benchmark.up": Limit(), "benchmark.fix": Limit()}, Limit(5))
    # a block of both: the baseline's launch and each candidate's, 3
    assert spending.allowed(0, [up, fix]) == [up, fix]
    assert spending.ledger.launches == 3
    for c in (up, fix):  # what measuring the block recorded
        c.done.add_runs(0, "A", [], 0)
        c.done.add_runs(0, "B", [], 1)
    spending.charge(0, [up, fix], 12.5)
    assert spending.ledger.seconds == pytest.approx(12.5)  # what it took, not what was reserved
    assert up.done.pairs[0]["wall_s"] == fix.done.pairs[0]["wall_s"] == 12.5
    # 2 left: one comparison's pair fits (baseline + candidate), the second's candidate would be the 6th
    assert spending.allowed(1, [up, fix]) == [up]
    assert fix.done.budget["by"] == "the apply's" and fix.done.budget["reached"] == "5 of 5 launches"
    # another step of the same apply sees the same ledger: nothing is left
    other = Spending(spending.ledger, {"benchmark.x": Limit()}, lambda: 10.0)
    x = Comparison("benchmark.x")
    assert other.allowed(0, [x]) == [] and x.done.budget["reached"] == "5 of 5 launches"


def test_no_budget_changes_nothing():
    comp = _with_pairs(Comparison("benchmark.up"), 40)
    spending = _spending({"benchmark.up": Limit()})
    assert spending.allowed(40, [comp]) == [comp] and comp.done.budget == {} and spending.ledger.launches == 0


def _undecided(n: int = 3) -> Verdict:
    pairs = [(100.0, 100.0 * r) for r in (1.01, 0.99, 1.02, 0.98, 1.0)[:n]]
    d = ratio_decision(pairs, ">=", 1.01)
    assert d.verdict is Status.INCONCLUSIVE
    return Verdict("faster", d.verdict, d.line(), gating=True, decision=d, needed=20)


def test_a_stopped_comparisons_verdict_says_what_a_decision_would_still_cost():
    doc = {"pairs": [{}] * 3, "budget": {"reached": "6 of 6 launches", "by": "its own", "pairs": 3, "pair_s": 40.0,
                                         "pair_launches": 2}}
    got = annotate(_undecided(), doc)
    assert got.status is Status.INCONCLUSIVE
    assert got.detail.endswith("; budget reached: 6 of 6 launches; a decision at this margin would still cost about "
                               "17 more pairs (34 launches, ~11.3 min)"), got.detail
    beyond = annotate(attrs.evolve(_undecided(), needed_beyond=True), doc)
    assert "would still cost more than 17 more pairs" in beyond.detail
    # not stopped by a budget, or decided: as it was
    assert annotate(_undecided(), {"pairs": [{}] * 3}) == _undecided()
    passed = attrs.evolve(_undecided(), status=Status.PASS)
    assert annotate(passed, doc) == passed


def test_a_comparison_stopped_at_one_pair_is_inconclusive_not_an_error():
    error = Verdict("faster", Status.ERROR, "not enough pairs: 1", gating=True)
    doc = {"pairs": [{}], "budget": {"reached": "4 of 4 launches", "by": "the apply's", "pairs": 1, "pair_s": 5.0}}
    got = annotate(error, doc)
    assert got.status is Status.INCONCLUSIVE
    assert "budget reached: 4 of 4 launches (the apply's --max-launches / --max-time)" in got.detail
    none = annotate(error, {"pairs": [], "budget": doc["budget"]})
    assert none.status is Status.INCONCLUSIVE and none.detail.startswith("not measured: budget reached before its first pair")
