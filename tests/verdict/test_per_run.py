"""Statistics of per-run values (specdsl.verdict.per_run): each decided with
its own interval, checked against closed forms and a simulation of its
false-pass rate at the boundary."""

from __future__ import annotations

import math
import random

import pytest

from specdsl.verdict import Status
from specdsl.verdict.per_run import fewest_runs, per_run_decision, quantile_ranks

STEADY = [1000.0, 1010.0, 990.0, 1005.0, 995.0]


def test_stddev_is_the_spread_of_runs_not_zero():
    # the issue: stddev(output_throughput) <= k passed whatever the runs (a per-run spread of 0)
    wide = per_run_decision("stddev", [100, 150, 60, 120, 80], "<=", 5)
    assert wide.verdict is Status.FAIL and wide.estimate == pytest.approx(34.93, abs=0.01)
    assert "sd of runs 34.93" in wide.detail and "n=5 runs" in wide.detail
    narrow = per_run_decision("stddev", STEADY, "<=", 20)
    assert narrow.verdict is Status.PASS
    # the chi-square upper bound, in closed form: s sqrt((n-1) / chi2_{0.05, 4}), chi2_{0.05, 4} = 0.710723
    s = narrow.estimate
    assert narrow.high == pytest.approx(s * math.sqrt(4 / 0.710723), rel=1e-5)
    assert per_run_decision("stddev", STEADY, "<=", 10).verdict is Status.INCONCLUSIVE
    assert per_run_decision("stddev", [1000.0], "<=", 10).verdict is Status.ERROR


def test_min_is_the_lowest_run_not_the_mean():
    # the mean (70) is above 50, the lowest run is not: exact FAIL naming it
    d = per_run_decision("min", [100, 100, 10], ">=", 50)
    assert d.verdict is Status.FAIL and d.estimate == 10 and "run 3: 10" in d.detail
    # every run above, and the 95%/95% tolerance bound above too: PASS. K = 4.2027 at n = 5
    # (the one-sided normal tolerance factor of the tables, e.g. NIST/SEMATECH 7.2.6.3)
    ok = per_run_decision("min", STEADY, ">=", 900)
    m, s = sum(STEADY) / 5, 7.905694150420948
    assert ok.verdict is Status.PASS and ok.low == pytest.approx(m - 4.2027 * s, rel=1e-4)
    # every run above, but 5% of runs could go below: undecided
    assert per_run_decision("min", STEADY, ">=", 985).verdict is Status.INCONCLUSIVE
    # max mirrors min
    assert per_run_decision("max", [1, 2, 30], "<=", 10).verdict is Status.FAIL
    assert per_run_decision("max", STEADY, ">=", 1008).verdict is Status.PASS  # a run reached it: exact


def test_percentile_bounds_are_order_statistics():
    # median at n=5: P(Bin(5, .5) >= 1) = 31/32 >= .95 gives the lower bound x_(1); x_(5) the upper
    assert quantile_ranks(5, 0.5, 0.05) == (1, 5)
    assert quantile_ranks(4, 0.5, 0.05) == (None, None)
    # an upper bound on p90 needs 29 runs (0.9^29 < 0.05 < 0.9^28), on p99 299
    assert fewest_runs("p90", "<=") == 29 and fewest_runs("p99", "<=") == 299 and fewest_runs("p50", "<=") == 5
    assert fewest_runs("p90", ">=") == 2 and fewest_runs("stddev", "<=") == 2 and fewest_runs("min", "<=") == 1
    d = per_run_decision("p90", STEADY, "<=", 2000)
    assert d.verdict is Status.INCONCLUSIVE and "a PASS needs at least 29 runs" in d.detail
    assert per_run_decision("p90", STEADY, "<=", 500).verdict is Status.FAIL
    assert per_run_decision("median", STEADY, ">=", 900).verdict is Status.PASS


@pytest.mark.parametrize("func, op", [("stddev", "<="), ("stddev", ">="), ("min", ">="), ("max", "<="), ("median", ">=")])
def test_false_pass_rate_at_the_boundary_is_at_most_alpha(func, op):
    rng = random.Random(34)
    n, trials, sigma = 6, 1500, 10.0
    z95 = 1.6448536269514722
    # the threshold where the claim is just false: sd = sigma; the runs' 5% (95%) point; the median
    k = {"stddev": sigma, "min": 1000 - z95 * sigma, "max": 1000 + z95 * sigma, "median": 1000.0}[func]
    passes = 0
    for _ in range(trials):
        xs = [rng.gauss(1000, sigma) for _ in range(n)]
        passes += per_run_decision(func, xs, op, k, alpha=0.05).verdict is Status.PASS
    # binomial sd at p = 0.05 over 1500 trials is 0.0056: 0.05 + 3 sd
    assert passes / trials <= 0.067, passes / trials
