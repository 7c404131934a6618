"""The search's probe sequence (specdsl.model.search): geometric from
`from`, then a bisection. For every possible knee of a grid, the answer is
exactly that knee and its neighbour, within the worst case plan states."""

from __future__ import annotations

import pytest

from specdsl.model.search import Probes, grid, worst_case


def _search(values, knee: int) -> Probes:
    p = Probes(values)
    while (i := p.next()) is not None:
        p.record(i, i <= knee)
    return p


@pytest.mark.parametrize("low,high,step", [(1, 64, 1), (1, 16, 1), (4, 100, 4), (0.5, 10, 0.5), (1, 2, 1), (3, 50, 1)])
def test_every_knee_is_found_exactly_within_the_worst_case(low, high, step):
    values = grid(low, high, step)
    most = worst_case(values)
    for knee in range(-1, len(values)):  # -1: nothing meets
        p = _search(values, knee)
        best, first_fail = p.answer()
        assert best == (values[knee] if knee >= 0 else None)
        assert first_fail == (values[knee + 1] if knee + 1 < len(values) else None)
        assert len(p.order) <= most and len(set(p.order)) == len(p.order)  # no value probed twice


def test_the_sequence_doubles_then_bisects():
    values = grid(1, 64, 1)
    assert len(values) == 64 and worst_case(values) == 12
    p = _search(values, values.index(12))
    assert [values[i] for i in p.order] == [1, 2, 4, 8, 16, 12, 14, 13]
    assert grid(1, 10, 4) == (1, 5, 9, 10)  # `to` is always a value
