"""The distributions the verdicts need, through scipy.special, imported on
first use so that `specdsl validate`/`plan` never pay for scipy (its
import costs ~0.4 s). Quantiles are cached: a walk asks for the same few
(level, degrees of freedom) again and again."""

from __future__ import annotations

import functools
import math
from statistics import NormalDist


_SPECIAL = None
_NORMAL = NormalDist()


def _special():
    global _SPECIAL
    if _SPECIAL is None:
        import scipy.special  # lazy: see the module docstring

        _SPECIAL = scipy.special
    return _SPECIAL


@functools.lru_cache(maxsize=8192)
def t_quantile(p: float, df: int) -> float:
    """The p-quantile of Student's t with df degrees of freedom."""
    return float(_special().stdtrit(df, p))


def t_cdf(x: float, df: int) -> float:
    """P(T <= x) for Student's t with df degrees of freedom."""
    if math.isinf(x):
        return 1.0 if x > 0 else 0.0
    return float(_special().stdtr(df, x))


def norm_cdf(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def norm_sf(x: float) -> float:
    return 0.5 * math.erfc(x / math.sqrt(2.0))


@functools.lru_cache(maxsize=4096)
def norm_quantile(p: float) -> float:
    """The p-quantile of the standard normal, from the standard library
    (Wichura's AS 241, to double precision, as scipy's ndtri): the
    O'Brien-Fleming spending that `plan` lays looks out with needs no scipy."""
    if p <= 0.0 or p >= 1.0:
        return -math.inf if p <= 0.0 else math.inf
    return _NORMAL.inv_cdf(p)


@functools.lru_cache(maxsize=8192)
def mde_factor(n: int, alpha: float, power: float) -> float:
    """delta / sd: the smallest true shift of the mean (in units of the
    per-observation standard deviation) that a one-sided one-sample t test
    of n observations at level alpha detects with probability `power`.
    Exact, through the noncentral t: P(T'(n-1, nc) > t_{1-alpha}) = power
    with nc = delta * sqrt(n) / sd."""
    if n < 2:
        raise ValueError(f"a t test needs 2 observations, not {n}")
    df = n - 1
    crit = t_quantile(1.0 - alpha, df)
    if not math.isfinite(crit):
        return math.inf
    if crit > 500:
        # far in the tail (a level of ~1e-6 with few degrees of freedom) scipy's
        # root finder slows down without bound; there the noise of the mean is
        # negligible against nc, T' ~ nc / sqrt(V / df) with V chi-square(df), so
        # P(T' > crit) = P(V < df (nc / crit)^2) = power (1e-4 relative at crit 1000)
        nc = crit * math.sqrt(float(_special().chdtri(df, 1.0 - power)) / df)
    else:
        nc = float(_special().nctdtrinc(df, 1.0 - power, crit))
    if not math.isfinite(nc):
        return math.inf
    return nc / math.sqrt(n)


def t_sf_int(x: float, df: int) -> float:
    """P(T > x) for Student's t with a whole number of degrees of freedom,
    in closed form (Abramowitz and Stegun 26.7.3-4: finite sums in the
    angle atan(x / sqrt(df))), without scipy: what the look schedule asks
    when `plan` lays out its looks."""
    if df < 1:
        raise ValueError(f"degrees of freedom {df}: at least 1")
    if math.isinf(x):
        return 0.0 if x > 0 else 1.0
    theta = math.atan(abs(x) / math.sqrt(df))
    c2, s = math.cos(theta) ** 2, math.sin(theta)
    if df % 2 == 1:
        term, total = 1.0, 1.0 if df > 1 else 0.0
        for k in range(1, (df - 1) // 2):
            term *= c2 * (2 * k) / (2 * k + 1)
            total += term
        inside = (2.0 / math.pi) * (theta + (s * math.cos(theta) * total if df > 1 else 0.0))
    else:
        term, total = 1.0, 1.0
        for k in range(1, df // 2):
            term *= c2 * (2 * k - 1) / (2 * k)
            total += term
        inside = s * total
    upper = max(0.0, (1.0 - inside) / 2.0)
    return upper if x >= 0 else 1.0 - upper


def t_isf_int(p: float, df: int) -> float:
    """The x with P(T > x) = p (0 < p < 1/2), by bisection on `t_sf_int`
    (to a relative 1e-9): no scipy."""
    if not 0.0 < p < 0.5:
        raise ValueError(f"upper tail {p}: between 0 and 1/2")
    lo, hi = 0.0, 1.0
    while t_sf_int(hi, df) > p:
        hi *= 2.0
        if hi > 1e300:
            return math.inf
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if t_sf_int(mid, df) > p:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-9 * hi:
            break
    return hi


@functools.lru_cache(maxsize=4096)
def chi2_quantile(p: float, df: int) -> float:
    """The p-quantile of chi-square with df degrees of freedom."""
    return float(_special().chdtri(df, 1.0 - p))


def chi2_cdf(x: float, df: int) -> float:
    """P(X <= x) for chi-square with df degrees of freedom."""
    if math.isinf(x):
        return 1.0 if x > 0 else 0.0
    return float(_special().chdtr(df, x))


@functools.lru_cache(maxsize=4096)
def nct_quantile(p: float, df: int, nc: float) -> float:
    """The p-quantile of the noncentral t with df degrees of freedom and noncentrality nc."""
    return float(_special().nctdtrit(df, nc, p))
