"""The design of a paired comparison: which launches serve which runs.

**The launch is the unit.** Pair i is one fresh launch of the baseline (A)
and one fresh launch of the candidate (B); no launch serves two pairs, so
the pairs are independent replicates of the whole measurement, launch
included, and the paired t over pairs counts its degrees of freedom
honestly (docs/verdicts.md, "The launch is the unit"). Inside a pair each
arm runs `block` runs on its own launch; the arm's value for the pair is
read over those runs, so run noise is averaged inside the launch.

Two ways to run a pair:
- **side by side** (both servers fit on the host at once: a CPU host, or
  enough free GPUs for both): both are launched, both warmed up, then
  their runs alternate A B B A A B ... (`run_order`), so a drift inside
  the pair cancels; then both stop.
- **one at a time**: the arms in `pair_order(i)` (AB for i % 4 in {0, 3},
  BA otherwise: ABBA BAAB over pairs, so a linear drift of the machine
  cancels over every four pairs), each launched, warmed up, run `block`
  times and stopped before the other starts.

Either way a pair costs two launches and 2 x block runs.

(Until 2026-12 the arms alternated ABBA with a launch at every switch of
arm, so pair i and pair i + 1 shared a launch: n pairs cost n + 1 launches,
but neighbouring ratios were correlated and analysed as independent, and
half the runs were a launch's cold first run.)
"""

from __future__ import annotations

BASELINE, CANDIDATE = "A", "B"
LAUNCHES_PER_PAIR = 2


def pair_order(i: int) -> tuple[str, str]:
    """The arms of pair `i`, in the order they start."""
    return (BASELINE, CANDIDATE) if i % 4 in (0, 3) else (CANDIDATE, BASELINE)


def run_order(i: int, block: int, side_by_side: bool) -> list[tuple[str, int]]:
    """(arm, run within the arm's launch) of pair `i` in running order:
    side by side, the arms alternate ABBA within the pair (A B B A A B ...
    starting with `pair_order(i)`'s first); one at a time, each arm's runs
    together, in `pair_order(i)`."""
    first, second = pair_order(i)
    if not side_by_side:
        return [(arm, j) for arm in (first, second) for j in range(block)]
    out: list[tuple[str, int]] = []
    for j in range(block):
        out += [(first, j), (second, j)] if j % 2 == 0 else [(second, j), (first, j)]
    return out


def launches(pairs: int) -> int:
    """Server launches `pairs` pairs cost: two each, none shared."""
    return LAUNCHES_PER_PAIR * max(0, pairs)
