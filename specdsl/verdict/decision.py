"""One assertion's verdict from repeated measurements: the paired t interval
on log ratios (`ratio_decision`), the t interval on a per-run statistic
(`absolute_decision`), and the sizes that go with them (`mde_ratio`,
`pairs_needed`, `noise_of`). docs/verdicts.md gives the method and why."""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence

import attrs

from specdsl import stats
from specdsl.verdict import _dist


class Status(enum.StrEnum):
    """What an assertion's measurements say: it holds, it does not, they
    cannot tell yet, or no verdict could be had (data missing or unusable).
    A StrEnum: its value is the word state stores and views show."""

    PASS = "pass"
    FAIL = "fail"
    INCONCLUSIVE = "inconclusive"
    ERROR = "error"


# op -> (the passing side: +1 above the threshold, -1 below; strict)
OPS: dict[str, tuple[int, bool]] = {">=": (1, False), ">": (1, True), "<=": (-1, False), "<": (-1, True)}


def nan_key(x: float | None) -> object:
    """A number as Decisions compare it: nan equals nan (an ERROR's numbers),
    so that a verdict read back from state equals the one written."""
    return "nan" if isinstance(x, float) and math.isnan(x) else x


RATIO, MEAN = "ratio", "mean"  # what a Decision's estimate is
PAIRS, RUNS = "pairs", "runs"  # what its n counts
# a statistic of per-run values (specdsl.verdict.per_run): the spread, an extreme, a percentile
STDDEV, MIN, MAX, PERCENTILE = "stddev", "min", "max", "percentile"
PER_RUN_STATISTICS = (STDDEV, MIN, MAX, PERCENTILE)


@attrs.frozen
class Decision:
    """A verdict with the numbers behind it.

    `low` and `high` are one-sided (1 - alpha) confidence bounds, on the
    scale of `estimate` (a ratio for ratio tests). A PASS shows the bound
    that decided it and leaves the other unbounded ("[1.012, inf)" for
    `>=`), so does a FAIL ("(0, 0.99]": a ratio's unbounded lower end is 0,
    an absolute test's -inf); an INCONCLUSIVE shows both
    (together they are a two-sided 1 - 2 alpha interval). ERROR: nan.

    `p_pass` is the one-sided p-value of "the assertion does not hold"
    (PASS exactly when p_pass <= alpha), `p_fail` that of "it holds" (FAIL
    exactly when p_fail <= alpha); `holm` works on them.

    `mde` is the distance from the threshold at which a true effect would
    PASS with 80% probability at this n, noise and level: a factor for
    ratio tests (1.021: the true ratio must be 2.1% beyond k), in the
    statistic's units for absolute tests; None when n < 2.

    `statistic` says what `estimate` is: "ratio" (the geometric mean of
    paired ratios, candidate / baseline) or "mean" (of per-run values);
    `unit` what `n` counts: "pairs" or "runs".
    """

    verdict: Status
    estimate: float = attrs.field(eq=nan_key)
    low: float = attrs.field(eq=nan_key)
    high: float = attrs.field(eq=nan_key)
    level: float = attrs.field(eq=nan_key)
    n: int
    threshold: float = attrs.field(eq=nan_key)
    op: str
    mde: float | None = attrs.field(eq=nan_key)
    method: str
    detail: str
    p_pass: float = attrs.field(default=math.nan, eq=nan_key)
    p_fail: float = attrs.field(default=math.nan, eq=nan_key)
    statistic: str = MEAN
    unit: str = RUNS

    @property
    def alpha(self) -> float:
        return 1.0 - self.level

    def line(self) -> str:
        """One line for a terminal or a log: the detail, the method and
        what this n could detect."""
        if self.verdict is Status.ERROR:
            return f"{self.detail} ({self.method})"
        extra = ""
        if self.mde is not None and self.verdict is Status.INCONCLUSIVE:
            extra = f"; detectable at this n: {_mde_text(self)}"
        return f"{self.detail} ({self.method}{extra})"


def _mde_text(d: Decision) -> str:
    if d.mde is None:
        return "-"
    if d.statistic == RATIO:
        if math.isinf(d.mde):
            return "nothing"
        return f"{percent((d.mde - 1.0) * 100)}% beyond the threshold"
    return f"{fmt(d.mde)} beyond the threshold"


def fmt(x: float) -> str:
    """A number for a verdict line: 4 significant digits, inf as inf."""
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if 1e4 <= abs(x):
        return f"{x:.0f}"
    return stats.significant(x, 4)


def percent(x: float) -> str:
    """A percentage as people write it: 2 significant digits, never an exponent (220, 2.1, 0.35)."""
    if abs(x) >= 10:
        return f"{x:.0f}"
    return stats.significant(x, 2)


def level_text(level: float) -> str:
    return f"{level * 100:.4g}%"


def _interval_text(low: float, high: float, *, floor: float = -math.inf) -> str:
    """[low, high], open where a bound is unbounded (-inf, or 0 for a ratio)."""
    opened = math.isinf(low) or low == floor
    return f"{'(' if opened else '['}{fmt(low)}, {fmt(high)}{')' if math.isinf(high) else ']'}"


def _check_args(op: str, alpha: float) -> None:
    if op not in OPS:
        raise ValueError(f"operator {op!r}: one of {', '.join(OPS)}")
    if not 0.0 < alpha < 0.5:
        raise ValueError(f"alpha {alpha}: between 0 and 0.5")


def _error(op: str, threshold: float, n: int, alpha: float, method: str, reason: str, *, ratio: bool) -> Decision:
    nan = math.nan
    return Decision(Status.ERROR, nan, nan, nan, 1.0 - alpha, n, threshold, op, None, method, reason + ": ERROR",
                    statistic=RATIO if ratio else MEAN, unit=PAIRS if ratio else RUNS)


@attrs.frozen
class _T:
    """The t analysis of one sample against a target (all on one scale)."""

    verdict: Status
    mean: float
    low: float  # shown bounds, after the PASS/FAIL/INCONCLUSIVE rule
    high: float
    p_pass: float
    p_fail: float
    mde: float  # in units of the sample


def _t_analysis(xs: Sequence[float], op: str, target: float, alpha: float, power: float = 0.8) -> _T:
    n = len(xs)
    df = n - 1
    m = stats.mean(xs)
    sd = stats.stdev(xs)
    se = sd / math.sqrt(n)
    crit = _dist.t_quantile(1.0 - alpha, df)
    half = crit * se if se > 0 else 0.0  # no spread: the sample is its own bound, even at a level of ~0
    lo, hi = m - half, m + half
    side, strict = OPS[op]
    if side > 0:
        passed = lo > target if strict else lo >= target
        failed = hi <= target if strict else hi < target
    else:
        passed = hi < target if strict else hi <= target
        failed = lo >= target if strict else lo > target
    if se > 0:
        t = (m - target) / se
        above, below = _dist.t_cdf(-t, df), _dist.t_cdf(t, df)  # P(T >= t), P(T <= t)
        p_pass, p_fail = (above, below) if side > 0 else (below, above)
    else:  # no spread at all: the sample decides with certainty
        p_pass, p_fail = (0.0 if passed else 1.0), (0.0 if failed else 1.0)
    inf = math.inf
    if passed:
        shown = (lo, inf) if side > 0 else (-inf, hi)
        verdict = Status.PASS
    elif failed:
        shown = (-inf, hi) if side > 0 else (lo, inf)
        verdict = Status.FAIL
    else:
        shown = (lo, hi)
        verdict = Status.INCONCLUSIVE
    mde = _dist.mde_factor(n, alpha, power) * sd if sd > 0 else 0.0
    return _T(verdict, m, shown[0], shown[1], p_pass, p_fail, mde)


def _log_ratios(pairs: Sequence[tuple[float, float]]) -> list[float] | str:
    """log(cand / base) of each pair, or the reason it cannot be had."""
    out = []
    log, inf = math.log, math.inf
    for base, cand in pairs:
        if 0.0 < base < inf and 0.0 < cand < inf:  # False for nan too
            out.append(log(cand / base))
        else:
            return _why_not(pairs)
    return out


def _why_not(pairs: Sequence[tuple[float, float]]) -> str:
    for i, pair in enumerate(pairs, 1):
        for who, v in zip(("baseline", "candidate"), (float(x) for x in pair)):
            if not math.isfinite(v):
                return f"pair {i}: the {who} value is not finite ({v})"
            if v <= 0:
                return f"pair {i}: a value <= 0 (the {who}'s {fmt(v)}); a ratio test needs positive values"
    raise AssertionError("unreachable")


def _exp(x: float) -> float:
    return math.exp(x) if x < 700 else math.inf


def ratio_method(alpha: float) -> str:
    # the estimate's name in the one vocabulary of figures (specdsl.stats.PAIR_GEOMEAN)
    return f"ratio: {stats.PAIR_GEOMEAN}; paired t on log ratios, one-sided, {level_text(1.0 - alpha)}"


def ratio_decision(pairs: Sequence[tuple[float, float]], op: str, k: float, *, alpha: float = 0.05) -> Decision:
    """The verdict of `cand OP base * k` from pairs (baseline value,
    candidate value) of adjacent A/B blocks.

    With d_i = log(cand_i / base_i), n pairs, mean m, sample sd s and
    c = t_{1-alpha, n-1}: the one-sided bounds are m - c s / sqrt(n) and
    m + c s / sqrt(n). For `>=`/`>` PASS when the lower bound is at or above
    log k (strictly above for `>`), FAIL when the upper bound is below it,
    INCONCLUSIVE otherwise; `<=`/`<` mirror that. Fewer than 2 pairs, a
    value <= 0 or not finite, or k <= 0: ERROR, with the reason.
    """
    return _ratio(pairs, op, k, alpha, ratio_method(alpha), "")


def _ratio(pairs: Sequence[tuple[float, float]], op: str, k: float, alpha: float, method: str, note: str) -> Decision:
    """ratio_decision with its method text given, and `note` appended to
    the detail of an INCONCLUSIVE (sequential_decision's next look)."""
    _check_args(op, alpha)
    n = len(pairs)
    k = float(k)
    if not (math.isfinite(k) and k > 0):
        return _error(op, k, n, alpha, method, f"threshold {fmt(k)}: a ratio test needs a positive factor", ratio=True)
    if n < 2:
        return _error(op, k, n, alpha, method, f"not enough pairs: {n} (a paired t interval needs 2)", ratio=True)
    ds = _log_ratios(pairs)
    if isinstance(ds, str):
        return _error(op, k, n, alpha, method, ds, ratio=True)
    a = _t_analysis(ds, op, math.log(k), alpha)
    est, low, high = _exp(a.mean), _exp(a.low), _exp(a.high)
    shown = _interval_text(low, high, floor=0.0)  # a ratio's lower end 0 is never reached
    detail = f"ratio {fmt(est)} {shown} {op} {fmt(k)}, n={n} pairs: {a.verdict.name}"
    if note and a.verdict is Status.INCONCLUSIVE:
        detail += note
    return Decision(
        a.verdict, est, low, high, 1.0 - alpha, n, k, op, _exp(a.mde), method, detail, a.p_pass, a.p_fail,
        statistic=RATIO, unit=PAIRS,
    )


def absolute_decision(values: Sequence[float], op: str, threshold: float, *, alpha: float = 0.05) -> Decision:
    """The verdict of `STAT OP threshold` from one value of the statistic
    per run (each run's p99 ITL, say): a one-sided t interval on their mean,
    with the same PASS/FAIL/INCONCLUSIVE rule as `ratio_decision`. Runs are
    not paired, so drift is not cancelled: see docs/verdicts.md."""
    _check_args(op, alpha)
    method = f"t on the mean of runs, one-sided, {level_text(1.0 - alpha)}"
    n = len(values)
    threshold = float(threshold)
    if not math.isfinite(threshold):
        return _error(op, threshold, n, alpha, method, f"threshold {fmt(threshold)} is not finite", ratio=False)
    if n < 2:
        return _error(op, threshold, n, alpha, method, f"not enough runs: {n} (a t interval needs 2)", ratio=False)
    xs = [float(v) for v in values]
    for i, v in enumerate(xs, 1):
        if not math.isfinite(v):
            return _error(op, threshold, n, alpha, method, f"run {i}: the value is not finite ({v})", ratio=False)
    a = _t_analysis(xs, op, threshold, alpha)
    detail = f"mean {fmt(a.mean)} {_interval_text(a.low, a.high)} {op} {fmt(threshold)}, n={n} runs: {a.verdict.name}"
    return Decision(
        a.verdict, a.mean, a.low, a.high, 1.0 - alpha, n, threshold, op, a.mde, method, detail, a.p_pass, a.p_fail
    )


def noise_of(pairs: Sequence[tuple[float, float]]) -> float:
    """The sample sd of the pairs' log ratios, log(cand / base): the noise
    `calibrate` stores and `mde_ratio`/`pairs_needed` take. ValueError for
    fewer than 2 pairs or a value <= 0."""
    ds = _log_ratios(pairs)
    if isinstance(ds, str):
        raise ValueError(ds)
    if len(ds) < 2:
        raise ValueError(f"the noise of {len(ds)} pair{'s' if len(ds) != 1 else ''}: needs 2")
    return stats.stdev(ds)


def _check_size_args(sd_log: float, alpha: float, power: float) -> None:
    if not (math.isfinite(sd_log) and sd_log >= 0):
        raise ValueError(f"sd of log ratios {sd_log}: a finite number >= 0")
    if not 0.0 < alpha < 0.5:
        raise ValueError(f"alpha {alpha}: between 0 and 0.5")
    if not 0.5 <= power < 1.0:
        raise ValueError(f"power {power}: between 0.5 and 1")


def mde_ratio(sd_log: float, n: int, *, alpha: float = 0.05, power: float = 0.8) -> float:
    """The smallest true effect, as a ratio (1.03: 3%), that n pairs with
    this sd of log ratios detect with probability `power` in a one-sided
    test at `alpha`: the true ratio must lie that factor beyond the
    threshold k (k * mde for `>=`, k / mde for `<=`). Exact (noncentral t):
    exp(delta) with P(T'(n - 1, delta sqrt(n) / sd) > t_{1-alpha, n-1}) =
    power; about exp((t_{1-alpha} + t_{power}) sd / sqrt(n))."""
    _check_size_args(sd_log, alpha, power)
    if n < 2:
        raise ValueError(f"the detectable effect of {n} pairs: needs 2")
    return _exp(_dist.mde_factor(int(n), alpha, power) * sd_log) if sd_log > 0 else 1.0


def pairs_needed(
    sd_log: float, effect: float, *, alpha: float = 0.05, power: float = 0.8, max_pairs: int = 1000
) -> int | None:
    """The fewest pairs (>= 2) whose `mde_ratio` is at most `effect` (a
    ratio: 1.03 is 3% beyond the threshold; 1/1.03 the same distance the
    other way), or None when more than max_pairs would be needed (or the
    effect is nil). The inverse of `mde_ratio`: pairs_needed(s,
    mde_ratio(s, n)) == n."""
    _check_size_args(sd_log, alpha, power)
    if not (math.isfinite(effect) and effect > 0):
        raise ValueError(f"effect {effect}: a positive ratio")
    target = abs(math.log(effect))
    if sd_log == 0:
        return 2
    if target == 0 or max_pairs < 2:
        return None

    def enough(n: int) -> bool:
        return _dist.mde_factor(n, alpha, power) * sd_log <= target * (1 + 1e-9)

    if not enough(max_pairs):
        return None
    lo, hi = 2, max_pairs  # the detectable effect shrinks as n grows: bisect
    while lo < hi:
        mid = (lo + hi) // 2
        if enough(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo
