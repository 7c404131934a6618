"""Holm's step-down on known p-values, its levels for re-deciding, and the
three kinds of input (p-values, Decisions, callables)."""

from __future__ import annotations

import math

import pytest

from specdsl.verdict import (
    LookSchedule,
    Status,
    holm,
    holm_adjusted,
    holm_alphas,
    ratio_decision,
    sequential_decision,
)


def test_holm_step_down_on_known_p_values():
    # sorted: 0.005 <= 0.05/4 reject; 0.01 <= 0.05/3 reject; 0.03 > 0.05/2 stop
    r = holm([0.01, 0.04, 0.03, 0.005], 0.05)
    assert r.rejected == (True, False, False, True)
    assert r.adjusted == pytest.approx((0.03, 0.06, 0.06, 0.02))
    # the levels: both rejected ones pass at 0.05/4; the others get 0.05/2, at which neither passes
    assert r.alphas == pytest.approx((0.0125, 0.025, 0.025, 0.0125))
    assert all((p <= a) == rej for p, a, rej in zip(r.p_values, r.alphas, r.rejected))


def test_holm_rejects_more_than_bonferroni():
    ps = [0.001, 0.011, 0.02, 0.04]  # Bonferroni (0.0125 each) rejects two; Holm all four
    r = holm(ps, 0.05)
    assert r.rejected == (True, True, True, True)
    assert [p <= 0.05 / 4 for p in ps] == [True, True, False, False]
    # rounds: at 0.05/4 the first two pass, at 0.05/2 the third, at 0.05 the last
    assert r.alphas == pytest.approx((0.0125, 0.0125, 0.025, 0.05))
    assert holm_adjusted(ps) == pytest.approx([0.004, 0.033, 0.04, 0.04])
    assert holm_alphas(ps) == pytest.approx(list(r.alphas))


def test_a_single_assertion_keeps_its_alpha_and_nothing_is_no_rejection():
    assert holm([0.049]).rejected == (True,) and holm([0.049]).alphas == (0.05,)
    assert holm([0.051]).rejected == (False,)
    assert holm([]).rejected == ()


def test_ties_and_errors():
    r = holm([0.02, 0.02], 0.05)  # both <= 0.025
    assert r.rejected == (True, True)
    r = holm([0.001, math.nan], 0.05)  # an ERROR (nan) is never rejected, and counts
    assert r.rejected == (True, False) and r.alphas[0] == 0.025
    with pytest.raises(ValueError):
        holm([1.5])


PAIRS = {
    "clear": [(100.0, 106.0), (100.0, 105.5), (100.0, 106.4), (100.0, 105.8)],
    "marginal": [(100.0, 104.0), (100.0, 103.0), (100.0, 105.2), (100.0, 103.9), (100.0, 104.6)],
    "not": [(100.0, 101.0), (100.0, 103.5), (100.0, 99.0), (100.0, 102.0)],
}


def test_decisions_and_callables_agree_with_the_p_values():
    fns = [lambda a, p=p: ratio_decision(p, ">=", 1.03, alpha=a) for p in PAIRS.values()]
    plain = [f(0.05) for f in fns]
    by_p = holm([d.p_pass for d in plain])
    by_decision = holm(plain)
    by_callable = holm(fns)
    assert by_p.rejected == by_decision.rejected == by_callable.rejected
    assert by_decision.p_values == by_p.p_values
    assert all(math.isnan(p) for p in by_callable.adjusted)  # no single p-value for a callable
    # re-decided at its level, each assertion passes exactly when Holm rejects it
    for d, rejected, level in zip(by_callable.decisions, by_callable.rejected, by_callable.alphas):
        assert (d.verdict is Status.PASS) == rejected
        assert d.level == pytest.approx(1 - level)
    assert by_callable.rejected[0] and not by_callable.rejected[2]


def test_holm_over_sequential_decisions_uses_each_assertions_budget():
    schedule = LookSchedule(first=3, step=2, max=7)
    fns = [lambda a, p=p: sequential_decision(p[:3], ">=", 1.03, schedule, alpha=a) for p in PAIRS.values()]
    r = holm(fns)
    for d, level in zip(r.decisions, r.alphas):
        assert d.level == pytest.approx(1 - schedule.level_for(3, level))


def test_the_fail_side():
    down = [(100.0, 95.0), (100.0, 94.0), (100.0, 95.5)]
    fns = [lambda a: ratio_decision(down, ">=", 1.0, alpha=a), lambda a: ratio_decision(PAIRS["clear"], ">=", 1.0, alpha=a)]
    r = holm(fns, side="fail")
    assert r.rejected == (True, False)
    assert r.decisions[0].verdict is Status.FAIL
    with pytest.raises(ValueError):
        holm([0.1], side="both")
