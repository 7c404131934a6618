"""specdsl.stats: one definition of each statistic, checked against known
values, against the standard library, and against numpy when it is
installed (bit for bit for percentiles and the median, which follow its
algorithm)."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from specdsl import stats


def test_percentile_interpolates_linearly_between_closest_ranks():
    values = [4.0, 1.0, 3.0, 2.0]  # unsorted on purpose
    assert stats.percentile(values, 0) == 1.0  # the minimum
    assert stats.percentile(values, 100) == 4.0  # the maximum
    assert stats.percentile(values, 25) == 1.75  # h = 3 * 0.25 = 0.75: 1 + 0.75 * (2 - 1)
    assert stats.percentile(values, 50) == 2.5
    assert stats.percentile(values, 90) == pytest.approx(3.7)  # h = 2.7: 3 + 0.7 * (4 - 3)
    # the textbook example of the (C = 1) closest-ranks method: rank 2.6 of 5
    assert stats.percentile([15, 20, 35, 40, 50], 40) == pytest.approx(29.0)
    assert stats.percentile([7.0], 99) == 7.0
    assert stats.percentiles([15, 20, 35, 40, 50], (0, 40, 100)) == pytest.approx([15.0, 29.0, 50.0])


def test_percentile_is_not_nearest_rank():
    # nearest rank would give 3 or 4; lower/higher/midpoint methods 3, 4, 3.5
    assert stats.percentile([1, 2, 3, 4], 75) == 3.25


def test_median_mean_and_both_standard_deviations_on_known_values():
    assert stats.median([3, 1, 2]) == 2.0
    assert stats.median([4, 1, 3, 2]) == 2.5
    assert stats.mean([1, 2, 3, 4]) == 2.5
    data = [2, 4, 4, 4, 5, 5, 7, 9]  # mean 5, squared deviations sum to 32
    assert stats.pstdev(data) == 2.0  # population: sqrt(32 / 8)
    assert stats.stdev(data) == pytest.approx(math.sqrt(32 / 7))  # sample: sqrt(32 / (n - 1))
    assert stats.stdev([1.0, 3.0]) == pytest.approx(math.sqrt(2))


@pytest.mark.parametrize(
    "call",
    [
        lambda: stats.percentile([], 50),
        lambda: stats.percentile([1.0], 101),
        lambda: stats.percentile([1.0], -1),
        lambda: stats.median([]),
        lambda: stats.mean([]),
        lambda: stats.pstdev([]),
        lambda: stats.stdev([1.0]),  # a sample standard deviation needs two values
    ],
)
def test_too_few_values_is_an_error_not_a_number(call):
    with pytest.raises(ValueError):
        call()


def _samples():
    rng = random.Random(7)
    for n in (1, 2, 3, 5, 10, 101, 1000):
        for scale in (1e-3, 1.0, 1e3):
            yield [rng.expovariate(0.1) * scale for _ in range(n)]


def test_agrees_with_the_standard_library():
    for values in _samples():
        assert stats.mean(values) == pytest.approx(statistics.fmean(values), rel=1e-12)
        assert stats.median(values) == pytest.approx(statistics.median(values), rel=1e-12)
        assert stats.pstdev(values) == pytest.approx(statistics.pstdev(values), rel=1e-9, abs=1e-12)
        if len(values) > 1:
            assert stats.stdev(values) == pytest.approx(statistics.stdev(values), rel=1e-9)
            # statistics' "inclusive" quantiles are the same closest-ranks interpolation
            cuts = statistics.quantiles(values, n=100, method="inclusive")
            for q in (1, 10, 50, 90, 99):
                assert stats.percentile(values, q) == pytest.approx(cuts[q - 1], rel=1e-12)


def test_agrees_with_numpy():
    np = pytest.importorskip("numpy")
    for values in _samples():
        for q in (0, 1, 10, 25, 33.3, 50, 90, 99, 99.9, 100):
            assert stats.percentile(values, q) == float(np.percentile(values, q))
        assert stats.median(values) == float(np.median(values))
        assert stats.mean(values) == pytest.approx(float(np.mean(values)), rel=1e-12)
        assert stats.pstdev(values) == pytest.approx(float(np.std(values)), rel=1e-9, abs=1e-12)
        if len(values) > 1:
            assert stats.stdev(values) == pytest.approx(float(np.std(values, ddof=1)), rel=1e-9)


def test_bench_and_assertions_use_these_definitions():
    from specdsl.apply.checks import _FUNCS
    from specdsl.bench.stats import summarize

    values = [5.0, 1.0, 9.0, 2.0, 2.0, 7.0]
    summary = summarize(values)
    assert summary["p90"] == stats.percentile(values, 90) == _FUNCS["p90"](values)
    assert summary["p99"] == stats.percentile(values, 99) == _FUNCS["p99"](values)
    assert summary["median"] == stats.median(values) == _FUNCS["median"](values)
    assert summary["mean"] == stats.mean(values) == _FUNCS["mean"](values)
    assert summary["std"] == stats.pstdev(values)  # vLLM's std_*_ms: population
    assert _FUNCS["stddev"](values) == stats.stdev(values)  # an assertion's stddev(): sample (n - 1)
