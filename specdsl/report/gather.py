"""From state to what a report shows of one experiment: plain records, no
drawing (specdsl.report.lookup finds what a name is; collections builds
the views of many experiments from these).

An experiment's records: its benchmark result (the latest completed run of
its benchmark step), its runs in the order they ran with the arm of each
(both arms of a paired benchmark; else the baseline's benchmark, then its
own), the pooled latency samples of each arm, the verdict of each check,
the stack and server difference between the arms, and every step of it
whose latest run failed (with the step it was skipped because of).
"""

from __future__ import annotations

import re
from pathlib import Path

import attrs

from specdsl.apply import checks
from specdsl.apply.repeats import said_once
from specdsl.apply.results import document_of, effective_of
from specdsl.apply.validity import not_read
from specdsl.model.assert_shape import noise_key, shape_of
from specdsl.paired_result import PairedResult
from specdsl.report import verdicts as vlines
from specdsl.report.differences import Difference, differences_of
from specdsl.report.release import ReleaseFacts, release_facts
from specdsl.state import RunRecord, State
from specdsl.state.queries import Queries
from specdsl.verdict.decision import Decision, Status
from specdsl.verdict.record import Verdict

LATENCIES = ("ttft", "itl", "e2el")
HEADLINES = ("output_throughput", "total_token_throughput", "request_throughput", "median_ttft_ms", "median_e2el_ms")
_SKIPPED_BECAUSE = re.compile(r"skipped because (\S+) failed")


@attrs.frozen
class PairValue:
    """One pair of a paired verdict: its number, the launch of each arm's
    server, each arm's value and what the verdict took from them (the ratio
    candidate / baseline, or the candidate's value)."""

    pair: int
    launch_a: int | None
    launch_b: int | None
    baseline: float | None
    candidate: float
    value: float


@attrs.frozen
class CheckView:
    """One check of an experiment as the page shows it: the verdict state
    recorded (its status, line and, for a gating one, the Decision with
    the estimate, interval, n and threshold) and the values it was decided
    from, read again from the run folders."""

    check: str
    assertion: str  # the expression as written (canonical layout)
    verdict: Verdict
    points: tuple[float, ...] = ()  # per pair ratios (ratio) or per block values (absolute)
    time: str = ""
    metric: str = ""  # the per-run metric that tracks the assertion's candidate term (`p99(itl)`: p99_itl_ms)
    pairs: tuple[PairValue, ...] = ()  # a paired verdict's values, pair by pair

    @property
    def status(self) -> Status:
        return self.verdict.status

    @property
    def detail(self) -> str:
        return self.verdict.detail

    @property
    def decision(self) -> Decision | None:
        """The numbers of a gating verdict, None for an exact one or one not decided."""
        return self.verdict.decision


@attrs.frozen
class RunPoint:
    """One run of a benchmark: its place in time, arm, launch and pair."""

    order: int
    arm: str  # "A" baseline, "B" candidate
    value: float | None
    launch: int | None = None
    pair: int | None = None


@attrs.frozen
class Arm:
    letter: str
    experiment: str
    samples: dict[str, tuple[float, ...]]  # ttft, itl, e2el in ms, every measured request of the arm


@attrs.frozen
class Failure:
    step: str
    status: str
    reason: str
    run: str
    time: str
    log: str = ""  # the run folder's newest log, relative to the state folder
    tail: str = ""  # its last lines


@attrs.frozen
class ExperimentView:
    name: str
    run: RunRecord | None  # its benchmark result
    paired: bool
    baseline: str  # the baseline experiment, `track NAME`, or "" (none)
    base_run: RunRecord | None
    metric: str  # the headline metric of the runs plot
    runs: tuple[RunPoint, ...]
    arms: tuple[Arm, ...]
    verdicts: tuple[CheckView, ...]
    differences: tuple[Difference, ...]
    failures: tuple[Failure, ...]
    notes: tuple[str, ...] = ()
    release: ReleaseFacts | None = None  # workload, stacks, host, version, identity, promotion
    warnings: tuple[str, ...] = ()  # what apply warned of this run's runs (a cold start), each message once
    measured_as: str = ""  # the experiment asked for, when this is the comparison that measured it as its baseline arm


class Index(Queries):
    """The state's queries (specdsl.state.queries: runs by step and
    experiment, results, verdict runs, checks), with the state folder the
    report reads run folders from."""

    def __init__(self, state: State, state_dir: Path) -> None:
        super().__init__(state)
        self.state_dir = Path(state_dir)

    def content(self, addr: str) -> dict:
        step = self.steps.get(addr)
        return step.content_dict() if step is not None else {}


def doc_of(run: RunRecord | None, state_dir: Path) -> dict | None:
    return document_of(run, state_dir) if run is not None and run.folder else None


def _pooled(runs: list[dict]) -> dict[str, tuple[float, ...]]:
    out: dict[str, list[float]] = {d: [] for d in LATENCIES}
    for r in runs:
        for d in LATENCIES:
            out[d].extend(float(v) for v in r.get("samples", {}).get(d, ()))
    return {d: tuple(v) for d, v in out.items()}


def experiment_view(ix: Index, name: str) -> ExperimentView:
    state_dir = ix.state_dir
    run = ix.result(name)
    bench_content = ix.content(f"benchmark.{name}")
    doc = doc_of(run, state_dir)
    got = PairedResult.of(doc)
    paired = bool(got and got.pairs)
    notes: list[str] = []
    if run is not None and doc is None:
        notes.append(f"the run folder of {run.id} ({run.folder}) is gone: runs and latency samples cannot be shown, only the medians state kept")
    left_out = not_read(doc)[0]  # invalid runs (specdsl.bench.validity): plotted, never read by a verdict
    if left_out:
        notes.append(f"{left_out}; no verdict reads them")

    baseline, base_run, base_doc = _baseline_of(ix, name, doc)
    verdict_list = [_verdict(ix, addr, name, doc, run, base_run, base_doc) for addr in ix.checks_of(name)]
    metric = _headline(ix, verdict_list, run, doc)

    runs: list[RunPoint] = []
    arms: list[Arm] = []
    if paired:
        arm_of = {i: (b.arm, b.launch, p.pair) for i, (p, b) in got.where().items()}
        ordered = sorted(got.runs, key=lambda r: r["index"])
        for k, r in enumerate(ordered):
            arm, launch, pair = arm_of.get(r["index"], ("", None, None))
            runs.append(RunPoint(k, arm, r.get("metrics", {}).get(metric), launch, pair))
        for letter in ("A", "B"):
            mine = [r for r in ordered if arm_of.get(r["index"], ("",))[0] == letter]
            arms.append(Arm(letter, got.name(letter, baseline if letter == "A" else name), _pooled(mine)))
    else:
        parts = [("A", base_run, base_doc, baseline)] if base_run is not None else []
        parts.append(("B", run, doc, name))
        parts.sort(key=lambda p: p[1].started if p[1] is not None else "")
        k = 0
        for launch, (letter, r, d, who) in enumerate(parts):
            if r is None:
                continue
            ordered = sorted((d or {}).get("runs", ()), key=lambda x: x.get("index", 0))
            for x in ordered:
                runs.append(RunPoint(k, letter, x.get("metrics", {}).get(metric), launch))
                k += 1
            if d is None and r.metric(metric) is not None:
                runs.append(RunPoint(k, letter, r.metric(metric), launch))
                k += 1
            arms.append(Arm(letter, who, _pooled(ordered)))
        arms.sort(key=lambda a: a.letter)
        if base_run is not None:
            notes.append("the baseline was not measured alongside: its runs come first, drift between the arms is not controlled")

    differences = differences_of(ix, name, bench_content, doc, run, base_run)
    release = release_facts(ix, name, run, doc, base_run)
    return ExperimentView(name, run, paired, baseline, base_run, metric, tuple(runs), tuple(arms),
                          tuple(verdict_list), tuple(differences), tuple(failures_of(ix, name)), tuple(notes), release,
                          run_warnings(name, doc))


def run_warnings(name: str, doc: dict | None) -> tuple[str, ...]:
    """The warnings each run of the result recorded, named as apply named
    them (`benchmark.NAME pair 2 arm B (cand): run 3: ...`), a message
    many runs said once with its count (apply.repeats.said_once)."""
    if not doc:
        return ()
    got = PairedResult.of(doc)
    where = {i: (p.pair + 1, b.arm) for i, (p, b) in got.where().items()} if got else {}
    arms = (got.arms if got else doc.get("arms")) or {}
    lines = []
    for r in sorted(doc.get("runs", ()) or (), key=lambda x: x.get("index", 0)):
        for w in r.get("warnings", ()) or ():
            if r.get("index") in where:
                pair, arm = where[r["index"]]
                lines.append(f"benchmark.{name} pair {pair} arm {arm} ({arms.get(arm, '')}): run {r['index']}: {w}")
            else:
                lines.append(f"benchmark.{name}: run {r.get('index', 0)}: {w}")
    return tuple(said_once(lines))


def _baseline_of(ix: Index, name: str, doc: dict | None) -> tuple[str, RunRecord | None, dict | None]:
    """(what the experiment compares against, the baseline's benchmark run
    when measured apart, its document)."""
    got = PairedResult.of(doc)
    if got and got.pairs:
        return got.name("A"), None, None
    for addr in ix.checks_of(name):
        base = ix.content(addr).get("baseline")
        if isinstance(base, dict) and "paired" in base:
            return str(base["paired"]), None, None
        if isinstance(base, dict) and "track" in base:
            track = str(base["track"])
            mine = ix.result(name)
            rid = ix.state.baseline_for(track, mine.id if mine is not None else None)
            r = ix.runs.get(rid) if rid else None
            return f"track {track}", r, doc_of(r, ix.state_dir)
        if isinstance(base, str):  # the baseline benchmark's identity
            r = ix.state.result(base)
            if r is not None:
                return r.experiment, r, doc_of(r, ix.state_dir)
    return "", None, None


def _verdict(ix: Index, addr: str, name: str, doc, run, base_run, base_doc) -> CheckView:
    check = addr[len(f"check.{name}."):] if addr.startswith(f"check.{name}.") else addr
    expr, text = vlines.assertion_of(ix.content(addr))
    vrun = ix.verdict_run(addr)
    if vrun is None or vrun.verdict is None:
        last = ix.by_step.get(addr, [])
        why = last[-1].reason if last else "no verdict recorded"
        return CheckView(check, text, Verdict(check, Status.ERROR, why or "no verdict recorded"))
    verdict = vrun.verdict
    points: tuple[float, ...] = ()
    pairs: tuple[PairValue, ...] = ()
    if expr is not None and verdict.decision is not None:
        try:
            points = _points(expr, doc, run, base_run, base_doc)
            pairs = _pair_values(expr, doc, run)
        except (checks.Missing, TypeError, ValueError, ZeroDivisionError, KeyError):
            points = ()  # a value the verdict needed a variable for: the interval is still shown
    metric = ""
    if expr is not None:
        shape = shape_of(expr)
        metric = (noise_key(shape.candidate) or "") if shape.kind != "exact" else ""
    return CheckView(check, text, verdict, points, vrun.finished or vrun.started, metric, pairs)


def _pair_values(expr, doc, run) -> tuple[PairValue, ...]:
    """Pair by pair, as the verdict reads them (judge.pair_points: a
    ratio's arms each as the mean of its launch's runs): each arm's value
    and the ratio (or the candidate's value), with the launch each block
    ran on."""
    from specdsl.apply.judge import blocks_of, pair_points

    got = PairedResult.of(doc)
    if not (got and got.pairs):
        return ()
    shape = shape_of(expr)
    if shape.kind not in ("ratio", "absolute"):
        return ()
    _a, _b, pairs = blocks_of(doc, effective_of(run))
    out = []
    for p, (base, cand) in zip(got.pairs, pair_points(shape, pairs, {})):
        launch = p.launches()
        value = cand / base if shape.kind == "ratio" else cand
        out.append(PairValue(p.pair, launch.get("A"), launch.get("B"), base, cand, value))
    return tuple(out)


def _points(expr, doc, run, base_run, base_doc) -> tuple[float, ...]:
    """The values the interval was computed from, as judge computes them
    (a paired one's pairs through judge.pair_points, as the verdict)."""
    from specdsl.apply.judge import blocks_of, pair_points

    shape = shape_of(expr)

    def value(term, mine, base) -> float:
        return float(checks.evaluate(term, mine, base, {}, []))

    if (got := PairedResult.of(doc)) and got.pairs:
        if shape.kind not in ("ratio", "difference", "absolute"):
            return ()
        _a, _b, pairs = blocks_of(doc, effective_of(run))
        points = pair_points(shape, pairs, {})
        if shape.kind == "ratio":
            return tuple(cand / base for base, cand in points)
        if shape.kind == "difference":
            return tuple(cand - base for base, cand in points)
        return tuple(cand for _base, cand in points)
    if doc is None or shape.kind not in ("ratio", "absolute", "difference"):
        return ()
    per_run = [checks.Results.from_bench({"runs": [r]}, {}) for r in doc.get("runs", ()) if not r.get("invalid")]
    values = tuple(value(shape.candidate, r, None) for r in per_run)
    if shape.kind in ("ratio", "difference") and base_run is not None:
        base = checks.Results.from_bench(base_doc, {}) if base_doc else checks.Results((dict(base_run.metrics),), {}, {})
        b = value(shape.baseline, None, base)
        return tuple(v / b for v in values) if shape.kind == "ratio" else values
    return values if shape.kind == "absolute" else ()


def _headline(ix: Index, verdicts: list[CheckView], run: RunRecord | None, doc) -> str:
    """The metric the runs plot shows: the first gating assertion's, when
    each run records it; else throughput."""
    have = set(dict(run.metrics)) if run is not None else set()
    if doc and doc.get("runs"):
        have |= set(doc["runs"][0].get("metrics", {}))
    return headline(verdicts, have)


def headline(verdicts, have: set[str]) -> str:
    for v in verdicts:
        if v.metric and v.metric in have:
            return v.metric
    return next((m for m in HEADLINES if m in have), sorted(have)[0] if have else "output_throughput")


def failures_of(ix: Index, name: str) -> list[Failure]:
    """Each step of the experiment whose latest run did not complete, and
    the step each skipped one names as the cause."""
    latest: dict[str, RunRecord] = {}
    for r in ix.runs_of_experiment(name):
        latest[r.step] = r
    out, seen = [], set()

    def add(r: RunRecord) -> None:
        if r.step in seen:
            return
        seen.add(r.step)
        log, tail = log_tail(ix.state_dir, r) if r.status == "failed" else ("", "")
        out.append(Failure(r.step, r.status, r.reason or "(no reason recorded)", r.id, r.finished or r.started, log, tail))
        m = _SKIPPED_BECAUSE.search(r.reason or "")
        if m and m.group(1) in ix.by_step:
            cause = ix.by_step[m.group(1)][-1]
            if cause.status != "completed":
                add(cause)

    for step, r in latest.items():
        if r.status != "completed":
            add(r)
    return out


TAIL_LINES = 20


def log_tail(state_dir: Path, run: RunRecord, lines: int = TAIL_LINES) -> tuple[str, str]:
    """(path, last lines) of the newest log in a failed run's folder: the
    server's or installer's own words on why (a paired run holds one log
    per launch; the newest is the one that failed)."""
    if not run.folder:
        return "", ""
    folder = Path(state_dir) / run.folder
    try:
        logs = sorted(folder.rglob("*.log"), key=lambda p: (p.stat().st_mtime, str(p)))
    except OSError:
        return "", ""
    if not logs:
        return "", ""
    # a paired step whose arm failed names it ("pair 0 arm B (cand): ..."):
    # both arms of a pair launch side by side, so the newest log may be the
    # other arm's; that arm's launch logs come first (candidates sharing a
    # baseline's launches are B, B2, ...: apply/steps/paired.py)
    arm = re.search(r"\bpair \d+ arm ([AB])\b", run.reason or "")
    if arm:
        mine = [p for p in logs if re.fullmatch(rf"launch-\d+-{arm.group(1)}\d*", p.parent.name)]
        logs = mine or logs
    try:
        text = logs[-1].read_text(errors="replace")
    except OSError:
        return "", ""
    return str(logs[-1].relative_to(state_dir)), "\n".join(text.splitlines()[-lines:])
