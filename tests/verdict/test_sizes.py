"""mde_ratio and pairs_needed: the noncentral-t solution, its round trip,
and that the decision rule really has the stated power at the MDE."""

from __future__ import annotations

import math
import random

import pytest

from specdsl.verdict import Status, mde_ratio, pairs_needed, ratio_decision
from specdsl.verdict import _dist


@pytest.mark.parametrize("sd", [0.003, 0.02, 0.07])
@pytest.mark.parametrize("n", [2, 3, 6, 12, 50])
def test_pairs_needed_inverts_mde(sd, n):
    assert pairs_needed(sd, mde_ratio(sd, n)) == n
    assert pairs_needed(sd, 1 / mde_ratio(sd, n)) == n  # the same distance the other way


def test_mde_shrinks_with_n_and_grows_with_noise():
    assert mde_ratio(0.02, 3) > mde_ratio(0.02, 6) > mde_ratio(0.02, 12) > 1.0
    assert mde_ratio(0.01, 6) < mde_ratio(0.02, 6)
    assert mde_ratio(0.0, 6) == 1.0
    assert mde_ratio(0.02, 6, alpha=0.01) > mde_ratio(0.02, 6) > mde_ratio(0.02, 6, power=0.5)


@pytest.mark.parametrize("n", [2, 3, 6, 30])
@pytest.mark.parametrize("power", [0.5, 0.8, 0.9])
def test_the_mde_solves_the_noncentral_t_power_equation(n, power):
    from scipy import stats as sps

    sd = 0.02
    nc = math.log(mde_ratio(sd, n, power=power)) * math.sqrt(n) / sd
    crit = sps.t.ppf(0.95, n - 1)
    assert sps.nct.sf(crit, n - 1, nc) == pytest.approx(power, abs=1e-6)


def test_large_n_agrees_with_the_normal_formula():
    n, sd = 400, 0.02
    z = (_dist.norm_quantile(0.95) + _dist.norm_quantile(0.8)) * sd / math.sqrt(n)
    assert math.log(mde_ratio(sd, n)) == pytest.approx(z, rel=0.01)


def test_the_rule_has_the_stated_power_at_the_mde():
    rng = random.Random(7)
    n, sd, k = 6, 0.02, 1.03
    effect = mde_ratio(sd, n)
    mu = math.log(k * effect)
    runs = 3000
    passed = sum(
        ratio_decision([(1.0, math.exp(rng.gauss(mu, sd))) for _ in range(n)], ">=", k).verdict is Status.PASS
        for _ in range(runs)
    )
    assert passed / runs == pytest.approx(0.8, abs=0.025)


def test_pairs_needed_limits():
    assert pairs_needed(0.0, 1.01) == 2
    assert pairs_needed(0.05, 1.0) is None  # no effect is never detected
    assert pairs_needed(0.05, 1.001, max_pairs=100) is None
    n = pairs_needed(0.02, 1.03)
    assert mde_ratio(0.02, n) <= 1.03 < mde_ratio(0.02, n - 1)
    for bad in ((-0.1, 1.02), (0.02, 0.0), (0.02, math.nan)):
        with pytest.raises(ValueError):
            pairs_needed(*bad)
    with pytest.raises(ValueError):
        mde_ratio(0.02, 1)


def test_a_decision_reports_its_mde():
    pairs = [(100.0, 103.0), (100.0, 104.0), (100.0, 102.0)]
    d = ratio_decision(pairs, ">=", 1.05)
    sd = math.sqrt(sum((math.log(c / b) - sum(math.log(c / b) for b, c in pairs) / 3) ** 2 for b, c in pairs) / 2)
    assert d.mde == pytest.approx(mde_ratio(sd, 3), rel=1e-12)


def test_tiny_levels_give_a_detectable_effect_quickly():
    """Far in the tail (a look that spends ~nothing) the noncentral t's root
    finder would take forever; the chi-square limit answers at once."""
    from scipy import stats as sps

    assert mde_ratio(0.02, 2, alpha=1e-9) == math.inf  # exp overflows: nothing is detectable
    assert math.isfinite(math.log(mde_ratio(1e-6, 3, alpha=1e-9)))
    nc = math.log(mde_ratio(1e-6, 3, alpha=1e-7)) * math.sqrt(3) / 1e-6
    assert sps.nct.sf(sps.t.ppf(1 - 1e-7, 2), 2, nc) == pytest.approx(0.8, abs=1e-3)
    d = ratio_decision([(1.0, 1.0), (1.0, 2.0)], ">=", 1.0, alpha=1e-12)
    assert d.verdict is Status.INCONCLUSIVE and d.mde == math.inf
    assert d.detail == "ratio 1.414 (0, inf) >= 1, n=2 pairs: INCONCLUSIVE"
