"""Delta debugging over a set of differences, pure: the experiments are a
callback.

`minimize(items, test)` returns the smallest subset it found whose test
reproduces the failure. `test(subset)` answers FAIL (reproduces), PASS (does
not) or UNRESOLVED (undecided: inconclusive, an error, could not be
applied). Three outcomes, as in Zeller and Hildebrandt's ddmin: an
undecided test is neither a pass nor a fail. The search only ever reduces
to a set that FAILed, so it goes on past an undecided one as past a pass,
but nothing is inferred from it: where the bisection would take "the first
half passed" to mean "the cause is in the other half", an undecided first
half makes it ask the other half instead. The answer records the undecided
tests it depends on (`undecided`: each subset that does not contain the
answer; had one of them reproduced, a smaller or another set would have
been found), so the answer is only as minimal as the decided tests allow.

The items come best-ranked first (the diagnosis' order). First a
bisection that assumes one cause: test the first half (the smaller when
the count is odd); when it passes, the cause is taken to be in the other
half without testing it, and the one difference it ends on is confirmed
with one experiment. For one cause among n that is at most
ceil(log2 n) + 1 tests. When the confirmation does not reproduce (causes
that act only together) or neither half reproduces, ddmin proper (Zeller and
Hildebrandt, 2002: subsets, then complements, then finer granularity) runs
on the whole set, reusing every answer already known. `budget` bounds the
tests asked; when it runs out the smallest reproducing set so far is the
answer, marked not minimal.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import attrs

FAIL, PASS, UNRESOLVED = "fail", "pass", "unresolved"


class OutOfBudget(Exception):
    pass


@attrs.define
class Search:
    """The answer and how it was found: `tests` each subset asked, in
    order, with its answer; `minimal` False when the budget ended the search."""

    items: tuple
    culprit: tuple = ()
    tests: list = attrs.Factory(list)  # (subset, answer)
    minimal: bool = True  # False: the budget ended the search
    reproduced: bool = True  # False: the whole set did not reproduce (no cause among the items)
    undecided: list = attrs.Factory(list)  # subsets answered UNRESOLVED that do not contain the culprit

    @property
    def decided(self) -> bool:
        """True when the answer depends on no undecided test."""
        return not self.undecided


def bound_for_one_cause(n: int) -> int:
    """The most tests one cause among n differences needs: ceil(log2 n) + 1."""
    return math.ceil(math.log2(n)) + 1 if n > 1 else 1


def minimize(items: Sequence, test: Callable[[tuple], str], budget: int | None = None) -> Search:
    """The smallest reproducing subset of `items` (see the module). The
    whole set is asked first (bisect answers it from the candidate's own
    recorded result); when it does not reproduce, there is no cause among
    the differences to find (`reproduced` False, `culprit` empty)."""
    items = tuple(items)
    search = Search(items)
    memo: dict[frozenset, str] = {}

    def ask(subset: tuple) -> str:
        key = frozenset(subset)
        if key in memo:
            return memo[key]
        if budget is not None and len(search.tests) >= budget + 1:  # the whole set is not counted
            raise OutOfBudget
        ordered = tuple(x for x in items if x in key)
        answer = test(ordered)
        memo[key] = answer
        search.tests.append((ordered, answer))
        return answer

    try:
        if not items or ask(items) != FAIL:
            search.reproduced = False
            return search
        current, inferred = items, False
        while current is not None and len(current) > 1:
            # the better-ranked half first, the smaller one when odd: a
            # diagnosis that ranked the cause first finds it soonest
            half = len(current) // 2
            first, second = current[:half], current[half:]
            answer = ask(first)
            if answer == FAIL:
                current, inferred = first, False
            elif answer == PASS:
                current, inferred = second, True
            elif ask(second) == FAIL:  # undecided: nothing follows from it; the other half is asked
                current, inferred = second, False
            else:
                current = None  # neither half is known to reproduce
        if current is not None and (not inferred or ask(current) == FAIL):
            search.culprit = current
        else:
            search.culprit = _ddmin(items, ask)  # causes that act together, or undecided halves
    except OutOfBudget:
        known = [s for s, a in search.tests if a == FAIL]
        search.culprit = min(known, key=len) if known else items
        search.minimal = False
    search.undecided = [s for s, a in search.tests if a == UNRESOLVED and not set(search.culprit) <= set(s)]
    return search


def experiments_asked(search: Search) -> int:
    """Tests asked beyond the whole set (what the bound counts)."""
    return max(0, len(search.tests) - 1)


def _ddmin(items: tuple, ask) -> tuple:
    n = 2
    while len(items) >= 2:
        chunks = _split(items, n)
        for chunk in chunks:
            if ask(chunk) == FAIL:
                items, n = chunk, 2
                break
        else:
            for chunk in chunks if n > 2 else ():
                rest = tuple(x for x in items if x not in chunk)
                if ask(rest) == FAIL:
                    items, n = rest, max(n - 1, 2)
                    break
            else:
                if n >= len(items):
                    break
                n = min(len(items), 2 * n)
    return items


def _split(items: tuple, n: int) -> list[tuple]:
    out, start = [], 0
    for i in range(n):
        end = start + (len(items) - start) // (n - i)
        out.append(items[start:end])
        start = end
    return [c for c in out if c]
