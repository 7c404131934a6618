"""The outlier rule (specdsl/verdict/outliers.py): beyond 3.5 robust sd of
an arm's log values, a floor for arms that agree almost exactly, nothing
singled out from two values."""

from __future__ import annotations

import random

from specdsl.verdict import describe_outliers, outliers


def test_a_cold_run_among_steady_ones_is_flagged_and_only_it():
    values = [30.0, 91.0, 90.0, 89.5, 90.4]
    [(i, z)] = outliers(values)
    assert i == 0 and z > 3.5
    text = describe_outliers(values, "arm B (the candidate)", [f"pair {k}" for k in range(5)])
    assert text.startswith("outlier in arm B (the candidate): pair 0 (30, x0.33 of the median 90")


def test_normal_noise_is_rarely_flagged():
    rng = random.Random(11)
    for cv, most in ((0.02, 0), (0.05, 80)):  # 4,000 clean runs each; about 1% of them at CV 5% (the docstring's figures)
        flagged = sum(len(outliers([100 * (1 + cv * rng.gauss(0, 1)) for _ in range(4)])) for _ in range(1000))
        assert flagged <= most, (cv, flagged)


def test_the_floor_keeps_nearly_equal_runs_quiet_and_two_values_say_nothing():
    assert outliers([100.0, 100.0, 100.0, 109.0]) == []  # 9% off a MAD of 0: within 3.5 x 3%
    assert outliers([100.0, 100.0, 100.0, 112.0]) != []  # 12% off: beyond it
    assert outliers([1.0, 100.0]) == [] and outliers([5.0, 0.0, 5.0, 5.0]) == []
    assert describe_outliers([10.0, 10.1, 9.9], "x") == ""
