"""Apply keeps the budget (specdsl.plan.budget): a paired comparison never
measures a pair that would take it past its workload's `max_launches` or
`max_time`, nor the apply past `--max-launches` / `--max-time`.

Before each pair (block) the walk asks `Spending.allowed`: a comparison
whose next pair does not fit stops there, and its result records why
(`budget`: which limit, what was spent, what a pair costs), so that its
checks end INCONCLUSIVE with what a decision would still cost
(`annotate`). A comparison's own budget counts all its recorded pairs,
an earlier apply's included (two launches a pair; its wall time, `wall_s`
on each pair as the walk timed it, estimated for pairs recorded without
it): raising the budget and applying again continues from them. The
apply-wide budget counts the launches this walk makes for paired
comparisons and their wall time (a block's launches are reserved before it
starts, so two comparisons on two hosts cannot both take the last ones).
"""

from __future__ import annotations

import statistics
import threading

import attrs

from specdsl.graph.pairs import LAUNCHES_PER_PAIR
from specdsl.paired_result import PairedResult
from specdsl.plan.budget import Limit, duration_text, reached

WALL_S = "wall_s"  # a pair's wall time in result.json: its launches, warm-ups and runs


@attrs.define
class Ledger:
    """What this apply's paired comparisons spent, against `--max-launches` / `--max-time`."""

    limit: Limit
    launches: int = 0
    seconds: float = 0.0
    lock: threading.Lock = attrs.Factory(threading.Lock)


def ledger_of(walk) -> Ledger:
    """The walk's one ledger (made on first use, from the plan's limits)."""
    with walk.mutex:
        if walk.budget is None:
            walk.budget = Ledger(Limit(walk.plan.max_launches, walk.plan.max_time))
        return walk.budget


def _spent_seconds(pairs, pair_s: float) -> float:
    return sum(float(p[WALL_S]) if isinstance(p.get(WALL_S), (int, float)) else pair_s for p in pairs)


def _estimate(ctx) -> float:
    """Seconds of one pair before any was timed: the plan's estimate (the
    chain of specdsl.plan.budget.launch_cost)."""
    from specdsl.plan.budget import arm_costs
    from specdsl.plan.durations import recorded_durations

    state = ctx.writer.state
    durations = recorded_durations(state, ctx.writer.state_dir, ctx.walk.graph, {ctx.step.addr})
    a, b = arm_costs(ctx.step, state, durations)
    return a.seconds + b.seconds


class Spending:
    """The budget keeping of one paired step's walk of blocks: the apply's
    `ledger`, each comparison's own limit (`limits`, by address), and
    `estimate()`, the seconds of a pair before any was timed. The
    comparisons it is given have `addr` and `done` (their _Pairing)."""

    def __init__(self, ledger: Ledger, limits: dict[str, Limit], estimate) -> None:
        self.ledger = ledger
        self.limits = limits
        self._estimate = estimate
        self._planned: float | None = None
        self._reserved = (0, 0.0)

    @classmethod
    def of(cls, ctx, comps) -> "Spending":
        """For the step of `ctx` measuring comparisons `comps`."""
        from specdsl.plan.budget import limit_of

        steps = ctx.walk.graph.steps
        return cls(ledger_of(ctx.walk), {c.addr: limit_of(steps[c.addr].payload["experiment"].workload) for c in comps},
                   lambda: _estimate(ctx))

    def pair_s(self, comp) -> float:
        """What the comparison's next pair is expected to cost: the mean wall
        time of its timed pairs, else the plan's estimate."""
        timed = [float(p[WALL_S]) for p in comp.done.pairs if isinstance(p.get(WALL_S), (int, float))]
        if timed:
            return statistics.fmean(timed)
        if self._planned is None:
            self._planned = self._estimate()
        return self._planned

    def allowed(self, i: int, wanting: list) -> list:
        """Of the comparisons that want pair `i`, those whose budgets allow
        it (their own, then the apply's, in order); each one stopped records
        why in its result (`budget`). Reserves the block's launches."""
        if not wanting or not (self.ledger.limit.any or any(self.limits[c.addr].any for c in wanting)):
            return wanting
        out = []
        with self.ledger.lock:
            launches, seconds = 0, 0.0
            for c in wanting:
                pair_s = self.pair_s(c)
                own = self.limits[c.addr]
                pairs = c.done.complete_pairs()
                why = reached(own, launches=LAUNCHES_PER_PAIR * len(pairs), seconds=_spent_seconds(pairs, pair_s),
                              pair_launches=LAUNCHES_PER_PAIR, pair_s=pair_s)
                limit, by = own, "its own"
                # the block's first comparison brings the baseline's launch; each other only its candidate's
                cost_l = LAUNCHES_PER_PAIR if not out else 1
                cost_s = pair_s if not out else pair_s / 2
                if not why:
                    limit, by = self.ledger.limit, "the apply's"
                    why = reached(limit, launches=self.ledger.launches + launches, seconds=self.ledger.seconds + seconds,
                                  pair_launches=cost_l, pair_s=cost_s)
                if why:
                    c.done.budget = {"reached": why, "by": by, "pairs": len(pairs), "pair_s": round(pair_s, 3),
                                     "pair_launches": LAUNCHES_PER_PAIR, "max_launches": limit.launches,
                                     "max_seconds": limit.seconds}
                    continue
                c.done.budget = {}
                out.append(c)
                launches, seconds = launches + cost_l, seconds + cost_s
            self.ledger.launches += launches
            self.ledger.seconds += seconds
            self._reserved = (launches, seconds)
        return out

    def charge(self, i: int, block, seconds: float) -> None:
        """Block `i` of comparisons `block` took `seconds` of wall time:
        each comparison's pair `i` records it, and the apply's ledger
        counts it instead of what was reserved."""
        for c in block:
            pair = next((p for p in c.done.pairs if p["pair"] == i), None)
            if pair is not None:
                pair[WALL_S] = round(seconds, 3)
        with self.ledger.lock:
            self.ledger.seconds += seconds - self._reserved[1]
            self._reserved = (0, 0.0)


def annotate(verdict, doc: dict | None):
    """An INCONCLUSIVE gating verdict on a comparison its budget stopped
    (result.json `budget`): its detail says so, and what a decision at this
    margin would still cost (the verdict's pairs needed, at the pair's
    measured cost)."""
    from specdsl.verdict.decision import Status

    paired = PairedResult.of(doc)
    spent = (paired.budget if paired is not None else (doc or {}).get("budget")) or {}
    if not spent.get("reached") or not verdict.gating:
        return verdict
    if paired is None or not paired.pairs:  # stopped before its first pair: nothing was measured, nothing decided
        return attrs.evolve(verdict, status=Status.INCONCLUSIVE, decision=None,
                            detail=f"not measured: budget reached before its first pair: {spent['reached']}" + _whose(spent))
    if len(paired.pairs) < 2 and verdict.status is Status.ERROR:  # one pair: no interval, and the budget allows no more
        return attrs.evolve(verdict, status=Status.INCONCLUSIVE,
                            detail=f"{verdict.detail}; budget reached: {spent['reached']}" + _whose(spent)
                                   + "; an interval needs at least 2 pairs: raise the budget")
    if verdict.status is not Status.INCONCLUSIVE:
        return verdict
    n = verdict.decision.n if verdict.decision is not None else spent.get("pairs", 0)
    text = f"budget reached: {spent['reached']}" + _whose(spent)
    if verdict.needed is not None:
        more = max(1, int(verdict.needed) - int(n))
        launches = more * int(spent.get("pair_launches", LAUNCHES_PER_PAIR))
        text += (f"; a decision at this margin would still cost {'more than' if verdict.needed_beyond else 'about'} "
                 f"{more} more pair{'s' if more != 1 else ''} ({launches} launches, "
                 f"~{duration_text(more * float(spent.get('pair_s', 0.0)))})")
    else:
        text += "; what a decision would still cost is not known (no estimate of the effect yet)"
    return attrs.evolve(verdict, detail=f"{verdict.detail}; {text}")


def _whose(spent: dict) -> str:
    return " (the apply's --max-launches / --max-time)" if spent.get("by") == "the apply's" else ""
