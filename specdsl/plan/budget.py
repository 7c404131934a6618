"""A budget for paired comparisons, and its worst case before anything runs.

Pure: durations and calibrations come in as data.

**What a launch costs** (`launch_cost`), for each arm of a comparison, from
the first of these that knows both the seconds from start to ready and the
seconds of a run:
1. a calibration record (`specdsl calibrate` of the arm's experiment:
   `cost.launch_s`, `cost.run_s`);
2. recorded launches and runs of the same server (its launch identity) and
   workload in this state;
3. recorded launches and runs of the same engine and model;
then, when none knows both,
4. the workload's `launch_estimate` (the user's guess of a whole launch);
5. a stated guess (`GUESS_S`).
A launch then costs start-to-ready + `warmup_time` + `block` x (run +
`cooldown`); the plan line names the source.

**The budget** of one comparison is the workload's `max_launches` and
`max_time` over all its recorded pairs: a pair counts two launches (a
baseline launch shared with other comparisons counts in each) and its wall
time (`pair_s` = the two arms' launch costs, the worst case: one after
the other). The apply-wide budget (`--max-launches`, `--max-time`) counts
the launches the walk makes and their wall time, over every paired
comparison of the apply. `pairs_fit` is the arithmetic both use: the most
pairs in all that the budget allows.
"""

from __future__ import annotations

import enum
import math
from typing import Any

import attrs

from specdsl.graph.pairs import LAUNCHES_PER_PAIR

# The guess when nothing is recorded and the workload states none: an LLM
# server's launch and a few runs take minutes.
GUESS_S = 600.0


class Source(enum.Enum):
    CALIBRATED = "calibrated"
    RECORDED = "recorded"
    SAME_MODEL = "same engine and model"
    STATED = "launch_estimate"
    GUESS = "guess"


@attrs.frozen
class LaunchCost:
    """What one launch of an arm costs: seconds (start, warm-up, its runs), and where that came from."""

    seconds: float
    source: Source
    text: str  # "from `specdsl calibrate up`", "guessed: nothing recorded; set `launch_estimate`", ...


def launch_cost(workload, block: int, *, calibrated: tuple[float | None, float | None] = (None, None),
                recorded: tuple[float | None, float | None] = (None, None),
                same_model: tuple[float | None, float | None] = (None, None), calibrated_by: str = "") -> LaunchCost:
    """One launch's cost from the first source that knows (start-to-ready
    seconds, run seconds): `calibrated`, `recorded`, `same_model`; else the
    workload's `launch_estimate`, else `GUESS_S`."""
    sources = ((Source.CALIBRATED, calibrated, f"from `specdsl calibrate {calibrated_by}`"),
               (Source.RECORDED, recorded, "from recorded launches of this server"),
               (Source.SAME_MODEL, same_model, "from recorded launches of the same engine and model"))
    for source, (launch_s, run_s), text in sources:
        if launch_s is not None and run_s is not None:
            seconds = launch_s + (workload.warmup_time or 0.0) + block * (run_s + workload.cooldown)
            return LaunchCost(seconds, source, text)
    if workload.launch_estimate is not None:
        return LaunchCost(float(workload.launch_estimate), Source.STATED,
                          f"stated: launch_estimate of workload {workload.name}")
    return LaunchCost(GUESS_S, Source.GUESS, f"guessed: nothing recorded; set `launch_estimate` in workload {workload.name}")


@attrs.frozen
class Limit:
    """At most `launches` launches and `seconds` of wall time (None: no limit)."""

    launches: int | None = None
    seconds: float | None = None

    @property
    def any(self) -> bool:
        return self.launches is not None or self.seconds is not None

    def text(self, flags: bool = False) -> str:
        names = ("--max-launches", "--max-time") if flags else ("max_launches", "max_time")
        bits = []
        if self.launches is not None:
            bits.append(f"{names[0]} {self.launches}")
        if self.seconds is not None:
            bits.append(f"{names[1]} {duration_text(self.seconds)}")
        return ", ".join(bits)


def limit_of(workload) -> Limit:
    return Limit(workload.max_launches, workload.max_time)


def pairs_fit(limit: Limit, *, done: int, most: int, pair_launches: int, pair_s: float,
              spent_launches: int = 0, spent_s: float = 0.0) -> int:
    """The most pairs in all (`done` recorded included, at most `most`)
    that `limit` allows, when `spent_launches` and `spent_s` are spent and
    each further pair costs `pair_launches` launches and `pair_s` seconds.
    Never below `done`: recorded pairs are kept."""
    room = max(0, most - done)
    if limit.launches is not None and pair_launches > 0:
        room = min(room, max(0, (limit.launches - spent_launches) // pair_launches))
    if limit.seconds is not None and pair_s > 0:
        room = min(room, max(0, math.floor((limit.seconds - spent_s) / pair_s + 1e-9)))
    return done + room


def reached(limit: Limit, *, launches: int, seconds: float, pair_launches: int, pair_s: float) -> str:
    """Why the next pair does not fit under `limit` with `launches` and
    `seconds` spent (`6 of 6 launches`, `~58 s of 1.0 min`), or ''."""
    if limit.launches is not None and launches + pair_launches > limit.launches:
        return f"{launches} of {limit.launches} launches"
    if limit.seconds is not None and seconds + pair_s > limit.seconds:
        return f"~{duration_text(seconds)} of {duration_text(limit.seconds)}"
    return ""


@attrs.frozen
class Worst:
    """The worst case of one paired comparison against its budget: every
    pair its `max_runs` (and `--more`) allow, each at its launches' cost."""

    addr: str
    pairs_done: int
    pairs_most: int  # pairs in all at most (recorded ones included)
    launches_most: int  # launches this apply makes at most (a shared baseline launch counted once)
    seconds_most: float
    baseline_s: float
    baseline_source: str
    baseline_from: str
    candidate_s: float
    candidate_source: str
    candidate_from: str
    max_launches: int | None = None
    max_seconds: float | None = None
    pairs_fit: int = 0  # pairs in all its own budget allows

    @property
    def pair_s(self) -> float:
        return self.baseline_s + self.candidate_s

    @property
    def limit(self) -> Limit:
        return Limit(self.max_launches, self.max_seconds)

    def as_json(self) -> dict[str, Any]:
        return {"pairs_done": self.pairs_done, "pairs_most": self.pairs_most, "launches_most": self.launches_most,
                "seconds_most": round(self.seconds_most, 1),
                "launch_estimate": {"baseline": {"seconds": round(self.baseline_s, 1), "source": self.baseline_source},
                                    "candidate": {"seconds": round(self.candidate_s, 1), "source": self.candidate_source}},
                "max_launches": self.max_launches, "max_seconds": self.max_seconds, "pairs_fit": self.pairs_fit}

    def _launches(self) -> str:
        a, b = duration_text(self.baseline_s), duration_text(self.candidate_s)
        if self.baseline_from != self.candidate_from:
            return f"a launch ~{a} baseline ({self.baseline_from}), ~{b} candidate ({self.candidate_from})"
        if a == b:
            return f"a launch ~{a} ({self.baseline_from})"
        return f"a launch ~{a} baseline, ~{b} candidate ({self.baseline_from})"

    def line(self) -> str:
        new = self.pairs_most - self.pairs_done
        text = (f"at most {new} pair{'s' if new != 1 else ''}, {self.launches_most} launches, ~{duration_text(self.seconds_most)}"
                + (f" (after {self.pairs_done} recorded)" if self.pairs_done else "")
                + "; " + self._launches())
        if not self.limit.any:
            return text
        if self.pairs_fit >= self.pairs_most:
            return text + f"; within {self.limit.text()}"
        return text + (f"; exceeds {self.limit.text()}: {self.pairs_fit} of {self.pairs_most} pairs fit"
                       + (f" ({self.pairs_done} recorded)" if self.pairs_done else ""))


def worst_of(addr: str, cost, workload, *, baseline: LaunchCost, candidate: LaunchCost, done: int) -> Worst:
    """The worst case of the comparison whose plan cost is `cost`
    (specdsl.plan.cost.Cost; a follower in shared blocks pays its
    candidate's launch only for the pairs it shares)."""
    new = max(0, (cost.pairs_most or 0))
    shared = (cost.pairs_first or 0) if cost.shares_with else 0
    seconds = shared * candidate.seconds + (new - shared) * (baseline.seconds + candidate.seconds)
    limit = limit_of(workload)
    pair_s = baseline.seconds + candidate.seconds
    fit = pairs_fit(limit, done=done, most=done + new, pair_launches=LAUNCHES_PER_PAIR, pair_s=pair_s,
                    spent_launches=LAUNCHES_PER_PAIR * done, spent_s=done * pair_s)
    return Worst(addr, done, done + new, cost.launches_most, seconds, baseline.seconds, baseline.source.value,
                 baseline.text, candidate.seconds, candidate.source.value, candidate.text,
                 limit.launches, limit.seconds, fit)


@attrs.frozen
class ApplyWorst:
    """The worst case of the whole apply's paired comparisons against
    `--max-launches` / `--max-time`: how many of their pairs fit (each
    within its own budget, in plan order)."""

    launches_most: int
    seconds_most: float
    pairs_most: int  # new pairs, each comparison within its own budget
    max_launches: int | None = None
    max_seconds: float | None = None
    pairs_fit: int = 0

    def as_json(self) -> dict[str, Any]:
        return {"launches_most": self.launches_most, "seconds_most": round(self.seconds_most, 1),
                "pairs_most": self.pairs_most, "max_launches": self.max_launches, "max_seconds": self.max_seconds,
                "pairs_fit": self.pairs_fit}

    def line(self) -> str:
        limit = Limit(self.max_launches, self.max_seconds)
        text = f"at most {self.pairs_most} pairs, {self.launches_most} launches, ~{duration_text(self.seconds_most)}"
        if not limit.any:
            return text
        if self.pairs_fit >= self.pairs_most:
            return text + f"; within {limit.text(flags=True)}"
        return text + f"; exceeds {limit.text(flags=True)}: {self.pairs_fit} of {self.pairs_most} pairs fit"


def apply_worst(worsts, limit: Limit) -> ApplyWorst:
    """Each comparison's pairs within its own budget, then, in plan order,
    those that also fit under the apply-wide `limit` (a pair: its two
    launches, or one when it shares its baseline's, and its seconds)."""
    launches = seconds = 0.0
    pairs = fit = 0
    spent_l, spent_s = 0, 0.0
    for w in worsts:
        own = min(w.pairs_fit, w.pairs_most) - w.pairs_done
        # a comparison's launches this apply, at most, spread over its new pairs
        per_pair_l = w.launches_most / max(1, w.pairs_most - w.pairs_done)
        per_pair_s = w.seconds_most / max(1, w.pairs_most - w.pairs_done)
        pairs += own
        launches += own * per_pair_l
        seconds += own * per_pair_s
        for _ in range(own):
            if limit.launches is not None and spent_l + per_pair_l > limit.launches + 1e-9:
                break
            if limit.seconds is not None and spent_s + per_pair_s > limit.seconds + 1e-9:
                break
            spent_l, spent_s, fit = spent_l + per_pair_l, spent_s + per_pair_s, fit + 1
    return ApplyWorst(round(launches), seconds, pairs, limit.launches, limit.seconds, fit)


def duration_text(seconds: float) -> str:
    from specdsl.plan.cost import duration_text as text

    return text(seconds)


def calibrated_costs(state, experiment: str) -> tuple[float | None, float | None]:
    """(`cost.launch_s`, `cost.run_s`) of the latest completed `specdsl
    calibrate EXPERIMENT` recorded in `state`, or Nones."""
    for run in reversed(getattr(state, "runs", ()) if state is not None else ()):
        if run.step == f"calibrate.{experiment}" and run.status == "completed":
            metrics = dict(run.metrics)
            return metrics.get("cost.launch_s"), metrics.get("cost.run_s")
    return None, None


def arm_costs(step, state, durations) -> tuple[LaunchCost, LaunchCost]:
    """(baseline, candidate) launch costs of the paired benchmark `step`
    (its content and payload), by the chain of `launch_cost`."""
    from specdsl.plan.cost import arm_launch_identity, model_key, model_run_key, run_key
    from specdsl.plan.looks import block_of

    exp, base = step.payload["experiment"], step.payload["paired"]
    workload = exp.workload
    block = block_of(workload, state, exp.name)
    content = step.content
    out = []
    for arm, name in (("baseline", base.name), ("candidate", exp.name)):
        identity = arm_launch_identity(content, arm)
        launch = content["arms"][arm]
        out.append(launch_cost(
            workload, block, calibrated=calibrated_costs(state, name), calibrated_by=name,
            recorded=(durations.launch_s.get(identity), durations.run_s.get(run_key(identity, content, arm))),
            same_model=(durations.model_launch_s.get(model_key(launch)),
                        durations.model_run_s.get(model_run_key(launch, content, arm)))))
    return out[0], out[1]


def own_fit(step, state, durations, *, done: int, most: int) -> int:
    """Pairs in all the comparison's own budget allows (at most `most`),
    its `done` recorded pairs counted at the estimated cost of a pair (the
    plan reads no result folder for their wall time; apply does)."""
    workload = step.payload["experiment"].workload
    limit = limit_of(workload)
    if not limit.any or "endpoint" in step.payload:  # servers already running: no launch to budget
        return max(done, most)
    a, b = arm_costs(step, state, durations)
    pair_s = a.seconds + b.seconds
    return pairs_fit(limit, done=done, most=most, pair_launches=LAUNCHES_PER_PAIR, pair_s=pair_s,
                     spent_launches=LAUNCHES_PER_PAIR * done, spent_s=done * pair_s)


def plan_worsts(graph, costs, state, durations, run_counts: dict, results: dict, limit: Limit, *,
                rerun: bool = False) -> tuple[tuple, ApplyWorst | None]:
    """The worst case of each paired comparison the plan runs (its `costs`,
    specdsl.plan.cost) and of the whole apply against `limit`; (), None
    when no paired comparison runs."""
    from specdsl.plan.cost import Durations

    durations = durations if durations is not None else Durations()
    worsts = []
    for cost in costs:
        step = graph.steps[cost.addr]
        if "paired" not in step.payload or "endpoint" in step.payload:  # servers already running: no launches
            continue
        recorded = None if rerun else run_counts.get(results.get(step.identity))
        a, b = arm_costs(step, state, durations)
        worsts.append(worst_of(cost.addr, cost, step.payload["experiment"].workload, baseline=a, candidate=b,
                               done=recorded or 0))
    if not worsts:
        return (), None
    return tuple(worsts), apply_worst(worsts, limit)


def budget_advice(undecided, step, state, durations):
    """An undecided verdict (specdsl.plan.cost.Undecided) whose comparison
    has reached its own budget: its advice says so first (going on needs a
    raised budget, not only an apply)."""
    if "paired" not in step.payload or "endpoint" in step.payload or undecided.pairs is None:
        return undecided
    workload = step.payload["experiment"].workload
    limit = limit_of(workload)
    if not limit.any or own_fit(step, state, durations, done=undecided.pairs, most=undecided.pairs + 1) > undecided.pairs:
        return undecided
    said = f"its budget ({limit.text()} of workload {workload.name}) is reached at {undecided.pairs} pairs: raise it to measure more"
    from specdsl.plan.cost import allows_more

    rest = undecided.advice.removesuffix("; " + allows_more(workload, undecided.most))  # it would not
    return attrs.evolve(undecided, advice=f"{said}; {rest}" if rest else said)
