"""Verdicts on a statistic *of* per-run values: their spread (`stddev`),
their extremes (`min`, `max`) and their percentiles (`p50`/`median`, `p90`,
`p99`), each decided with a one-sided (1 - alpha) interval on the quantity
of the run-to-run distribution it names; `mean` is `absolute_decision`.

With n per-run values x_1..x_n (sorted x_(1) <= ... <= x_(n)), mean m,
sample sd s and level alpha:

- **stddev**, the run-to-run standard deviation sigma (normal runs): the
  chi-square bounds s sqrt((n-1) / chi2_{1-alpha, n-1}) <= sigma <=
  s sqrt((n-1) / chi2_{alpha, n-1}). `stddev(x) <= k` PASSes when the upper
  bound is at or below k, FAILs when the lower is above; needs n >= 2.
- **pQ** (median = p50), the Q-th percentile xi of the runs' distribution
  (distribution-free, order statistics): x_(l) <= xi <= x_(u), l the
  largest rank with P(Binomial(n, Q) >= l) >= 1 - alpha, u the smallest
  with P(Binomial(n, Q) <= u - 1) >= 1 - alpha; a bound no rank reaches is
  unbounded. So an upper bound on p90 needs n >= 29 runs, on p99 n >= 299
  (`fewest_runs`), and below that `pQ(x) <= k` can FAIL but never PASS.
- **min** (max mirrors it), "how low a run of this configuration goes": a
  run measured beyond k decides exactly (the lowest run is at most that
  run: `min(x) >= k` FAILs naming it, `min(x) <= k` PASSes); otherwise the
  one-sided normal tolerance bound m - K s (m + K s for max), below which
  at most 5% of runs fall with confidence 1 - alpha (K from the noncentral
  t, `tolerance_factor`), decides the other side (`min(x) >= k` PASSes when
  it is at or above k); needs n >= 2 for that side.

Pure: the binomial tails are exact sums (math.comb), chi-square and t
through specdsl.verdict._dist (scipy on first use).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from specdsl import stats
from specdsl.verdict import _dist
from specdsl.verdict.decision import (
    MAX,
    MIN,
    OPS,
    PERCENTILE,
    STDDEV,
    Decision,
    Status,
    _check_args,
    _interval_text,
    fmt,
    level_text,
)

QUANTILES = {"p50": 0.5, "median": 0.5, "p90": 0.9, "p99": 0.99}
FUNCTIONS = ("stddev", "min", "max", *QUANTILES)


def quantile_of(func: str) -> float | None:
    """The quantile (0..1) of `median` or any percentile `pNN` / `pNN.N`, else None."""
    from specdsl.stats import percentile_of

    if func in QUANTILES:
        return QUANTILES[func]
    q = percentile_of(func)
    return q / 100.0 if q is not None else None


def _binom_cdf(k: int, n: int, p: float) -> float:
    """P(Binomial(n, p) <= k), an exact sum."""
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    return math.fsum(math.comb(n, i) * p**i * (1.0 - p) ** (n - i) for i in range(k + 1))


def quantile_ranks(n: int, q: float, alpha: float) -> tuple[int | None, int | None]:
    """(l, u): 1-based ranks of the order statistics that bound the q-th
    quantile from below and from above at one-sided level 1 - alpha; None
    where no rank of n values reaches that level."""
    low = None
    for rank in range(n, 0, -1):  # P(Bin >= rank) = 1 - P(Bin <= rank - 1)
        if 1.0 - _binom_cdf(rank - 1, n, q) >= 1.0 - alpha:
            low = rank
            break
    high = None
    for rank in range(1, n + 1):
        if _binom_cdf(rank - 1, n, q) >= 1.0 - alpha:
            high = rank
            break
    return low, high


def fewest_runs(func: str, op: str, alpha: float = 0.05) -> int:
    """The fewest per-run values at which `func(x) OP k` can PASS at level
    1 - alpha (whatever the values): what validate holds `runs` against."""
    side = OPS[op][0] if op in OPS else 1
    if quantile_of(func) is not None:
        q = quantile_of(func)
        n = 1
        while n < 100_000:
            low, high = quantile_ranks(n, q, alpha)
            if (high if side < 0 else low) is not None:
                return n
            n += 1
        return n
    if func in ("min", "max"):
        # min(x) <= k (max(x) >= k) passes on one run beyond k; the other side needs a prediction bound
        exact_side = -1 if func == "min" else 1
        return 1 if side == exact_side else 2
    return 2  # stddev, mean: a spread needs two values


COVERAGE = 0.95  # the share of runs a tolerance bound (min, max) covers


def tolerance_factor(n: int, coverage: float, alpha: float) -> float:
    """K of the one-sided normal tolerance bound m - K s: with confidence
    1 - alpha, at least `coverage` of the distribution lies above it.
    K = t'_{1-alpha}(n - 1, z_coverage sqrt(n)) / sqrt(n), t' the noncentral t."""
    nc = _dist.norm_quantile(coverage) * math.sqrt(n)
    return _dist.nct_quantile(1.0 - alpha, n - 1, nc) / math.sqrt(n)


def _method(func: str, alpha: float) -> str:
    level = level_text(1.0 - alpha)
    if func == STDDEV:
        return f"chi-square interval on the sd of runs, one-sided, {level}"
    if func in (MIN, MAX):
        return f"the runs' {func}, and a normal tolerance bound on {COVERAGE:.0%} of runs, one-sided, {level}"
    return f"order-statistic (binomial) interval on the {func} of runs, distribution-free, one-sided, {level}"


def _error(func, op, k, n, alpha, reason) -> Decision:
    nan = math.nan
    return Decision(Status.ERROR, nan, nan, nan, 1.0 - alpha, n, k, op, None, _method(func, alpha), reason + ": ERROR",
                    statistic=_statistic(func))


def _statistic(func: str) -> str:
    return func if func in (STDDEV, MIN, MAX) else PERCENTILE


def _rule(op: str, low: float, high: float, k: float) -> Status:
    """PASS/FAIL/INCONCLUSIVE from one-sided bounds, as the t verdicts rule."""
    side, strict = OPS[op]
    if side > 0:
        if (low > k) if strict else (low >= k):
            return Status.PASS
        if (high <= k) if strict else (high < k):
            return Status.FAIL
    else:
        if (high < k) if strict else (high <= k):
            return Status.PASS
        if (low >= k) if strict else (low > k):
            return Status.FAIL
    return Status.INCONCLUSIVE


def _holds(op: str, x: float, k: float) -> bool:
    return {">=": x >= k, ">": x > k, "<=": x <= k, "<": x < k}[op]


def per_run_decision(func: str, values: Sequence[float], op: str, threshold: float, *, alpha: float = 0.05,
                     labels: Sequence[str] | None = None) -> Decision:
    """The verdict of `func(x) OP threshold` over the per-run values of x
    (`func` one of FUNCTIONS); `labels` name the runs in a detail (run 1,
    run 2, ... by default)."""
    _check_args(op, alpha)
    if func not in FUNCTIONS and quantile_of(func) is None:
        raise ValueError(f"function {func!r}: one of {', '.join(FUNCTIONS)}")
    n = len(values)
    k = float(threshold)
    if not math.isfinite(k):
        return _error(func, op, k, n, alpha, f"threshold {fmt(k)} is not finite")
    xs = [float(v) for v in values]
    names = list(labels) if labels is not None else [f"run {i}" for i in range(1, n + 1)]
    for name, v in zip(names, xs):
        if not math.isfinite(v):
            return _error(func, op, k, n, alpha, f"{name}: the value is not finite ({v})")
    need = fewest_runs(func, op, alpha)
    if n < 1 or (func == STDDEV and n < 2):
        return _error(func, op, k, n, alpha, f"not enough runs: {n} (a spread needs 2)")
    if func == STDDEV:
        return _spread(xs, op, k, alpha)
    if func in (MIN, MAX):
        return _extreme(func, xs, names, op, k, alpha)
    return _quantile(func, xs, op, k, alpha, need)


def _spread(xs: list[float], op: str, k: float, alpha: float) -> Decision:
    n = len(xs)
    s = stats.stdev(xs)
    df = n - 1
    chi_low, chi_high = _dist.chi2_quantile(alpha, df), _dist.chi2_quantile(1.0 - alpha, df)
    low, high = s * math.sqrt(df / chi_high), s * math.sqrt(df / chi_low)
    verdict = _rule(op, low, high, k)
    if k > 0:
        q = df * s * s / (k * k)
        below, above = _dist.chi2_cdf(q, df), 1.0 - _dist.chi2_cdf(q, df)
        p_pass, p_fail = (below, above) if OPS[op][0] < 0 else (above, below)
    else:
        p_pass = p_fail = math.nan
    shown_low, shown_high = _shown(verdict, op, low, high, floor=0.0)
    detail = f"sd of runs {fmt(s)} {_interval_text(shown_low, shown_high, floor=0.0)} {op} {fmt(k)}, n={n} runs: {verdict.name}"
    return Decision(verdict, s, shown_low, shown_high, 1.0 - alpha, n, k, op, None, _method(STDDEV, alpha), detail,
                    p_pass, p_fail, statistic=STDDEV)


def _shown(verdict: Status, op: str, low: float, high: float, *, floor: float = -math.inf) -> tuple[float, float]:
    """The bounds a verdict shows: the deciding one for PASS/FAIL, both otherwise."""
    side = OPS[op][0]
    if verdict is Status.PASS:
        return (low, math.inf) if side > 0 else (floor, high)
    if verdict is Status.FAIL:
        return (floor, high) if side > 0 else (low, math.inf)
    return low, high


def _extreme(func: str, xs: list[float], names: list[str], op: str, k: float, alpha: float) -> Decision:
    n = len(xs)
    observed = min(xs) if func == MIN else max(xs)
    side = OPS[op][0]
    method = _method(func, alpha)
    inf = math.inf
    level = 1.0 - alpha
    seen = (-inf, observed) if func == MIN else (observed, inf)  # what the runs show for certain
    if side == (-1 if func == MIN else 1):
        # min(x) <= k, max(x) >= k: one run beyond k shows it exactly
        hits = [f"{name}: {fmt(v)}" for name, v in zip(names, xs) if _holds(op, v, k)]
        if hits:
            detail = f"{func} of runs {fmt(observed)} {op} {fmt(k)}, n={n} runs: PASS (exact: {'; '.join(hits)})"
            return Decision(Status.PASS, observed, *seen, level, n, k, op, None, method, detail, 0.0, 1.0, statistic=func)
    else:
        # min(x) >= k, max(x) <= k: one run on the wrong side of k refutes it exactly
        misses = [f"{name}: {fmt(v)}" for name, v in zip(names, xs) if not _holds(op, v, k)]
        if misses:
            detail = f"{func} of runs {fmt(observed)} {op} {fmt(k)}, n={n} runs: FAIL (exact: {'; '.join(misses)})"
            return Decision(Status.FAIL, observed, *seen, level, n, k, op, None, method, detail, 1.0, 0.0, statistic=func)
    if n < 2:
        detail = (f"{func} of runs {fmt(observed)} {op} {fmt(k)}, n=1 run: INCONCLUSIVE (a tolerance bound "
                  "needs 2 runs)")
        return Decision(Status.INCONCLUSIVE, observed, -inf, inf, level, n, k, op, None, method, detail, statistic=func)
    m, s = stats.mean(xs), stats.stdev(xs)
    half = tolerance_factor(n, COVERAGE, alpha) * s
    bound = m - half if func == MIN else m + half  # how far 95% of runs may go, at this level
    # the bound decides the side that no observed run can: the runs stay beyond it
    if func == MIN:
        low, high = bound, observed
        stays = _holds(op, bound, k) if side > 0 else not _holds(op, bound, k)
    else:
        low, high = observed, bound
        stays = _holds(op, bound, k) if side < 0 else not _holds(op, bound, k)
    if not stays:
        verdict = Status.INCONCLUSIVE
    else:
        verdict = Status.PASS if side == (1 if func == MIN else -1) else Status.FAIL
    detail = (f"{func} of runs {fmt(observed)}, {COVERAGE:.0%} of runs {'down to' if func == MIN else 'up to'} {fmt(bound)}"
              f" {op} {fmt(k)}, n={n} runs: {verdict.name}")
    return Decision(verdict, observed, low, high, level, n, k, op, None, method, detail, statistic=func)


def _quantile(func: str, xs: list[float], op: str, k: float, alpha: float, need: int) -> Decision:
    n = len(xs)
    q = quantile_of(func)
    ordered = sorted(xs)
    estimate = stats.percentile(ordered, q * 100)
    l_rank, u_rank = quantile_ranks(n, q, alpha)
    low = ordered[l_rank - 1] if l_rank is not None else -math.inf
    high = ordered[u_rank - 1] if u_rank is not None else math.inf
    verdict = _rule(op, low, high, k)
    shown_low, shown_high = _shown(verdict, op, low, high)
    detail = f"{func} of runs {fmt(estimate)} {_interval_text(shown_low, shown_high)} {op} {fmt(k)}, n={n} runs: {verdict.name}"
    if verdict is Status.INCONCLUSIVE and n < need:
        detail += f" (a PASS needs at least {need} runs)"
    return Decision(verdict, estimate, shown_low, shown_high, 1.0 - alpha, n, k, op, None, _method(func, alpha), detail,
                    statistic=PERCENTILE)
