"""Holm's step-down correction over several assertions.

`holm(items, alpha)` takes, per assertion, a p-value, a `Decision` (its
`p_pass`, or `p_fail` with side="fail") or a callable alpha -> Decision
(`lambda a: ratio_decision(pairs, ">=", 1.03, alpha=a)`, or a
`sequential_decision`, whose look-adjusted levels have no single p-value;
one returning None, no decision from numbers, is never rejected),
and returns a `HolmResult`: per assertion, in the order given, whether Holm
rejects its null (the PASS, or with side="fail" the FAIL), `alphas[i]`,
the level at which to re-decide it, and for callables `decisions[i]`, the
Decision re-decided at that level.

The step-down, stated on tests so that it needs only decisions that are
monotone in alpha: with m assertions left undecided, re-decide each at
alpha / m; those that pass are rejected and leave; repeat with the m' left
at alpha / m' until a round rejects none. On p-values it is Holm's
procedure exactly (p_(1) <= ... <= p_(m); reject while p_(j) <= alpha /
(m - j + 1)). A rejected assertion's level is the one at which it passed;
the others' the last level tried, at which none of them passes, so
re-deciding every assertion at its level gives exactly Holm's rejections.
`holm_adjusted` gives Holm's adjusted p-values.

When it is needed (docs/verdicts.md): an experiment promoted only when all
of its gating assertions PASS is an intersection-union test, already at
level alpha without correction; Holm guards claims made one by one — the
PASS of each assertion reported as a finding, or the FAIL side (side="fail"),
where any one false FAIL rejects a good candidate.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Union

import attrs

from specdsl.verdict.decision import Decision, Status

Item = Union[float, Decision, Callable[[float], Decision | None]]


@attrs.frozen
class HolmResult:
    alpha: float
    p_values: tuple[float, ...]  # nan for callables (and ERROR decisions)
    adjusted: tuple[float, ...]  # Holm-adjusted p-values (all nan when a callable was given)
    rejected: tuple[bool, ...]
    alphas: tuple[float, ...]  # the level to re-decide each at
    decisions: tuple[Decision | None, ...]  # re-decided at `alphas` (callables), the given Decision, or None


def holm_alphas(p_values: Sequence[float], alpha: float = 0.05) -> list[float]:
    """The level to re-decide each hypothesis at (`holm(p_values).alphas`)."""
    return list(holm(p_values, alpha).alphas)


def holm_adjusted(p_values: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values: max over ranks i <= j of min(1, (m - i + 1) p_(i))."""
    ps = [1.0 if math.isnan(p) else float(p) for p in p_values]
    m = len(ps)
    order = sorted(range(m), key=lambda i: ps[i])
    out = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order, 1):
        running = max(running, min(1.0, (m - rank + 1) * ps[i]))
        out[i] = running
    return out


def holm(items: Sequence[Item], alpha: float = 0.05, *, side: str = "pass") -> HolmResult:
    """Holm's correction over `items` (p-values, Decisions or callables
    alpha -> Decision); see the module docstring."""
    if side not in ("pass", "fail"):
        raise ValueError(f"side {side!r}: 'pass' or 'fail'")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha {alpha}: between 0 and 1")
    wanted = Status.PASS if side == "pass" else Status.FAIL
    ps: list[float] = []
    given_callables = False
    tests: list[Callable[[float], tuple[bool, Decision | None]]] = []
    for item in items:
        if isinstance(item, Decision):
            p = math.nan if item.verdict is Status.ERROR else (item.p_pass if side == "pass" else item.p_fail)
            ps.append(p)
            tests.append(lambda level, p=p, d=item: (not math.isnan(p) and p <= level, d))
        elif callable(item):
            ps.append(math.nan)
            given_callables = True
            tests.append(lambda level, f=item: _decided(f(level), wanted))
        else:
            p = float(item)
            if not (math.isnan(p) or 0.0 <= p <= 1.0):
                raise ValueError(f"p-value {p}: between 0 and 1")
            ps.append(p)
            tests.append(lambda level, p=p: (not math.isnan(p) and p <= level, None))
    m = len(tests)
    levels = [0.0] * m
    decisions: list[Decision | None] = [None] * m
    rejected = [False] * m
    left = list(range(m))
    while left:
        level = alpha / len(left)
        outcomes = {i: tests[i](level) for i in left}
        passed = [i for i in left if outcomes[i][0]]
        for i in left:
            levels[i], decisions[i] = level, outcomes[i][1]
        for i in passed:
            rejected[i] = True
        if not passed:
            break
        left = [i for i in left if i not in passed]
    adjusted = [math.nan] * m if given_callables else holm_adjusted(ps)
    return HolmResult(alpha, tuple(ps), tuple(adjusted), tuple(rejected), tuple(levels), tuple(decisions))


def _decided(d: Decision | None, wanted: Status) -> tuple[bool, Decision | None]:
    return d is not None and d.verdict is wanted, d
