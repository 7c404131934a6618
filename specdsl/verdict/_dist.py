"""The distributions the verdicts need, through scipy.special, imported on
first use so that `specdsl validate`/`plan` never pay for scipy (its
import costs ~0.4 s). Quantiles are cached: a walk asks for the same few
(level, degrees of freedom) again and again."""

from __future__ import annotations

import functools
import math


_SPECIAL = None


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
    return float(_special().ndtri(p))


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
