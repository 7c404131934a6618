"""Launch and run noise apart: the variance components of per-launch groups
of log values (`variance_components`), and the number of runs per launch
that buys the most precision for the time (`runs_per_launch`).
docs/verdicts.md ("The launch as the unit") gives the method and why."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple


class VarianceComponents(NamedTuple):
    """Run (within-launch) and launch (between-launch) variances of log
    values, with the degrees of freedom of their mean squares."""

    run_var: float
    launch_var: float
    run_df: int
    launch_df: int


def variance_components(groups: Sequence[Sequence[float]]) -> VarianceComponents:
    """The one-way random-effects ANOVA of `groups`, one group per launch
    holding the log values of that launch's runs (log of a throughput, say),
    under the model

        x_ij = mu + L_i + e_ij,   L_i ~ (0, s_L^2) per launch,  e_ij ~ (0, s_r^2) per run.

    With k groups of n_i values, N = sum n_i, group means m_i and grand mean m:

        MSW = sum_i sum_j (x_ij - m_i)^2 / (N - k)          run_df    = N - k
        MSB = sum_i n_i (m_i - m)^2 / (k - 1)               launch_df = k - 1
        n0  = (N - sum_i n_i^2 / N) / (k - 1)               (= n for equal groups of n)
        s_r^2 = MSW,   s_L^2 = max(0, (MSB - MSW) / n0)

    (the method-of-moments estimates: E[MSW] = s_r^2, E[MSB] = s_r^2 + n0 s_L^2).
    The launch variance is floored at 0: a negative difference of mean
    squares says the launches differ less than their runs' noise predicts,
    i.e. no detectable launch effect, not a negative variance (the floor
    biases the estimate slightly upwards near 0). Groups of one value carry
    launch information but no run information.

    ValueError (with the reason) for fewer than 2 groups, an empty group, a
    value that is not finite, or no group with 2 values (no run variance).
    """
    data = [[float(x) for x in g] for g in groups]
    k = len(data)
    if k < 2:
        raise ValueError(f"variance components of {k} launch{'es' if k != 1 else ''}: needs 2")
    for i, g in enumerate(data, 1):
        if not g:
            raise ValueError(f"launch {i} has no runs")
        for x in g:
            if not math.isfinite(x):
                raise ValueError(f"launch {i}: a value that is not finite ({x})")
    sizes = [len(g) for g in data]
    total = sum(sizes)
    run_df, launch_df = total - k, k - 1
    if run_df < 1:
        raise ValueError("no launch has 2 runs: the run variance cannot be told from the launch variance")
    means = [math.fsum(g) / len(g) for g in data]
    grand = math.fsum(x for g in data for x in g) / total
    ssw = math.fsum((x - m) ** 2 for g, m in zip(data, means) for x in g)
    ssb = math.fsum(n * (m - grand) ** 2 for n, m in zip(sizes, means))
    msw, msb = ssw / run_df, ssb / launch_df
    n0 = (total - sum(n * n for n in sizes) / total) / launch_df
    return VarianceComponents(msw, max(0.0, (msb - msw) / n0), run_df, launch_df)


def runs_per_launch(
    launch_cost_s: float, run_cost_s: float, run_var: float, launch_var: float, lo: int = 1, hi: int = 16
) -> int:
    """The number of runs per launch, between lo and hi, that gives the most
    precise comparison for the time spent.

    A pair is one launch of each arm with b runs in each; an arm's value is
    the mean over its launch's runs, so the log ratio of a pair has variance
    2 (s_L^2 + s_r^2 / b) and costs 2 (c_L + b c_r) seconds (c_L a launch, c_r
    a run). For a budget of time the variance of the mean over pairs is
    proportional to

        V(b) = (s_L^2 + s_r^2 / b) (c_L + b c_r)
             = s_L^2 c_L + s_r^2 c_r + s_L^2 c_r b + s_r^2 c_L / b,

    convex in b with its minimum at the classic optimum of two-stage
    sampling (Cochran, Sampling Techniques, 10.6)

        b* = sqrt(c_L s_r^2 / (c_r s_L^2)):

    more runs per launch when launches are dear or runs noisy, fewer when
    launches differ. b* is rounded to the integer of the two around it with
    the smaller V (V is convex, so one of them is the integer optimum), then
    bounded to [lo, hi]. No launch variance (s_L^2 = 0) gives hi (a launch
    buys nothing a run does not); no run variance gives lo.

    Beyond this formula, fewer launches also mean fewer degrees of freedom
    for the t interval (one per pair), which is why `hi` bounds it.

    ValueError for a negative or non-finite argument, both costs 0, or
    bounds that are not 1 <= lo <= hi.
    """
    for name, v in (("launch cost", launch_cost_s), ("run cost", run_cost_s),
                    ("run variance", run_var), ("launch variance", launch_var)):
        if not (math.isfinite(v) and v >= 0):
            raise ValueError(f"{name} {v}: a finite number >= 0")
    if launch_cost_s == 0 and run_cost_s == 0:
        raise ValueError("launch and run cost both 0: nothing to trade")
    if not (isinstance(lo, int) and isinstance(hi, int) and 1 <= lo <= hi):
        raise ValueError(f"bounds {lo}..{hi}: integers with 1 <= lo <= hi")
    if run_var == 0 or launch_cost_s == 0:
        return lo
    if launch_var == 0 or run_cost_s == 0:
        return hi
    best = math.sqrt(launch_cost_s * run_var / (run_cost_s * launch_var))

    def cost(b: int) -> float:
        return (launch_var + run_var / b) * (launch_cost_s + b * run_cost_s)

    if best <= lo:
        return lo
    if best >= hi:
        return hi
    down, up = math.floor(best), math.ceil(best)
    return down if cost(down) <= cost(up) else up
