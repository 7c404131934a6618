"""The look schedule of a paired comparison, as plan lays it out and apply
and the checks decide by it (docs/verdicts.md, "Adaptive runs").

A paired benchmark measures its pairs, then looks at the verdict after
each pair of a schedule: the grid first, first + step, ..., `max_runs`
(the horizon), with the false-pass budget spent over it by an
O'Brien-Fleming-type function; 20% of the budget is kept for pairs beyond
the horizon, so that raising `max_runs` (or `apply --more N`) continues
the recorded pairs validly; a look that cannot decide anything (its
boundary needs the mean over 30 standard errors past the threshold, as
the look at 2 pairs does) is not taken, so the walk measures on to the
first look that can. The schedule is recorded with the pairs
(result.json `looks`): a later apply keeps its horizon.

Pure: the verdict package's schedule, no scipy (plan computes the looks).
"""

from __future__ import annotations

from specdsl.plan import economy

ALPHA = 0.05
# The share of alpha kept for pairs beyond the horizon.
RESERVE = 0.2
# A look whose boundary needs the mean more than this many standard errors
# past the threshold decides nothing real: it is not taken.
SKIP_T = 30.0


def grid_first(workload, block: int | None = None) -> int:
    """The first point of the look grid, in pairs: `runs` runs of each arm
    in launches of `block` runs (None: the workload's own block,
    plan.economy.default_block), at least 2 pairs (plan.economy)."""
    return economy.first_pairs(workload, _block(workload, block))


def max_runs(workload, block: int | None = None) -> int:
    """The adaptive budget, in pairs: `max_runs` runs of each arm (3 x runs
    by default) in launches of `block` runs (plan.economy)."""
    return economy.most_pairs(workload, _block(workload, block))


def _block(workload, block: int | None) -> int:
    return int(block) if block is not None else economy.default_block(workload)


def looks_of(workload, block: int | None = None) -> dict:
    """The look schedule a paired benchmark's first pairs are measured
    under, as result.json records it, with the runs per launch (`block`)
    its pairs are measured with: later applies keep its horizon and block."""
    block = _block(workload, block)
    first = grid_first(workload, block)
    return {"first": first, "step": max(1, first // 2), "horizon": max_runs(workload, block), "spending": "obf",
            "reserve": RESERVE, "skip_t": SKIP_T, "block": block}


def recorded_block(looks: dict | None, workload, block: int | None = None) -> int:
    """The runs of each arm on each launch of the pairs measured under
    `looks`: its recorded block; a schedule recorded before the block was
    (when `runs` counted pairs) the workload's declared block, else 1, as
    that walk ran them; no schedule: `block`, else the workload's."""
    if looks:
        return int(looks["block"]) if "block" in looks else int(workload.block or 1)
    return _block(workload, block)


def counting_block(looks: dict | None, workload, block: int | None = None) -> int:
    """The block that turns `runs` and `max_runs` into pairs for the pairs
    measured under `looks`: `recorded_block`, except for a schedule recorded
    before the block was, whose `runs` counted pairs (economy.BEFORE)."""
    if looks and "block" not in looks:
        return economy.BEFORE
    return recorded_block(looks, workload, block)


def schedule_for(workload, looks: dict | None = None, extra: int = 0, block: int | None = None):
    """The looks of the pairs under the recorded schedule `looks` (an
    earlier apply's; None: the workload's own, with `block` runs per
    launch), up to `max_runs` (+ `extra`) pairs. A fixed number of pairs
    (one look) keeps the reserve too: it can be continued."""
    from specdsl.verdict import LookSchedule

    b = counting_block(looks, workload, block)
    looks = looks or looks_of(workload, b)
    first, horizon = int(looks["first"]), int(looks.get("horizon", looks["first"]))
    most = max(max_runs(workload, b) + extra, first)
    return LookSchedule(first=first, step=int(looks.get("step", 1)), max=most, horizon=horizon,
                        spending=str(looks.get("spending", "obf")), alpha=ALPHA,
                        reserve=float(looks.get("reserve", 0.0)), skip_t=float(looks.get("skip_t", 0.0)))


def first_pairs(workload, looks: dict | None = None, block: int | None = None) -> int:
    """Pairs a paired comparison measures before its first look that can
    decide (at least the grid's first point, at least 2)."""
    return schedule_for(workload, looks, block=block).looks()[0]


def block_of(workload, state=None, experiment: str = "") -> int:
    """Runs of each arm on each launch of a pair (plan.economy.default_block):
    the workload's `block` when set; else what `specdsl calibrate
    EXPERIMENT` found buys the most precision for the time (its recorded
    `block.suggested`, from the measured launch and run costs and noises:
    verdict.runs_per_launch), at most `runs`; else `runs`."""
    if workload.block is not None:
        return economy.default_block(workload)
    for run in reversed(getattr(state, "runs", ()) if state is not None else ()):
        if run.step == f"calibrate.{experiment}" and run.status == "completed":
            suggested = dict(run.metrics).get("block.suggested")
            if suggested:
                return economy.default_block(workload, int(suggested))
            break
    return economy.default_block(workload)
