"""What the plan's benchmarks will cost, and what an undecided verdict needs.

Pure: the durations come in as data (`Durations`, read from the state
folder by `specdsl.plan.durations`), the verdicts from state.

- `Cost` of a benchmark that runs: pairs (first, and at most with adaptive
  pairs), launches (`specdsl.graph.pairs.launches`), runs, and seconds
  estimated as launches x (recorded seconds from start to ready +
  `warmup_time`) + runs x (recorded seconds of a run + `cooldown`), from
  recordings of the same server (launch identity) and workload; None
  ("unknown") when one of them was never recorded. A plain benchmark's
  launch counts when its launch step starts a server. `cold` says which
  launch will find its JIT caches empty (`cold_note`: the first of a stack
  on a host where no launch of it recorded its cache, servers.caches) and
  compile its kernels: it takes longer than the recorded launches.
- `Undecided`: a gating verdict recorded INCONCLUSIVE whose benchmark does
  not run in this plan. From the noise its pairs measured (the sd of their
  log ratios, recorded with the verdict: `specdsl.verdict.noise_of`) and
  its estimate: the pairs that would decide (`pairs_needed`, at most
  `AFFORDABLE_PAIRS`) with their launches and seconds, or, when no
  affordable number would, the smallest effect `max_runs` pairs detect
  (`mde_ratio`).
"""

from __future__ import annotations

import math
import statistics
from typing import Any

import attrs

from specdsl.graph.steps import digest
from specdsl.plan.looks import ALPHA  # the verdicts' level
from specdsl.stats import significant

# Beyond this many pairs a decision is not worth its launches: an undecided
# verdict that would need more says that no affordable amount decides it.
AFFORDABLE_PAIRS = 100


@attrs.frozen
class Durations:
    """Recorded durations: launch identity -> seconds from a server's start
    to ready, and `run_key` -> seconds of one run (medians of what was recorded)."""

    launch_s: dict[str, float] = attrs.Factory(dict)
    run_s: dict[str, float] = attrs.Factory(dict)
    caches: frozenset[str] = frozenset()  # `HOST ENV-IDENTITY` of the JIT caches recorded launches filled
    # the same by engine and model (`model_key`, `model_run_key`): what the
    # plan's budget estimates from when this server was never launched
    model_launch_s: dict[str, float] = attrs.Factory(dict)
    model_run_s: dict[str, float] = attrs.Factory(dict)

    @classmethod
    def of(cls, launches: dict[str, list[float]], runs: dict[str, list[float]], caches=(),
           model_launches: dict[str, list[float]] | None = None, model_runs: dict[str, list[float]] | None = None) -> "Durations":
        def medians(d):
            return {k: statistics.median(v) for k, v in (d or {}).items() if v}

        return cls(medians(launches), medians(runs), frozenset(caches), medians(model_launches), medians(model_runs))


def arm_launch_identity(content: dict, arm: str) -> str:
    """The launch identity of one arm (`baseline`, `candidate`) of a paired
    benchmark's content: the identity its server's own launch step has."""
    return digest(["launch", content["arms"][arm]])


def server_key(content: dict) -> str:
    """What a plain benchmark's runs are made on: its launch's identity, or,
    for a server already running (`url`), its endpoint's digest."""
    if "launch" in content:
        return content["launch"]
    return digest(["endpoint", content.get("endpoint")])


def run_key(launch_identity: str, content: dict, arm: str | None = None) -> str:
    """What makes runs comparable in duration: the server (its launch
    identity) and what the benchmark asks of it (workload, dataset, request)."""
    request = content.get("request")
    if arm is not None and isinstance(request, dict):
        request = request.get(arm)
    return digest(["runs", launch_identity, content.get("workload"), content.get("dataset_digest"), request])


def model_key(launch_content: dict) -> str:
    """What makes launches of different servers comparable in duration, at
    worst: the engine and the model (a launch's content's `server`)."""
    server = launch_content["server"]
    return digest(["model", server.get("engine"), server.get("model")])


def model_run_key(launch_content: dict, content: dict, arm: str | None = None) -> str:
    """`run_key` by engine and model instead of the whole server."""
    request = content.get("request")
    if arm is not None and isinstance(request, dict):
        request = request.get(arm)
    return digest(["model-runs", model_key(launch_content), content.get("workload"), content.get("dataset_digest"), request])


@attrs.frozen
class Cost:
    """What one benchmark that runs will cost. `*_first`: what it measures
    first; `*_most`: with every adaptive pair its budget allows. Seconds
    None: unknown (`unknown` says what was never recorded)."""

    addr: str
    runs_first: int
    runs_most: int
    launches_first: int
    launches_most: int
    pairs_first: int | None = None
    pairs_most: int | None = None
    seconds_first: float | None = None
    seconds_most: float | None = None
    unknown: str = ""
    shares_with: str | None = None  # the benchmark whose baseline launches its first pairs read
    cold: str = ""  # which launch finds its JIT caches empty (`cold_note`)

    def as_json(self) -> dict[str, Any]:
        return {"pairs_first": self.pairs_first, "pairs_most": self.pairs_most,
                "launches_first": self.launches_first, "launches_most": self.launches_most,
                "runs_first": self.runs_first, "runs_most": self.runs_most,
                "seconds_first": _round(self.seconds_first), "seconds_most": _round(self.seconds_most)} | (
                    {"shares_baseline_launches_with": self.shares_with} if self.shares_with else {}) | (
                    {"cold": self.cold} if self.cold else {})

    def line(self) -> str:
        bits = []
        if self.pairs_first is not None:
            bits.append(_span(self.pairs_first, self.pairs_most, "pair"))
        bits += [_span(self.launches_first, self.launches_most, "launch"), _span(self.runs_first, self.runs_most, "run")]
        line = ", ".join(bits) + ", " + _time_span(self.seconds_first, self.seconds_most, self.unknown)
        line += f" (baseline launches shared with {self.shares_with})" if self.shares_with else ""
        return line + (f"; {self.cold}" if self.cold else "")


@attrs.frozen
class Total:
    launches_first: int = 0
    launches_most: int = 0
    runs_first: int = 0
    runs_most: int = 0
    seconds_first: float | None = 0.0
    seconds_most: float | None = 0.0

    def as_json(self) -> dict[str, Any]:
        return {"launches_first": self.launches_first, "launches_most": self.launches_most,
                "runs_first": self.runs_first, "runs_most": self.runs_most,
                "seconds_first": _round(self.seconds_first), "seconds_most": _round(self.seconds_most)}

    def line(self) -> str:
        return (f"{_span(self.launches_first, self.launches_most, 'launch')}, {_span(self.runs_first, self.runs_most, 'run')}, "
                + _time_span(self.seconds_first, self.seconds_most, "a benchmark's durations are not recorded"))


def total(costs) -> Total:
    """The plan's total: each benchmark's launches, runs and seconds
    (a launch shared by plain benchmarks is counted by the first of them)."""
    out = Total()
    for c in costs:
        out = Total(out.launches_first + c.launches_first, out.launches_most + c.launches_most,
                    out.runs_first + c.runs_first, out.runs_most + c.runs_most,
                    _add(out.seconds_first, c.seconds_first), _add(out.seconds_most, c.seconds_most))
    return out


def _add(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a + b


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 1)


def _span(a: int, b: int | None, word: str) -> str:
    plural = "es" if word.endswith("ch") else "s"
    if b is None or b == a:
        return f"{a} {word}{'' if a == 1 else plural}"
    return f"{a}-{b} {word}{plural}"


def duration_text(seconds: float) -> str:
    """`45 s`, `3.2 min`, `1.5 h`."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def _time_span(a: float | None, b: float | None, why: str) -> str:
    if a is None or b is None:
        return f"time unknown ({why})" if why else "time unknown"
    if b - a < 0.5:
        return f"~{duration_text(a)}"
    return f"~{duration_text(a)} to {duration_text(b)}"


def paired_cost(addr: str, content: dict, workload, *, done: int, first: int, most: int, durations: Durations,
                block: int | None = None, shares_with: str | None = None) -> Cost:
    """The cost of a paired benchmark measuring `first` pairs now, at most
    `most` in all (`done` are recorded already and kept); `block` runs of
    each arm on each launch (None: the workload's `block`, else 1; the walk
    runs what plan.looks.block_of says, a calibrated suggestion included).
    `shares_with`: the benchmark whose baseline launches this one's first
    pairs read (specdsl.graph.pairs, sharing): those pairs cost the
    candidate's launch and runs only; pairs past them, at most, both arms'."""
    from specdsl.graph.pairs import launches

    if block is None:
        from specdsl.plan.economy import default_block

        block = default_block(workload)

    now, at_most = first, max(first, most - done)
    a, b = arm_launch_identity(content, "baseline"), arm_launch_identity(content, "candidate")
    per_launch = [durations.launch_s.get(a), durations.launch_s.get(b)]
    per_run = [durations.run_s.get(run_key(a, content, "baseline")), durations.run_s.get(run_key(b, content, "candidate"))]
    missing = []
    if None in per_launch:
        missing.append("no recorded launch of " + ("either arm's server" if per_launch == [None, None] else
                                                   "the baseline's server" if per_launch[0] is None else "the candidate's server"))
    if None in per_run:
        missing.append("no recorded run of this workload on " + ("either arm" if per_run == [None, None] else
                                                                 "the baseline" if per_run[0] is None else "the candidate"))

    def seconds(pairs: int, alone: int) -> float | None:
        """`pairs` pairs of which `alone` launch both arms (the rest: the candidate only)."""
        if missing:
            return None
        warm = workload.warmup_time or 0.0
        both = launches(alone) * (statistics.fmean(per_launch) + warm) + alone * block * (sum(per_run) + 2 * workload.cooldown)
        own = (pairs - alone) * (per_launch[1] + warm + block * (per_run[1] + workload.cooldown))
        return both + own

    if shares_with is None:
        return Cost(addr, 2 * block * now, 2 * block * at_most, launches(now), launches(at_most),
                    now, at_most, seconds(now, now), seconds(at_most, at_most), "; ".join(missing))
    alone = at_most - now  # past the shared pairs, this comparison may go on alone
    return Cost(addr, block * now, block * now + 2 * block * alone, now, now + launches(alone),
                now, at_most, seconds(now, 0), seconds(at_most, alone), "; ".join(missing), shares_with=shares_with)


def cold_note(stacks: list[tuple[str, str, str]], caches: frozenset[str]) -> str:
    """`the first launch of stack S on host H is cold (...)` for each
    (stack name, host key, environment identity) of a benchmark's servers
    whose JIT cache no recorded launch filled; '' when all are warm."""
    cold = sorted({(name, host) for name, host, env in stacks if f"{host} {env}" not in caches})
    if not cold:
        return ""
    where = ", ".join(f"stack {name} on host {host}" for name, host in cold)
    return f"the first launch of {where} is cold (no JIT cache recorded there: it compiles its kernels, slower than recorded)"


def plain_cost(addr: str, content: dict, workload, *, runs: int, launch: str | None, durations: Durations) -> Cost:
    """The cost of a plain benchmark making `runs` runs on the server of its
    launch step, whose identity is `launch` when this benchmark starts it
    (None: the server is up, or another benchmark's cost counts its launch)."""
    # no recorded run at all (a first plan): no key to make (a digest a benchmark)
    run_s = durations.run_s.get(run_key(server_key(content), content)) if durations.run_s else None
    launch_s = durations.launch_s.get(launch) if launch is not None else 0.0
    missing = []
    if launch_s is None:
        missing.append("no recorded launch of this server")
    if run_s is None:
        missing.append("no recorded run of this workload on this server")
    seconds = None
    if not missing:
        seconds = (launch_s + (workload.warmup_time or 0.0) if launch is not None else 0.0) + runs * (run_s + workload.cooldown)
    n = 1 if launch is not None else 0
    return Cost(addr, runs, runs, n, n, None, None, seconds, seconds, "; ".join(missing))


@attrs.frozen
class Undecided:
    """A gating verdict the last apply left INCONCLUSIVE, and what would decide it."""

    check: str
    experiment: str
    run: str  # the verdict run
    detail: str  # the verdict, as recorded
    not_promoted: str  # "nothing was promoted to track T: ..." or ""
    pairs: int | None = None  # pairs measured
    noise: float | None = None  # sd of their log ratios
    needed: int | None = None  # pairs in all that would decide, at this noise and estimate
    more_pairs: int | None = None
    launches: int | None = None
    seconds: float | None = None
    most: int | None = None  # the budget: max_runs pairs
    mde_at_most: float | None = None  # the smallest effect (a ratio) max_runs pairs detect, when no affordable amount decides
    advice: str = ""

    def as_json(self) -> dict[str, Any]:
        return {"check": self.check, "experiment": self.experiment, "verdict_run": self.run, "detail": self.detail,
                "not_promoted": self.not_promoted, "pairs": self.pairs, "noise": self.noise,
                "pairs_needed": self.needed, "more_pairs": self.more_pairs, "launches": self.launches,
                "seconds": _round(self.seconds), "max_runs": self.most, "mde_at_max_runs": self.mde_at_most,
                "advice": self.advice}

    def lines(self) -> list[str]:
        out = [f"{self.check}  {self.detail} (run {self.run})"]
        if self.not_promoted:
            out.append(self.not_promoted)
        if self.advice:
            out.append(self.advice)
        return out


def allows_more(workload, most: int) -> str:
    """The end of an undecided verdict's advice when its `max_runs` (`most`
    pairs) still allows more pairs (plan.budget takes it off where a budget
    would not)."""
    from specdsl.plan.economy import budget_runs

    return f"max_runs = {budget_runs(workload)} ({most} pairs) allows it: apply again"


def undecided_of(check_step, verdict_run, bench_step, *, not_promoted: str, durations: Durations,
                 calibrated: float | None, spec: str, block: int | None = None) -> Undecided:
    """What would decide the inconclusive verdict `verdict_run` of `check_step`
    (on the results of `bench_step`, `block` runs of each arm a launch)."""
    from specdsl.graph.pairs import launches
    from specdsl.plan.looks import max_runs

    exp = check_step.payload["experiment"]
    workload = exp.workload
    verdict = verdict_run.verdict
    decision = verdict.decision if verdict is not None else None
    n = decision.n if decision is not None else None
    noise = verdict.noise if verdict is not None else None
    estimate, k = (decision.estimate, decision.threshold) if decision is not None else (None, None)
    if estimate is not None and not math.isfinite(estimate):
        estimate = None
    most = max_runs(workload, block)
    base = Undecided(check_step.addr, exp.name, verdict_run.id, verdict.detail if verdict is not None else "", not_promoted,
                     pairs=int(n) if n is not None else None, noise=noise, most=most)
    paired = "paired" in bench_step.payload
    if not paired:
        return attrs.evolve(base, advice=f"not paired: raise `runs` of workload {workload.name} to measure more")
    if noise is None or estimate is None or k is None or n is None:
        if calibrated is None:
            return attrs.evolve(base, advice=f"its noise was not recorded with the verdict and nothing measured it: "
                                             f"measure it with `specdsl calibrate {spec} {exp.name}`, or re-apply with --rerun")
        noise = calibrated
        if estimate is None or k is None:
            return attrs.evolve(base, noise=noise, advice="its estimate was not recorded with the verdict: re-apply with --rerun")
    from specdsl.verdict import mde_ratio, pairs_needed

    effect = estimate / k if estimate > 0 and k > 0 else math.nan
    needed = None
    if math.isfinite(effect) and effect != 1.0:
        needed = pairs_needed(noise, effect, alpha=ALPHA, max_pairs=AFFORDABLE_PAIRS)
    done = int(n) if n is not None else 0
    if needed is None:
        mde = mde_ratio(noise, max(2, most))
        far = f"{abs(effect - 1):.1%} from the threshold" if math.isfinite(effect) else "at the threshold"
        return attrs.evolve(base, noise=noise, mde_at_most=mde,
                            advice=(f"no affordable amount decides it: the estimate is {far}, and at the measured noise "
                                    f"(sd {significant(noise, 3)} of the log ratios) more than {AFFORDABLE_PAIRS} pairs would be needed; "
                                    f"{most} pairs (max_runs) detect {mde - 1:.1%} beyond the threshold. Change the "
                                    f"threshold, or make the runs less noisy (longer runs, `block`, a quieter machine)"))
    needed = max(needed, done + 1)
    more = needed - done
    cost = None
    try:
        cost = paired_cost(bench_step.addr, bench_step.content, workload, done=done, first=more, most=more,
                           durations=durations, block=block)
    except (KeyError, TypeError):
        cost = None
    seconds = cost.seconds_first if cost is not None else None
    what = (f"a decision needs about {needed} pairs at the measured noise (sd {significant(noise, 3)} of the log ratios of "
            f"{done} pairs) and estimate: {more} more pair{'s' if more != 1 else ''}, {launches(more)} launches, "
            + (f"~{duration_text(seconds)}" if seconds is not None else f"time unknown ({cost.unknown if cost else 'no durations'})"))
    from specdsl.plan.economy import budget_runs, default_block

    per_launch = block if block is not None else default_block(workload)
    # `max_runs` counts runs of each arm (plan.economy): the pairs needed, `per_launch` runs each
    todo = (f"raise `max_runs` of workload {workload.name} to {needed * per_launch} ({needed} pairs of {per_launch} "
            f"run{'s' if per_launch != 1 else ''} a launch) and apply again" if needed > most
            else allows_more(workload, most))
    return attrs.evolve(base, noise=noise, needed=needed, more_pairs=more, launches=launches(more), seconds=seconds,
                        advice=f"{what}; {todo}")
