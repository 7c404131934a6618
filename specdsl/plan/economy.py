"""What `runs` buys in a paired comparison: the runs of each arm, spread
over launches where the variance is (docs/verdicts.md, "What `runs`
means in a paired comparison").

**The rule.** `runs` counts the runs of each arm, as it does for a
benchmark measured alone: `runs = 5` is what the story's engineer did,
five runs of the baseline and five of the candidate. A paired comparison
measures them on launches of `block` runs each (one launch of each arm a
pair), and since the launch is the unit of a verdict (specdsl.graph.pairs)
it measures at least two pairs:

    pairs to the first look  = max(2, ceil(runs / block))
    pairs at most (horizon)  = max(that, ceil(max_runs / block))   (max_runs: 3 x runs by default)

**The block** (runs of each arm on one launch) is where the launches are
spent:
- the workload's `block`, when declared;
- else what `specdsl calibrate` measured for the experiment: Kalibera and
  Jones's allocation (verdict.runs_per_launch, from the launch and run
  costs and variance components; its recorded `block.suggested`), at
  most `runs`: many runs on few launches when launches are dear and alike,
  few runs on more launches when launches differ;
- else `runs`: every run the user asked for on one launch of each arm, as
  they would do it by hand, and two launches of each arm so that the
  launch noise is measured, not assumed away.

A block of 1 gives back the rule before 2026-12-03 (`runs` pairs of one
run each); a recorded look schedule without a block was measured under
it and keeps it (`BEFORE`).

Whatever the block, a verdict reads the mean of a launch's runs as one
value of its pair, so the t interval counts launches (pairs), never runs:
the block changes what a verdict costs and its power, not its error
rates. Pure.
"""

from __future__ import annotations

import math

# The runs per launch of a look schedule recorded before the rule counted
# runs of each arm (its `runs` were pairs of one run per launch's worth).
BEFORE = 1
# The fewest pairs a comparison measures: one degree of freedom for the
# launch-to-launch spread.
MIN_PAIRS = 2


def budget_runs(workload) -> int:
    """`max_runs` of the workload: the most runs of each arm (3 x runs by default)."""
    most = workload.max_runs if workload.max_runs is not None else 3 * workload.runs
    return max(workload.runs, most)


def default_block(workload, suggested: int | None = None) -> int:
    """The runs of each arm on one launch: the declared `block`; else the
    calibrated `suggested` runs per launch, at most `runs`; else `runs`."""
    if workload.block is not None:
        return max(1, int(workload.block))
    if suggested:
        return max(1, min(int(suggested), workload.runs))
    return max(1, workload.runs)


def pairs_for(runs: int, block: int) -> int:
    """Pairs (launches of each arm) that measure `runs` runs of each arm in
    launches of `block` runs: at least MIN_PAIRS."""
    return max(MIN_PAIRS, math.ceil(max(1, runs) / max(1, block)))


def first_pairs(workload, block: int) -> int:
    """Pairs to the first point of the look grid."""
    return pairs_for(workload.runs, block)


def most_pairs(workload, block: int) -> int:
    """The horizon: pairs the comparison may reach while undecided."""
    return max(first_pairs(workload, block), math.ceil(budget_runs(workload) / max(1, block)))
