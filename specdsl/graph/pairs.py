"""The order of a paired comparison's arms: ABBA BAAB ABBA ...

Pair i measures the baseline (A) and the candidate (B) in adjacent blocks,
AB for i % 4 in {0, 3} and BA otherwise, so a linear drift of the machine
adds the same to both arms over every four pairs and its sign alternates
between neighbours. Each letter is one block of `block` runs; adjacent
blocks of one arm share a server launch (the server stays up), so n pairs
cost about n + 1 launches, not 2n.
"""

from __future__ import annotations

BASELINE, CANDIDATE = "A", "B"


def pair_order(i: int) -> tuple[str, str]:
    """The arms of pair `i`, in the order they run."""
    return (BASELINE, CANDIDATE) if i % 4 in (0, 3) else (CANDIDATE, BASELINE)


def schedule(pairs: int, first: int = 0) -> list[tuple[int, str]]:
    """(pair index, arm) blocks in running order for pairs first..first+pairs-1."""
    return [(i, arm) for i in range(first, first + pairs) for arm in pair_order(i)]


def launches(pairs: int, first: int = 0, up: str | None = None) -> int:
    """Server launches `schedule(pairs, first)` costs; `up` is the arm whose
    server is already running when it starts."""
    count, current = 0, up
    for _, arm in schedule(pairs, first):
        if arm != current:
            count, current = count + 1, arm
    return count
