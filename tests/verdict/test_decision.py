"""ratio_decision and absolute_decision: hand-computed t intervals, the
PASS/FAIL/INCONCLUSIVE rule at and around the boundary, each operator's
direction and strictness, and ERROR with its reason.

Hand computation uses the closed forms of Student's t with 1 and 2
degrees of freedom (no table, no scipy): df=1 is Cauchy, F^-1(p) =
tan(pi (p - 1/2)); df=2 has F(t) = 1/2 + t / (2 sqrt(2 + t^2)) and
F^-1(p) = (2p - 1) / sqrt(2 p (1 - p)).
"""

from __future__ import annotations

import math

import pytest

from specdsl.verdict import Decision, Status, absolute_decision, noise_of, ratio_decision


def t2_quantile(p: float) -> float:
    return (2 * p - 1) / math.sqrt(2 * p * (1 - p))


def t2_sf(t: float) -> float:
    return 0.5 - t / (2 * math.sqrt(2 + t * t))


def pairs_with_log_ratios(ds, base=100.0):
    return [(base, base * math.exp(d)) for d in ds]


# d = 0.01, 0.02, 0.03: mean 0.02, sample sd 0.01, n = 3
THREE = pairs_with_log_ratios([0.01, 0.02, 0.03])
SE3 = 0.01 / math.sqrt(3)
LOW3 = 0.02 - t2_quantile(0.95) * SE3  # 0.02 - 2.919986 * 0.0057735 = 0.0031415
HIGH3 = 0.02 + t2_quantile(0.95) * SE3  # 0.0368585


def test_the_hand_computed_interval_of_three_pairs():
    assert t2_quantile(0.95) == pytest.approx(2.919986, abs=1e-6)  # the table's value
    assert LOW3 == pytest.approx(0.0031415, abs=1e-7)
    d = ratio_decision(THREE, ">=", 1.0)
    assert d.verdict is Status.PASS
    assert d.estimate == pytest.approx(math.exp(0.02), rel=1e-12)  # the geometric-mean ratio
    assert d.low == pytest.approx(math.exp(LOW3), rel=1e-9)  # 1.003146
    assert d.high == math.inf
    assert (d.level, d.n, d.threshold, d.op) == (0.95, 3, 1.0, ">=")
    # p-value of "not >= 1": P(T_2 >= 0.02 / SE) = 0.5 - t / (2 sqrt(2 + t^2)) = 0.037090
    assert d.p_pass == pytest.approx(t2_sf(0.02 / SE3), rel=1e-7)
    assert d.p_pass == pytest.approx(0.037090, abs=1e-6)
    assert d.p_fail == pytest.approx(1 - d.p_pass, rel=1e-9)
    assert d.detail == "ratio 1.02 [1.003, inf) >= 1, n=3 pairs: PASS"
    assert d.method == "ratio: geometric mean of the pair ratios; paired t on log ratios, one-sided, 95%"


def test_two_pairs_one_degree_of_freedom():
    d = ratio_decision(pairs_with_log_ratios([0.0, 0.04]), ">=", 1.0, alpha=0.1)
    # mean 0.02, sd 0.04 / sqrt(2), se 0.02, t_{0.9, 1} = tan(0.4 pi) = 3.0777
    low = 0.02 - math.tan(math.pi * 0.4) * 0.02
    assert d.verdict is Status.INCONCLUSIVE
    assert d.low == pytest.approx(math.exp(low), rel=1e-9)
    assert d.high == pytest.approx(math.exp(0.02 + math.tan(math.pi * 0.4) * 0.02), rel=1e-9)
    assert d.level == 0.9


@pytest.mark.parametrize(
    "k, verdict",
    [
        (1.0, Status.PASS),
        (math.exp(LOW3 - 1e-6), Status.PASS),  # just below the lower bound: the whole interval passes
        (math.exp(LOW3 + 1e-6), Status.INCONCLUSIVE),  # just above: the interval straddles it
        (math.exp(0.02), Status.INCONCLUSIVE),  # at the estimate
        (math.exp(HIGH3 - 1e-6), Status.INCONCLUSIVE),
        (math.exp(HIGH3 + 1e-6), Status.FAIL),  # above the upper bound: the whole interval fails
        (1.05, Status.FAIL),
    ],
)
def test_pass_fail_inconclusive_around_the_boundary(k, verdict):
    assert ratio_decision(THREE, ">=", k).verdict is verdict


def test_each_verdict_shows_the_bound_that_decided_it():
    inconclusive = ratio_decision(THREE, ">=", 1.02)
    assert (inconclusive.low, inconclusive.high) == pytest.approx((math.exp(LOW3), math.exp(HIGH3)), rel=1e-9)
    assert inconclusive.detail == "ratio 1.02 [1.003, 1.038] >= 1.02, n=3 pairs: INCONCLUSIVE"
    failed = ratio_decision(THREE, ">=", 1.05)
    assert failed.low == 0.0 and failed.high == pytest.approx(math.exp(HIGH3), rel=1e-9)
    assert failed.detail == "ratio 1.02 (0, 1.038] >= 1.05, n=3 pairs: FAIL"
    assert "detectable at this n" in inconclusive.line() and inconclusive.detail in inconclusive.line()
    assert ratio_decision(THREE, ">=", 1.0).line() == "ratio 1.02 [1.003, inf) >= 1, n=3 pairs: PASS (ratio: geometric mean of the pair ratios; paired t on log ratios, one-sided, 95%)"


def test_the_direction_of_each_operator():
    up = pairs_with_log_ratios([0.05, 0.06, 0.055, 0.058])  # clearly about +5.7%
    assert ratio_decision(up, ">=", 1.03).verdict is Status.PASS
    assert ratio_decision(up, ">", 1.03).verdict is Status.PASS
    assert ratio_decision(up, "<=", 1.03).verdict is Status.FAIL
    assert ratio_decision(up, "<", 1.03).verdict is Status.FAIL
    assert ratio_decision(up, "<=", 1.10).verdict is Status.PASS
    assert ratio_decision(up, ">=", 1.10).verdict is Status.FAIL
    # `<=` shows the upper bound when it passes, the lower one when it fails
    ok = ratio_decision(up, "<=", 1.10)
    assert ok.low == 0.0 and 1.05 < ok.high < 1.10
    bad = ratio_decision(up, "<=", 1.03)
    assert 1.03 < bad.low < 1.06 and bad.high == math.inf
    assert ok.p_pass <= 0.05 and bad.p_fail <= 0.05


def test_strict_and_non_strict_operators_differ_only_at_equality():
    exact = [(100.0, 103.0), (200.0, 206.0)]  # both ratios exactly 1.03 in floating point: sd 0
    assert ratio_decision(exact, ">=", 1.03).verdict is Status.PASS
    assert ratio_decision(exact, ">", 1.03).verdict is Status.FAIL
    assert ratio_decision(exact, "<=", 1.03).verdict is Status.PASS
    assert ratio_decision(exact, "<", 1.03).verdict is Status.FAIL
    d = ratio_decision(exact, ">=", 1.03)
    assert (d.p_pass, d.p_fail) == (0.0, 1.0)
    assert d.mde == 1.0  # no noise: any effect is detectable


@pytest.mark.parametrize(
    "pairs, k, reason",
    [
        ([], 1.0, "not enough pairs: 0"),
        ([(100.0, 101.0)], 1.0, "not enough pairs: 1"),
        ([(100.0, 101.0), (0.0, 100.0)], 1.0, "pair 2: a value <= 0 (the baseline's 0)"),
        ([(100.0, -1.0), (100.0, 100.0)], 1.0, "pair 1: a value <= 0 (the candidate's -1)"),
        ([(100.0, math.nan), (100.0, 100.0)], 1.0, "pair 1: the candidate value is not finite"),
        ([(math.inf, 1.0), (100.0, 100.0)], 1.0, "pair 1: the baseline value is not finite"),
        ([(100.0, 101.0), (100.0, 102.0)], 0.0, "threshold 0: a ratio test needs a positive factor"),
        ([(100.0, 101.0), (100.0, 102.0)], math.nan, "threshold nan"),
    ],
)
def test_error_says_why(pairs, k, reason):
    d = ratio_decision(pairs, ">=", k)
    assert d.verdict is Status.ERROR
    assert d.detail.startswith(reason) and d.detail.endswith(": ERROR")
    assert d.mde is None and math.isnan(d.estimate) and math.isnan(d.low) and math.isnan(d.p_pass)


def test_programming_errors_raise():
    with pytest.raises(ValueError, match="operator"):
        ratio_decision(THREE, "==", 1.0)
    with pytest.raises(ValueError, match="alpha"):
        ratio_decision(THREE, ">=", 1.0, alpha=0.0)
    with pytest.raises(ValueError, match="alpha"):
        absolute_decision([1.0, 2.0], "<=", 3.0, alpha=0.7)


# values 10, 12, 14, 16, 18: mean 14, sd sqrt(10), se sqrt(2), t_{0.95, 4} = 2.131847
ABS = [10.0, 12.0, 14.0, 16.0, 18.0]
ABS_LOW, ABS_HIGH = 14 - 2.131847 * math.sqrt(2), 14 + 2.131847 * math.sqrt(2)  # 10.98510, 17.01490


@pytest.mark.parametrize(
    "op, threshold, verdict",
    [
        ("<=", 17.5, Status.PASS),
        ("<=", 17.0, Status.INCONCLUSIVE),
        ("<=", 10.9, Status.FAIL),
        ("<", 17.5, Status.PASS),
        (">=", 10.9, Status.PASS),
        (">=", 11.1, Status.INCONCLUSIVE),
        (">", 17.1, Status.FAIL),
    ],
)
def test_absolute_decision_on_a_hand_computed_interval(op, threshold, verdict):
    d = absolute_decision(ABS, op, threshold)
    assert d.verdict is verdict
    assert d.estimate == 14.0 and d.n == 5


def test_absolute_bounds_and_text():
    d = absolute_decision(ABS, "<=", 17.5)
    assert d.low == -math.inf and d.high == pytest.approx(ABS_HIGH, abs=1e-5)
    assert d.detail == "mean 14 (-inf, 17.01] <= 17.5, n=5 runs: PASS"
    assert d.method == "t on the mean of runs, one-sided, 95%"
    i = absolute_decision(ABS, ">=", 11.1)
    assert (i.low, i.high) == pytest.approx((ABS_LOW, ABS_HIGH), abs=1e-5)
    assert i.mde is not None and i.mde > 0  # in the statistic's units
    assert absolute_decision([5.0], "<=", 1.0).verdict is Status.ERROR
    assert absolute_decision([5.0, math.nan], "<=", 1.0).detail.startswith("run 2: the value is not finite")
    assert absolute_decision([5.0, 6.0], "<=", math.inf).verdict is Status.ERROR


def test_noise_of_is_the_sd_of_log_ratios():
    assert noise_of(THREE) == pytest.approx(0.01, rel=1e-9)
    with pytest.raises(ValueError, match="needs 2"):
        noise_of(THREE[:1])
    with pytest.raises(ValueError, match="<= 0"):
        noise_of([(1.0, 0.0), (1.0, 1.0)])


def test_a_decision_is_a_frozen_value():
    d = ratio_decision(THREE, ">=", 1.0)
    assert isinstance(d, Decision) and d.alpha == pytest.approx(0.05)
    with pytest.raises(AttributeError):
        d.verdict = Status.FAIL  # type: ignore[misc]


def test_a_detectable_effect_is_written_as_people_write_percentages():
    from specdsl.verdict.decision import percent

    assert [percent(x) for x in (220.4, 21.3, 2.13, 0.351)] == ["220", "21", "2.1", "0.35"]
    d = ratio_decision([(100, 60), (100, 180)], ">=", 1.0)  # two far-apart pairs: undecided, a huge detectable effect
    assert d.verdict.name == "INCONCLUSIVE" and d.mde > 2.0
    assert "e+" not in d.line() and f"detectable at this n: {percent((d.mde - 1) * 100)}% beyond the threshold" in d.line()


def test_small_and_large_numbers_never_print_an_exponent():
    """A report once read `5e-06` for a tiny sd and `7e-05` for a percentage
    (tests/report asserts no exponent anywhere on its page; it failed only
    when a run happened to make such a number)."""
    from specdsl.report.page import num
    from specdsl.verdict.decision import fmt, percent

    assert [fmt(x) for x in (5e-6, -1.234e-7, 0.01234, 1.5e16)] == ["0.000005", "-0.0000001234", "0.01234", "15000000000000000"]
    assert [percent(x) for x in (0.00007, 0.000123)] == ["0.00007", "0.00012"]
    assert [num(x) for x in (7e-5, 2.5e-9)] == ["0.00007", "0.0000000025"]
