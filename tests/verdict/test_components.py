"""variance_components (one-way random-effects ANOVA) against closed forms
and seeded simulations, and runs_per_launch against a brute-force search
of the cost-variance product it minimises."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from specdsl.verdict import runs_per_launch, variance_components

finite = st.floats(-50, 50, allow_nan=False, allow_infinity=False)
groups_st = st.lists(st.lists(finite, min_size=1, max_size=6), min_size=2, max_size=8).filter(
    lambda gs: any(len(g) >= 2 for g in gs))


def test_balanced_groups_match_the_textbook_formulas():
    groups = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [0.0, 1.0, 2.0]]
    # within: each group's deviations are -1, 0, 1: SSW = 6, df 6; means 2, 5, 1, grand 8/3
    msw = 6 / 6
    msb = 3 * ((2 - 8 / 3) ** 2 + (5 - 8 / 3) ** 2 + (1 - 8 / 3) ** 2) / 2
    vc = variance_components(groups)
    assert vc.run_var == pytest.approx(msw)
    assert vc.launch_var == pytest.approx((msb - msw) / 3)
    assert (vc.run_df, vc.launch_df) == (6, 2)
    run_var, launch_var, run_df, launch_df = vc  # a tuple, as documented
    assert (run_df, launch_df) == (6, 2)


def test_unbalanced_groups_use_n0():
    groups = [[0.0, 1.0], [3.0], [5.0, 6.0, 7.0]]
    sizes, total = [2, 1, 3], 6
    means, grand = [0.5, 3.0, 6.0], 22 / 6
    msw = (0.25 * 2 + 0 + 2) / (total - 3)
    msb = sum(n * (m - grand) ** 2 for n, m in zip(sizes, means)) / 2
    n0 = (total - sum(n * n for n in sizes) / total) / 2
    vc = variance_components(groups)
    assert vc.run_var == pytest.approx(msw) and vc.launch_var == pytest.approx((msb - msw) / n0)


def test_launches_that_differ_less_than_their_runs_have_no_launch_variance():
    vc = variance_components([[0.0, 2.0], [2.0, 0.0], [1.0, 1.0]])  # equal means: MSB = 0
    assert vc.launch_var == 0.0 and vc.run_var > 0


@pytest.mark.parametrize("sd_run,sd_launch,runs", [(0.02, 0.0, 3), (0.02, 0.02, 2), (0.01, 0.03, 4), (0.05, 0.01, 8)])
def test_the_estimates_recover_known_components(sd_run, sd_launch, runs):
    rng = np.random.default_rng([1, runs])
    reps, launches = 2000, 12
    est = np.array([
        variance_components((rng.normal(0, sd_launch, (launches, 1)) + rng.normal(0, sd_run, (launches, runs))).tolist())[:2]
        for _ in range(reps)])
    # the run variance is unbiased; the launch variance too, up to the floor at 0
    assert est[:, 0].mean() == pytest.approx(sd_run ** 2, rel=0.05)
    if sd_launch > 0:
        assert est[:, 1].mean() == pytest.approx(sd_launch ** 2, rel=0.1, abs=0.1 * sd_run ** 2 / runs)
    else:
        assert est[:, 1].mean() < 0.25 * sd_run ** 2 / runs


@given(groups_st, finite, st.floats(0.1, 10))
@example([[0.0, 1.0], [5.0]], 3.0, 2.0)
def test_shift_does_nothing_and_scale_scales_the_variances(groups, shift, scale):
    vc = variance_components(groups)
    moved = variance_components([[scale * (x + shift) for x in g] for g in groups])
    assert vc.run_var >= 0 and vc.launch_var >= 0
    assert moved.run_var == pytest.approx(scale ** 2 * vc.run_var, rel=1e-6, abs=1e-6)
    assert moved.launch_var == pytest.approx(scale ** 2 * vc.launch_var, rel=1e-6, abs=1e-6)
    assert (moved.run_df, moved.launch_df) == (sum(map(len, groups)) - len(groups), len(groups) - 1)


@pytest.mark.parametrize("groups,words", [
    ([[1.0, 2.0]], "needs 2"), ([[1.0], []], "launch 2 has no runs"), ([[1.0], [2.0]], "no launch has 2 runs"),
    ([[1.0, math.nan], [2.0]], "not finite")])
def test_unusable_groups_say_why(groups, words):
    with pytest.raises(ValueError, match=words):
        variance_components(groups)


def _objective(b, c_l, c_r, s_r, s_l):
    return (s_l + s_r / b) * (c_l + b * c_r)


def test_the_classic_optimum():
    # launches 100x a run, launch variance a quarter of the run's: sqrt(100 * 4) = 20, bounded to 16
    assert runs_per_launch(100.0, 1.0, 0.04, 0.01) == 16
    assert runs_per_launch(9.0, 1.0, 0.01, 0.01) == 3  # sqrt(9) exactly
    assert runs_per_launch(1.0, 1.0, 0.01, 0.04) == 1  # launches differ more than runs and cost the same
    assert runs_per_launch(13.5, 0.75, 0.02 ** 2, 0.02 ** 2) == 4  # the quickstart's costs: sqrt(18) = 4.24
    assert runs_per_launch(5.0, 1.0, 0.01, 0.0) == 16 and runs_per_launch(5.0, 1.0, 0.0, 0.01) == 1
    assert runs_per_launch(5.0, 1.0, 0.0, 0.0, lo=2, hi=4) == 2


@given(st.floats(0.01, 1000), st.floats(0.01, 100), st.floats(1e-6, 1), st.floats(1e-6, 1),
       st.integers(1, 5), st.integers(0, 20))
@example(10.0, 1.0, 0.01, 0.01, 1, 15)
def test_the_choice_minimises_the_variance_for_the_time(c_l, c_r, s_r, s_l, lo, extra):
    hi = lo + extra
    b = runs_per_launch(c_l, c_r, s_r, s_l, lo=lo, hi=hi)
    assert lo <= b <= hi
    best = min(_objective(x, c_l, c_r, s_r, s_l) for x in range(lo, hi + 1))
    assert _objective(b, c_l, c_r, s_r, s_l) <= best * (1 + 1e-9)


@given(st.floats(0.01, 1000), st.floats(0.01, 100), st.floats(1e-6, 1), st.floats(1e-6, 1), st.floats(1.01, 10))
def test_dearer_launches_or_noisier_runs_never_mean_fewer_runs_per_launch(c_l, c_r, s_r, s_l, f):
    b = runs_per_launch(c_l, c_r, s_r, s_l)
    assert runs_per_launch(c_l * f, c_r, s_r, s_l) >= b
    assert runs_per_launch(c_l, c_r, s_r * f, s_l) >= b
    assert runs_per_launch(c_l, c_r * f, s_r, s_l) <= b
    assert runs_per_launch(c_l, c_r, s_r, s_l * f) <= b


@pytest.mark.parametrize("args,kw,words", [
    ((-1.0, 1.0, 0.1, 0.1), {}, "launch cost"), ((1.0, math.inf, 0.1, 0.1), {}, "run cost"),
    ((1.0, 1.0, math.nan, 0.1), {}, "run variance"), ((0.0, 0.0, 0.1, 0.1), {}, "both 0"),
    ((1.0, 1.0, 0.1, 0.1), {"lo": 0}, "bounds"), ((1.0, 1.0, 0.1, 0.1), {"lo": 5, "hi": 4}, "bounds")])
def test_bad_arguments_say_which(args, kw, words):
    with pytest.raises(ValueError, match=words):
        runs_per_launch(*args, **kw)
