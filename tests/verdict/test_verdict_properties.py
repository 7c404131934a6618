"""Properties of the decisions (hypothesis): invariance to the unit of
measurement, the mirror image of swapping the arms, the complementary
operators, p-values that agree with the verdict, Holm between Bonferroni and
no correction."""

from __future__ import annotations

import math

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from specdsl.verdict import OPS, Status, absolute_decision, holm, ratio_decision

values = st.floats(min_value=1.0, max_value=1e4, allow_nan=False)
pair_lists = st.lists(st.tuples(values, values), min_size=2, max_size=12)
factors = st.floats(min_value=0.5, max_value=2.0)
alphas = st.sampled_from([0.01, 0.05, 0.1, 0.2])
MIRROR = {">=": "<=", ">": "<", "<=": ">=", "<": ">"}


def far_from_ties(d, k: float) -> bool:
    """No bound within rounding of the threshold (where a last-bit change may flip a verdict)."""
    return all(math.isinf(b) or b == 0 or abs(math.log(b) - math.log(k)) > 1e-9 for b in (d.low, d.high))


@settings(max_examples=150, deadline=None)
@given(pair_lists, st.sampled_from(list(OPS)), factors, st.integers(-20, 20))
def test_the_unit_of_measurement_does_not_matter(pairs, op, k, exponent):
    scale = 2.0**exponent  # exact in floating point: the same ratios, bit for bit
    scaled = [(b * scale, c * scale) for b, c in pairs]
    assert ratio_decision(scaled, op, k) == ratio_decision(pairs, op, k)


@settings(max_examples=150, deadline=None)
@given(pair_lists, st.sampled_from(list(OPS)), factors, st.floats(min_value=0.001, max_value=1000.0))
def test_any_common_scale_gives_the_same_verdict(pairs, op, k, scale):
    d = ratio_decision(pairs, op, k)
    assume(far_from_ties(d, k))
    s = ratio_decision([(b * scale, c * scale) for b, c in pairs], op, k)
    assert s.verdict is d.verdict
    assert math.isclose(s.estimate, d.estimate, rel_tol=1e-9)


@settings(max_examples=150, deadline=None)
@given(pair_lists, st.sampled_from(list(OPS)), factors)
def test_swapping_the_arms_mirrors_the_interval(pairs, op, k):
    d = ratio_decision(pairs, op, k)
    assume(far_from_ties(d, k) and d.verdict is not Status.ERROR)
    m = ratio_decision([(c, b) for b, c in pairs], MIRROR[op], 1.0 / k)
    assert m.verdict is d.verdict
    assert math.isclose(m.estimate, 1.0 / d.estimate, rel_tol=1e-9)
    for mine, theirs in ((m.low, d.high), (m.high, d.low)):
        assert (theirs == 0 and mine == math.inf) or (mine == 0 and theirs == math.inf) or math.isclose(
            mine, 1.0 / theirs, rel_tol=1e-9)
    assert math.isclose(m.p_pass, d.p_pass, rel_tol=1e-6, abs_tol=1e-12)


@settings(max_examples=150, deadline=None)
@given(pair_lists, factors, alphas)
def test_complementary_operators(pairs, k, alpha):
    """`>=` passes exactly when `<` fails (both say: the lower bound is at or above k)."""
    ge, lt = ratio_decision(pairs, ">=", k, alpha=alpha), ratio_decision(pairs, "<", k, alpha=alpha)
    gt, le = ratio_decision(pairs, ">", k, alpha=alpha), ratio_decision(pairs, "<=", k, alpha=alpha)
    assert (ge.verdict is Status.PASS) == (lt.verdict is Status.FAIL)
    assert (gt.verdict is Status.PASS) == (le.verdict is Status.FAIL)
    assert (ge.verdict is Status.INCONCLUSIVE) == (lt.verdict is Status.INCONCLUSIVE)


@settings(max_examples=150, deadline=None)
@given(pair_lists, st.sampled_from(list(OPS)), factors, alphas)
def test_p_values_agree_with_the_verdict(pairs, op, k, alpha):
    d = ratio_decision(pairs, op, k, alpha=alpha)
    assume(far_from_ties(d, k))
    assume(min(abs(d.p_pass - alpha), abs(d.p_fail - alpha)) > 1e-9)
    assert (d.verdict is Status.PASS) == (d.p_pass <= alpha)
    assert (d.verdict is Status.FAIL) == (d.p_fail <= alpha)
    assert d.level == 1 - alpha


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(min_value=10.0, max_value=20.0), min_size=2, max_size=10), st.floats(-5.0, 5.0))
def test_shifting_an_absolute_statistic_shifts_the_interval(xs, shift):
    d = absolute_decision(xs, "<=", 15.0)
    s = absolute_decision([x + shift for x in xs], "<=", 15.0 + shift)
    assume(abs(d.high - 15.0) > 1e-6 and abs(d.low - 15.0) > 1e-6)
    assert s.verdict is d.verdict


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=1, max_size=8), alphas)
def test_holm_lies_between_bonferroni_and_no_correction(ps, alpha):
    r = holm(ps, alpha)
    m = len(ps)
    for p, rejected, level in zip(ps, r.rejected, r.alphas):
        if p <= alpha / m:
            assert rejected
        if rejected:
            assert p <= alpha and p <= level
        assert alpha / m <= level <= alpha
