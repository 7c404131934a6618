"""The statistics specdsl computes, each defined once: the benchmark
client's metrics (`specdsl.bench.stats`) and the functions assertions apply
(`specdsl.apply.checks`) both use these.

Definitions (numpy's, which `vllm bench serve` uses for its metrics):

- `percentile(values, q)`, q in 0..100: linear interpolation between the
  closest ranks, numpy.percentile's default (`method="linear"`, Hyndman and
  Fan's type 7). With the values sorted, x[0] .. x[n-1], the position is
  h = (n - 1) * q / 100 and the result x[floor(h)] + (h - floor(h)) *
  (x[floor(h) + 1] - x[floor(h)]); p0 is the minimum, p100 the maximum.
  Computed the way numpy computes it, so the results agree to the bit.
- `median`: the middle value, or the mean of the two middle ones
  (numpy.median; equal to `percentile(values, 50)` up to rounding).
- `mean`: the arithmetic mean, summed exactly (math.fsum).
- `stdev`: the **sample** standard deviation, dividing by n - 1 (Bessel's
  correction; numpy.std(ddof=1), statistics.stdev): the estimate of the
  spread of a few repeated runs. Needs two values.
- `pstdev`: the **population** standard deviation, dividing by n
  (numpy.std's default, ddof=0): what vLLM reports as `std_ttft_ms` and the
  like, so specdsl's `std_*_ms` metrics are vLLM's.

Every function takes any sequence of numbers, raises ValueError on too few
values (none; one for `stdev`) rather than inventing a number, and returns
a float. Pure: imports nothing from specdsl, and every layer may import it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence


def _floats(values: Iterable[float], what: str, least: int = 1) -> list[float]:
    xs = [float(v) for v in values]
    if len(xs) < least:
        raise ValueError(f"{what} of {len(xs) or 'no'} value{'s' if len(xs) != 1 else ''}")
    return xs


def _sorted(values: Iterable[float], what: str) -> list[float]:
    return sorted(_floats(values, what))


def _lerp(a: float, b: float, t: float) -> float:
    # numpy's _lerp: from the nearer end, so t = 1 gives b exactly
    diff = b - a
    return b - diff * (1.0 - t) if t >= 0.5 else a + diff * t


def _percentile_of_sorted(xs: Sequence[float], q: float) -> float:
    if not 0 <= q <= 100:
        raise ValueError(f"percentile {q} is outside 0..100")
    pos = (len(xs) - 1) * (q / 100.0)
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return _lerp(xs[lo], xs[hi], pos - lo)


def percentile(values: Iterable[float], q: float) -> float:
    """The q-th percentile (0..100): linear interpolation between the
    closest ranks (numpy.percentile's default)."""
    return _percentile_of_sorted(_sorted(values, "percentile"), q)


def percentiles(values: Iterable[float], qs: Iterable[float]) -> list[float]:
    """`percentile(values, q)` for each q, sorting the values once."""
    xs = _sorted(values, "percentile")
    return [_percentile_of_sorted(xs, q) for q in qs]


def median(values: Iterable[float]) -> float:
    """The middle value, or the mean of the two middle values."""
    xs = _sorted(values, "median")
    mid = len(xs) // 2
    return xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2.0


def mean(values: Iterable[float]) -> float:
    """The arithmetic mean (an exactly rounded sum over n)."""
    xs = _floats(values, "mean")
    return math.fsum(xs) / len(xs)


def _squares(xs: Sequence[float]) -> float:
    m = math.fsum(xs) / len(xs)
    return math.fsum((x - m) ** 2 for x in xs)


def stdev(values: Iterable[float]) -> float:
    """Sample standard deviation: divides by n - 1 (numpy.std(ddof=1),
    statistics.stdev). ValueError for fewer than two values."""
    xs = _floats(values, "sample standard deviation", least=2)
    return math.sqrt(_squares(xs) / (len(xs) - 1))


def pstdev(values: Iterable[float]) -> float:
    """Population standard deviation: divides by n (numpy.std's default,
    what vLLM reports as `std_*_ms`)."""
    xs = _floats(values, "population standard deviation")
    return math.sqrt(_squares(xs) / len(xs))


# What a figure shown for a baseline or a candidate is, in one vocabulary:
# diagnose, diff, state show, the verdict line and the report label every
# such number with one of these (docs/statistics.md, "What a figure is").
ARM_MEDIAN = "median of the arm's runs"  # a paired benchmark's arm: per metric, over that arm's runs
RUN_MEDIAN = "median of the benchmark's runs"  # a benchmark measured alone (state's `metrics` of a run)
PAIR_GEOMEAN = "geometric mean of the pair ratios"  # a ratio verdict's estimate: exp(mean(log(B/A)))
MEDIANS_RATIO = "ratio of the arms' medians"  # candidate median / baseline median: not what a verdict decides on
RUN_MEAN = "mean of the runs"  # an absolute verdict's estimate (a t interval on the runs' values)


def significant(x: float, digits: int) -> str:
    """`x` to `digits` significant digits, written as people write numbers:
    never an exponent, whatever its size (`0.000005`, not `5e-06`; a
    verdict line or a report is read, not parsed)."""
    from decimal import Decimal

    return format(Decimal(f"{x:.{digits}g}"), "f")


# `pNN` / `pNN.N`: any percentile strictly between 0 and 100 (`p95`, `p99.9`)
_PERCENTILE = re.compile(r"p(\d+(?:\.\d+)?)")


def percentile_of(func: str) -> float | None:
    """The percentile (0 < q < 100) a function name asks for (`p99.9` ->
    99.9), or None: not a percentile, or one out of range."""
    m = _PERCENTILE.fullmatch(func)
    if not m:
        return None
    q = float(m.group(1))
    return q if 0 < q < 100 else None
