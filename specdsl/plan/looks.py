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

ALPHA = 0.05
# The share of alpha kept for pairs beyond the horizon.
RESERVE = 0.2
# A look whose boundary needs the mean more than this many standard errors
# past the threshold decides nothing real: it is not taken.
SKIP_T = 30.0


def grid_first(workload) -> int:
    """The first point of the look grid: `runs`, at least 2 (an interval needs two)."""
    return max(2, workload.runs)


def max_runs(workload) -> int:
    """The adaptive budget: pairs a paired comparison may reach (3 x runs by default)."""
    most = workload.max_runs if workload.max_runs is not None else 3 * workload.runs
    return max(grid_first(workload), most)


def looks_of(workload) -> dict:
    """The look schedule a paired benchmark's first pairs are measured
    under, as result.json records it: later applies keep its horizon."""
    first = grid_first(workload)
    return {"first": first, "step": max(1, first // 2), "horizon": max_runs(workload), "spending": "obf",
            "reserve": RESERVE, "skip_t": SKIP_T}


def schedule_for(workload, looks: dict | None = None, extra: int = 0):
    """The looks of the pairs under the recorded schedule `looks` (an
    earlier apply's; None: the workload's own), up to `max_runs` (+ `extra`)
    pairs. A fixed number of pairs (`max_runs` = `runs`) is a schedule of
    one look, which keeps the reserve too: it can be continued."""
    from specdsl.verdict import LookSchedule

    looks = looks or looks_of(workload)
    first, horizon = int(looks["first"]), int(looks.get("horizon", looks["first"]))
    most = max(max_runs(workload) + extra, first)
    return LookSchedule(first=first, step=int(looks.get("step", 1)), max=most, horizon=horizon,
                        spending=str(looks.get("spending", "obf")), alpha=ALPHA,
                        reserve=float(looks.get("reserve", 0.0)), skip_t=float(looks.get("skip_t", 0.0)))


def first_pairs(workload, looks: dict | None = None) -> int:
    """Pairs a paired comparison measures before its first look that can
    decide (at least `runs`, at least 2)."""
    return schedule_for(workload, looks).looks()[0]
