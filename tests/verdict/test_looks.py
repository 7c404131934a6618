"""The look schedule: its looks, its alpha spending (the whole budget, the
boundaries of known designs), the overall false-pass rate of its t tests
measured by an independent simulation, and sequential_decision."""

from __future__ import annotations

import math

import numpy as np
import pytest

from specdsl.verdict import LookSchedule, Status, group_sequential_bounds, sequential_decision, spent
from specdsl.verdict import _dist
from specdsl.verdict.looks import safety, t_sequential_levels


def test_looks():
    assert LookSchedule(first=3, step=2, max=12).looks() == [3, 5, 7, 9, 11, 12]
    assert LookSchedule(first=3, step=3, max=12).looks() == [3, 6, 9, 12]
    assert LookSchedule(first=4, step=1, max=4).looks() == [4]
    s = LookSchedule()
    assert (s.index_of(5), s.index_of(4), s.next_look(5), s.next_look(12)) == (1, None, 7, None)
    for bad in ({"first": 1}, {"step": 0}, {"first": 5, "max": 4}, {"spending": "linear"}, {"alpha": 0.6}):
        with pytest.raises(ValueError):
            LookSchedule(**bad)


@pytest.mark.parametrize("spending", ["obf", "pocock", "bonferroni"])
def test_the_looks_spend_exactly_the_budget(spending):
    s = LookSchedule(first=3, step=2, max=12, spending=spending, alpha=0.05)
    looks = range(len(s.looks()))
    assert sum(s.spent_at(i) for i in looks) == pytest.approx(0.05, rel=1e-12)
    assert spent(spending, 0.05, 1.0) == pytest.approx(0.05, rel=1e-12)
    assert all(s.spent_at(i) >= 0 for i in looks)
    if spending == "bonferroni":  # each look at alpha / K: the levels themselves sum to alpha
        assert sum(s.alpha_at(i) for i in looks) == pytest.approx(0.05, rel=1e-12)
    else:  # a later look's level exceeds its spend: paths that crossed earlier cannot cross again
        # the first look: its spend exactly, less the simulation's safety margin
        assert s.alpha_at(0) == pytest.approx(s.spent_at(0) * safety(0.05), rel=1e-9)
        assert all(s.alpha_at(i) > s.spent_at(i) for i in looks if i > 0)
        assert sum(s.alpha_at(i) for i in looks) > 0.05


def test_z_boundaries_reproduce_published_designs():
    """Five equally spaced looks, one-sided 2.5% (gsDesign's sfLDOF and
    sfLDPocock boundaries)."""
    infos = (1.0, 2.0, 3.0, 4.0, 5.0)

    def bounds(spending):
        cum = [spent(spending, 0.025, i / 5) for i in infos]
        return group_sequential_bounds(infos, tuple(b - a for a, b in zip([0.0] + cum[:-1], cum)))

    assert bounds("obf") == pytest.approx((4.8769, 3.3569, 2.6803, 2.2898, 2.0310), abs=2e-4)
    assert bounds("pocock") == pytest.approx((2.4380, 2.4268, 2.4101, 2.3966, 2.3859), abs=2e-4)


def _false_pass_rate(schedule: LookSchedule, paths: int, seed: int) -> tuple[float, float]:
    """Walks of null pairs (an independent simulation, numpy): the share
    that PASS at some look, and the share that FAIL."""
    d = np.random.default_rng(seed).standard_normal((paths, schedule.max))
    running = np.ones(paths, bool)
    passed = np.zeros(paths, bool)
    failed = np.zeros(paths, bool)
    for i, n in enumerate(schedule.looks()):
        c = _dist.t_quantile(1 - schedule.alpha_at(i), n - 1)
        m, se = d[:, :n].mean(1), d[:, :n].std(1, ddof=1) / math.sqrt(n)
        p, f = running & (m - c * se >= 0), running & (m + c * se < 0)
        passed |= p
        failed |= f
        running &= ~(p | f)
    return float(passed.mean()), float(failed.mean())


@pytest.mark.parametrize("spending", ["obf", "pocock", "bonferroni"])
def test_the_walk_passes_a_null_candidate_at_most_alpha_of_the_time(spending):
    schedule = LookSchedule(first=3, step=2, max=12, spending=spending)
    false_pass, false_fail = _false_pass_rate(schedule, 200_000, seed=99)
    se = math.sqrt(0.05 * 0.95 / 200_000)  # 0.0005
    assert false_pass <= 0.05 + 3 * se and false_fail <= 0.05 + 3 * se
    if spending != "bonferroni":  # and spends it: not conservative for nothing
        assert false_pass >= 0.05 - 4 * se


def test_z_levels_would_overspend_with_few_degrees_of_freedom():
    """Why the levels are calibrated on t statistics: the z boundaries'
    nominal levels, used for t tests of 2-11 degrees of freedom, pass more
    than 5% of null walks."""
    s = LookSchedule()
    looks = tuple(float(n) for n in s.looks())
    incs = tuple(s.spent_at(i) for i in range(len(looks)))
    z_levels = [_dist.norm_sf(c) for c in group_sequential_bounds(looks, incs)]
    t_levels = t_sequential_levels(tuple(s.looks()), incs)
    assert t_levels[-1] < z_levels[-1]  # the last look is where the z shortcut overspends most
    assert t_sequential_levels(tuple(s.looks()), incs) is t_levels  # cached: computed once


def test_levels_are_deterministic_and_grow_with_the_budget():
    s = LookSchedule()
    assert LookSchedule().alpha_at(3) == s.alpha_at(3)
    assert s.level_for(7, 0.025) < s.level_for(7, 0.05) < s.level_for(7, 0.10)
    assert s.alpha_at(2) == s.level_for(7)


def test_sequential_decision_at_a_look_and_between_looks():
    s = LookSchedule(first=3, step=2, max=7)
    pairs = [(100.0, 104.0), (100.0, 103.0), (100.0, 105.2), (100.0, 103.9), (100.0, 104.6), (100.0, 104.1), (100.0, 104.3)]
    first = sequential_decision(pairs[:3], ">=", 1.03, s)
    assert first.level == pytest.approx(1 - s.alpha_at(0))
    assert "look 1 of 3" in first.method and "obf spending of 5%" in first.method
    assert first.verdict is Status.INCONCLUSIVE and first.detail.endswith("; next look at 5 pairs")
    last = sequential_decision(pairs, ">=", 1.03, s)
    assert "look 3 of 3" in last.method and "next look" not in last.detail
    assert last.verdict is Status.PASS
    unplanned = sequential_decision(pairs[:4], ">=", 1.03, s)
    assert "unplanned look at 4" in unplanned.method
    assert unplanned.level == pytest.approx(1 - s.level_for(4))
    # more pairs than max: a final look that spends what is left
    assert 0 < s.level_for(9) <= 0.05
    assert sequential_decision(pairs[:1], ">=", 1.03, s).verdict is Status.ERROR
    # the same data at a plain fixed-n level would be read less strictly
    assert first.level > 0.95


def test_the_schedule_alpha_and_the_call_alpha():
    s = LookSchedule(alpha=0.10)
    pairs = [(100.0, 101.0 + i % 3) for i in range(5)]
    assert sequential_decision(pairs, ">=", 1.0, s).level == pytest.approx(1 - s.level_for(5, 0.10))
    assert sequential_decision(pairs, ">=", 1.0, s, alpha=0.05).level == pytest.approx(1 - s.level_for(5, 0.05))


def test_a_look_that_spends_nothing_cannot_pass_and_never_gives_nan():
    """A later look whose increment is below one simulated path (a tiny
    Holm budget) has level 0: it cannot decide, but reports cleanly."""
    s = LookSchedule(first=3, step=1, max=40)
    assert s.level_for(4, 1e-7) == 0.0
    noisy = [(100.0, 104.0 + i % 3) for i in range(4)]
    flat = [(100.0, 104.0)] * 4  # no spread at all
    d = sequential_decision(noisy, ">=", 1.0, s, alpha=1e-7)
    assert d.verdict is Status.INCONCLUSIVE and d.low == 0.0 and d.high == math.inf
    f = sequential_decision(flat, ">=", 1.0, s, alpha=1e-7)
    assert f.verdict is Status.PASS and f.mde == 1.0 and not math.isnan(f.low)


def test_evidence_that_grows_keeps_the_false_pass_rate_over_both_applies():
    """The walk the quickstart's workload plans (looks from 2 pairs, horizon
    6, the reserve kept, looks that cannot decide skipped), then raised to
    16 pairs by a later apply: the looks up to the horizon are those the
    first apply took, and the whole walk passes a null candidate at most
    alpha of the time (an independent simulation, numpy)."""
    first = LookSchedule(first=2, step=1, max=6, horizon=6, reserve=0.2, skip_t=30.0)
    grown = LookSchedule(first=2, step=1, max=16, horizon=6, reserve=0.2, skip_t=30.0)
    assert first.looks() == [3, 4, 5, 6]  # the look at 2 pairs needs t > 30: not taken
    assert grown.looks()[:4] == first.looks() and grown.looks()[4:] == list(range(7, 17))
    # the same levels at the looks both took: raising max moves nothing already decided
    assert [grown.alpha_at(i) for i in range(4)] == pytest.approx([first.alpha_at(i) for i in range(4)], rel=1e-12)
    assert first.cumulative(6) == pytest.approx(0.04) and grown.cumulative(16) < 0.05
    se = math.sqrt(0.05 * 0.95 / 200_000)
    for schedule in (first, grown):
        false_pass, false_fail = _false_pass_rate(schedule, 200_000, seed=7)
        assert false_pass <= 0.05 + 3 * se and false_fail <= 0.05 + 3 * se, (schedule.max, false_pass, false_fail)
    # a fixed number of pairs is one look, which keeps the reserve too
    fixed = LookSchedule(first=3, step=1, max=3, horizon=3, reserve=0.2, skip_t=30.0)
    assert fixed.looks() == [3] and fixed.alpha_at(0) == pytest.approx(0.04 * safety(0.05), rel=1e-9)


def test_the_pure_t_quantile_matches_scipy():
    for df in (1, 2, 3, 5, 12):
        for p in (0.05, 1e-3, 1e-6):
            assert _dist.t_isf_int(p, df) == pytest.approx(-_dist.t_quantile(p, df), rel=1e-7)
            assert _dist.t_sf_int(-_dist.t_quantile(p, df), df) == pytest.approx(p, rel=1e-6)
