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

**Sharing the baseline's launch.** Comparisons of several candidates
against one baseline (same host, same baseline server and stack, same
workload and runs a launch) that are all measured from nothing in one
apply are measured together, block by block: block i is one fresh launch
of the baseline and one of each candidate still measuring, and the
baseline's runs of block i are arm A of pair i of every comparison.
Within one verdict each pair still has its own launch of each arm and no
launch serves two of its pairs, so every verdict keeps its error rates;
only verdicts of one block are correlated with each other, through the
shared launch (docs/verdicts.md). The arms of block i start in
`arm_order(i, ...)`: forward (A, B1, B2, ...) for i % 4 in {0, 3}, else
reversed, so for every comparison a linear drift cancels over every two
blocks as it does over pairs. A comparison that is decided drops out; the
others go on with blocks of their own arms. `sharing_groups` says which
benchmarks share; a comparison that continues recorded pairs measures on
its own.

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


def arm_order(i: int, arms) -> tuple:
    """The arms of block `i` (the baseline first in `arms`), in the order
    they start: forward for i % 4 in {0, 3}, else reversed (with one
    candidate, `pair_order`)."""
    arms = tuple(arms)
    return arms if i % 4 in (0, 3) else arms[::-1]


def arms_run_order(i: int, arms, block: int, side_by_side: bool) -> list[tuple[object, int]]:
    """(arm, run within the arm's launch) of block `i` in running order:
    side by side, the arms' j-th runs go round in `arm_order(i)` for even j
    and reversed for odd j (A B B A with one candidate); one at a time,
    each arm's runs together, in `arm_order(i)`."""
    order = arm_order(i, arms)
    if not side_by_side:
        return [(arm, j) for arm in order for j in range(block)]
    out: list[tuple[object, int]] = []
    for j in range(block):
        out += [(arm, j) for arm in (order if j % 2 == 0 else order[::-1])]
    return out


def share_key(step, host_key: str, block: int) -> str:
    """What a paired benchmark's baseline arm is, for sharing its launches:
    the host, the baseline's launch content (server and stack), the
    workload with its dataset and the baseline's request, and the runs a
    launch. Benchmarks of one key can be measured in shared blocks."""
    from specdsl.graph.steps import digest

    content = step.content
    request = content.get("request")
    return digest(["share", host_key, content["arms"]["baseline"], content.get("workload"),
                   content.get("dataset_digest"), request.get("baseline") if isinstance(request, dict) else None,
                   content.get("design"), block])


def sharing_groups(keys: dict[str, str]) -> dict[str, tuple[str, ...]]:
    """`keys`: the paired benchmarks measured from nothing in this apply,
    address -> `share_key`, in plan order. Returns, for each benchmark
    whose key another one has, its group (in plan order; the first leads)."""
    by_key: dict[str, list[str]] = {}
    for addr, key in keys.items():
        by_key.setdefault(key, []).append(addr)
    return {addr: tuple(group) for group in by_key.values() if len(group) > 1 for addr in group}


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
