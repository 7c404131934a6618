"""The probe sequence of a search (pure: no I/O). `search = { over =
"concurrency", from = 1, to = 64 }` looks for the highest value at which
every assertion of the experiment passes, assuming that what passes at a
value passes at every lower one (latency grows with load).

The values are a grid: `from`, `from + step`, ..., and `to`. The probes
are geometric, then a bisection: `from`, then doubling (`from` x 2, x 4,
... snapped up to the grid, `to` last) while the probes pass; at the first
that does not, bisection between the highest passing probe and it until
they are neighbours on the grid. The answer is that pair: the highest value
that meets the SLO and the first that does not (either may be absent: the
first value fails, or the last passes). `worst_case` is the most probes any
answer can take, what plan states.

An assertion that reads `search.concurrency` (`search.rate`: the name is
the search's `over`) is over the answer, the highest value that meets:
decided once when the search has its answer (`answer_env`), not by each
probe. The other assertions are the SLO each probe must meet.
"""

from __future__ import annotations

import math

import attrs

from specdsl.model.assert_shape import reads_root


def reads_search(expr) -> bool:
    """Whether an assertion's expression reads `search.X` (the search's answer)."""
    return reads_root(expr, "search")


def slo_asserts(exp) -> tuple:
    """The assertions each probe must meet (those not over the answer)."""
    return tuple(a for a in exp.asserts if not reads_search(a.expr))


def answer_asserts(exp) -> tuple:
    """The assertions over the search's answer (`search.concurrency >= 16`)."""
    return tuple(a for a in exp.asserts if reads_search(a.expr))


def grid(low: float, high: float, step: float) -> tuple[float, ...]:
    """`low`, `low + step`, ... below `high`, and `high`."""
    n = int(math.floor((high - low) / step + 1e-9))
    values = [low + k * step for k in range(n + 1)]
    if high - values[-1] > 1e-9 * max(1.0, abs(high)):
        values.append(high)
    return tuple(round(v, 9) for v in values)


@attrs.define
class Probes:
    """The search's state: which grid indexes were probed and whether each met."""

    values: tuple[float, ...]
    met: dict[int, bool] = attrs.field(factory=dict)
    order: list[int] = attrs.field(factory=list)

    def _passing(self) -> int:
        return max((i for i, ok in self.met.items() if ok), default=-1)

    def _failing(self) -> int | None:
        return min((i for i, ok in self.met.items() if not ok), default=None)

    def next(self) -> int | None:
        """The grid index to probe next, or None: the answer is known."""
        if not self.met:
            return 0
        low, high = self._passing(), self._failing()
        if high is None:  # still doubling
            if low == len(self.values) - 1:
                return None
            target = self.values[low] * 2
            return next((i for i, v in enumerate(self.values) if v >= target - 1e-9), len(self.values) - 1)
        if high - low <= 1:
            return None
        return (low + high) // 2

    def record(self, index: int, met: bool) -> None:
        self.met[index] = met
        self.order.append(index)

    def answer(self) -> tuple[float | None, float | None]:
        """(highest value that meets, first value that does not); None where there is none."""
        low, high = self._passing(), self._failing()
        return (self.values[low] if low >= 0 else None, self.values[high] if high is not None else None)


def worst_case(values: tuple[float, ...]) -> int:
    """The most probes a search over `values` takes, over every answer."""
    most = 0
    for knee in range(-1, len(values)):  # the highest index that meets (-1: none does)
        p = Probes(values)
        while (i := p.next()) is not None:
            p.record(i, i <= knee)
        most = max(most, len(p.order))
    return most


def describe(exp) -> str:
    """One line: what the search looks for and its worst case (plan says it too)."""
    s = exp.search
    values = grid(s.low, s.high, s.step)
    asserts = ", ".join(a.name for a in slo_asserts(exp))
    answer = ", ".join(a.name for a in answer_asserts(exp))
    return (f"search {exp.name}: the highest {s.over} from {s.low:g} to {s.high:g} (step {s.step:g}, {len(values)} values)"
            f" at which {asserts} pass: geometric then bisection, at most {worst_case(values)} probes"
            + (f"; then {answer} on the answer (search.{s.over})" if answer else ""))
