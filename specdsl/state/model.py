"""The State model: frozen records of what exists and what has run.

Plain values only (str, int, float, bool, tuples, and mappings frozen as
tuples of (key, value) pairs sorted by key), so a State compares by value and
round-trips through TOML exactly. `None` is never stored: TOML cannot hold it,
so optional fields are omitted on disk and `effective` drops None entries when
built (see `freeze_value`).

Changes go through the `with_*` methods, which return new States and keep the
invariants the reader checks (`State.problems`): unique keys, every result and
baseline points at a completed run. They never touch `serial` or `lineage`:
`write_state` bumps the serial, the lineage is fixed by `State.new`.
"""

from __future__ import annotations

import datetime as _dt
import re
import uuid
from typing import Any

import attrs

from specdsl.verdict.record import Verdict

FORMAT_VERSION = 2  # 2: a check's verdict is structured (RunRecord.verdict); 1 kept it as prose in `reason`
STATUSES = ("completed", "failed", "skipped", "interrupted")
SERVER_STATUSES = ("starting", "ready")
RUN_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")

Pairs = tuple[tuple[str, Any], ...]


def utc_now() -> str:
    """The time now, UTC, ISO 8601 to the second: `2026-03-01T12:00:00Z`."""
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_run_id(time: str | None = None) -> str:
    """A run id that sorts by time and is safe as a folder name:
    `20260301T120000Z-1a2b3c4d`."""
    stamp = (time or utc_now()).replace("-", "").replace(":", "")
    return f"{stamp}-{uuid.uuid4().hex[:8]}"


def is_mapping(value: tuple) -> bool:
    """Whether a tuple is frozen pairs (what a dict freezes to): 2-tuples with
    str keys, strictly sorted. A list that happens to look like that is the
    same value once frozen, so it is written as a table and reads back equal."""
    if not value or not all(isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str) for p in value):
        return False
    keys = [p[0] for p in value]
    return all(a < b for a, b in zip(keys, keys[1:]))


def freeze_value(value: Any) -> Any:
    """A config value frozen: dicts (and frozen pairs) become sorted pairs,
    lists tuples, and None is dropped wherever it appears (TOML cannot hold
    it; an absent key means the same). Idempotent."""
    if isinstance(value, dict):
        return tuple(sorted((str(k), freeze_value(v)) for k, v in value.items() if v is not None))
    if isinstance(value, tuple) and is_mapping(value):
        return tuple((k, freeze_value(v)) for k, v in value if v is not None)
    if isinstance(value, (list, tuple)):
        return tuple(freeze_value(v) for v in value if v is not None)
    return value


def _pairs(value: Any) -> Pairs:
    """Converter for mapping fields: a dict or pairs, frozen and sorted."""
    if not value:
        return ()
    if isinstance(value, dict):
        return freeze_value(value)
    return freeze_value(dict(value))


def _str_pairs(value: Any) -> tuple[tuple[str, str], ...]:
    return tuple((k, str(v)) for k, v in _pairs(value))


def _float_pairs(value: Any) -> tuple[tuple[str, float], ...]:
    return tuple((k, float(v)) for k, v in _pairs(value))


@attrs.frozen
class Environment:
    """A provisioned Python environment on a host. `identity` is the
    provision step's hash; `packages` the resolved name -> version;
    `torch` torch/CUDA/NCCL versions as seen from inside it."""

    identity: str
    host: str
    path: str
    python: str
    python_version: str
    packages: tuple[tuple[str, str], ...] = attrs.field(default=(), converter=_str_pairs)
    torch: tuple[tuple[str, str], ...] = attrs.field(default=(), converter=_str_pairs)
    created: str = ""
    nvcc: str = ""  # the CUDA toolkit release checked when it was built ("" when the stack names no cuda)


@attrs.frozen
class ServerRecord:
    """A server started and not yet seen stopped. `addr` is its launch
    step (`launch.kimi`), `identity` that step's hash; `pgid` its process
    group (what teardown signals); `effective` the configuration it reports
    running with. It is recorded `starting` as soon as its process exists,
    before anything waits on it (so an apply killed while it starts leaves
    a record, not an orphan), and becomes `ready` once it answered; `argv`
    (secrets redacted) and `spec` (the spec file it was applied from) say
    what it is to someone who finds it. Records written before these fields
    existed read as `ready` with no argv or spec."""

    identity: str
    addr: str
    host: str
    pid: int
    pgid: int
    port: int
    base_url: str
    log: str = ""
    started: str = ""
    effective: Pairs = attrs.field(default=(), converter=_pairs)
    status: str = attrs.field(default="ready", validator=attrs.validators.in_(SERVER_STATUSES))
    argv: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    spec: str = ""


@attrs.frozen
class RunRecord:
    """One execution of a step. `step` is its address (`benchmark.upgrade`),
    `identity` its content hash, `folder` the run folder relative to the
    state folder; `metrics` medians across repetitions; `reason` why it
    failed or was skipped. `runs` is how many repetitions (the workload's
    `runs`) those metrics summarize; None: not recorded (a state written
    before the count was), taken as enough by planning. `job` is the id of
    the Slurm job the run happened in (docs/slurm.md). `invalid`: the runs
    (repetitions) of a benchmark that are not measurements, `run N: why`
    (specdsl.bench.validity); None when every run is valid. They stay in the
    run folder's result but `runs` and `metrics` leave them out. `verdict`:
    a check's verdict (a *verdict run*, specdsl.state.promotions), with its
    status, text and numbers; None for every other run."""

    id: str
    step: str
    identity: str
    experiment: str
    status: str = attrs.field(validator=attrs.validators.in_(STATUSES))
    started: str
    finished: str = ""
    folder: str = ""
    metrics: tuple[tuple[str, float], ...] = attrs.field(default=(), converter=_float_pairs)
    effective: Pairs = attrs.field(default=(), converter=_pairs)
    reason: str = ""
    argv: tuple[str, ...] = attrs.field(default=(), converter=tuple)  # a launch: the command that started the server
    runs: int | None = None
    job: str | None = None  # the Slurm job it ran in (None: not through Slurm)
    invalid: tuple[str, ...] | None = attrs.field(default=None, converter=lambda v: None if v is None else tuple(v))
    verdict: Verdict | None = None

    def metric(self, name: str) -> float | None:
        return dict(self.metrics).get(name)


@attrs.frozen
class Baseline:
    """The run a track currently compares against."""

    track: str
    run: str
    experiment: str
    promoted: str


@attrs.frozen
class Promotion:
    """Audit record: at `time`, `run` of `experiment` became the baseline of
    `track` after `checks` passed, replacing run `previous` (None: first).

    `verdicts` are the ids of the check runs whose verdicts it rests on (in
    the order of `checks`); `runs_seen` how many runs state held when it was
    made (`runs[:runs_seen]` were recorded before it, so a verdict recorded
    later is new to it; None: not recorded, a state written before it was);
    `lock` the stack lock it wrote, relative to the state folder."""

    track: str
    run: str
    experiment: str
    checks: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    previous: str | None = None
    time: str = ""
    verdicts: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    runs_seen: int | None = None
    lock: str = ""


@attrs.frozen
class StepRecord:
    """What a step at `addr` last completed with: its identity and its
    content (canonical JSON text), so a later plan can name the fields that
    changed (`args.attention-backend: "triton" -> "flashinfer"`)."""

    addr: str
    kind: str
    identity: str
    content: str = "{}"
    updated: str = ""

    def content_dict(self) -> dict:
        import json

        try:
            value = json.loads(self.content)
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}


def _replace(items: tuple, key, item, sort_key=None) -> tuple:
    kept = [x for x in items if key(x) != key(item)] + [item]
    return tuple(sorted(kept, key=sort_key)) if sort_key else tuple(kept)


@attrs.frozen
class State:
    """Everything recorded about one state folder.

    `results` maps a step identity to the id of the run holding its
    completed result. `runs` and `promotions` are kept in the order they
    happened; the other collections are sorted by their key.
    """

    format_version: int
    lineage: str
    serial: int
    environments: tuple[Environment, ...] = ()
    servers: tuple[ServerRecord, ...] = ()
    runs: tuple[RunRecord, ...] = ()
    results: tuple[tuple[str, str], ...] = attrs.field(default=(), converter=_str_pairs)
    baselines: tuple[Baseline, ...] = ()
    promotions: tuple[Promotion, ...] = ()
    steps: tuple[StepRecord, ...] = ()

    @classmethod
    def new(cls) -> "State":
        """A fresh state: new lineage, serial 0, nothing recorded."""
        return cls(format_version=FORMAT_VERSION, lineage=str(uuid.uuid4()), serial=0)

    # -- lookups -------------------------------------------------------
    def environment(self, identity: str) -> Environment | None:
        return next((e for e in self.environments if e.identity == identity), None)

    def server(self, identity: str) -> ServerRecord | None:
        return next((s for s in self.servers if s.identity == identity), None)

    def servers_at(self, addr: str) -> tuple[ServerRecord, ...]:
        return tuple(s for s in self.servers if s.addr == addr)

    def run(self, run_id: str) -> RunRecord | None:
        return next((r for r in self.runs if r.id == run_id), None)

    def runs_of(self, step: str) -> tuple[RunRecord, ...]:
        """Runs of the step at address `step`, oldest first."""
        return tuple(r for r in self.runs if r.step == step)

    def result(self, identity: str) -> RunRecord | None:
        """The completed run recorded as the result of step `identity`."""
        run_id = dict(self.results).get(identity)
        return self.run(run_id) if run_id is not None else None

    def step(self, addr: str) -> StepRecord | None:
        return next((s for s in self.steps if s.addr == addr), None)

    def baseline(self, track: str) -> Baseline | None:
        return next((b for b in self.baselines if b.track == track), None)

    def promotions_of(self, track: str) -> tuple[Promotion, ...]:
        """The promotions of `track`, oldest first."""
        return tuple(p for p in self.promotions if p.track == track)

    def latest_promotion(self, track: str) -> Promotion | None:
        return next((p for p in reversed(self.promotions) if p.track == track), None)

    def baseline_for(self, track: str, run_id: str | None) -> str | None:
        """The run `track`'s baseline is for a candidate whose result is
        `run_id`: the baseline now, or, when that is the candidate's own
        result, the run it replaced (a promoted result is not compared with
        itself). None: the track has no such run."""
        base = self.baseline(track)
        if base is None or run_id is None or base.run != run_id:
            return base.run if base is not None else None
        own = next((p for p in reversed(self.promotions) if p.track == track and p.run == run_id), None)
        return own.previous if own is not None else None

    def tracks(self) -> tuple[str, ...]:
        """Every track with a baseline or a promotion, sorted."""
        return tuple(sorted({b.track for b in self.baselines} | {p.track for p in self.promotions}))

    # -- changes (each returns a new State) -----------------------------
    def with_environment(self, env: Environment) -> "State":
        """Record `env`, replacing one of the same identity."""
        envs = _replace(self.environments, lambda e: e.identity, env, lambda e: e.identity)
        return attrs.evolve(self, environments=envs)

    def without_environment(self, identity: str) -> "State":
        return attrs.evolve(self, environments=tuple(e for e in self.environments if e.identity != identity))

    def with_server(self, server: ServerRecord) -> "State":
        """Record `server`, replacing one of the same identity."""
        servers = _replace(self.servers, lambda s: s.identity, server, lambda s: (s.addr, s.identity))
        return attrs.evolve(self, servers=servers)

    def without_server(self, identity: str) -> "State":
        return attrs.evolve(self, servers=tuple(s for s in self.servers if s.identity != identity))

    def with_step(self, record: StepRecord) -> "State":
        """Record what the step at `record.addr` completed with."""
        return attrs.evolve(self, steps=_replace(self.steps, lambda s: s.addr, record, lambda s: s.addr))

    def with_run(self, run: RunRecord) -> "State":
        """Append `run` (replacing one with the same id in place). A completed
        run becomes the result of its step identity; a failed or skipped run
        leaves an earlier result in place. ValueError (a caller bug) when it
        would turn a baseline's run into a failed or skipped one."""
        if run.status != "completed" and any(b.run == run.id for b in self.baselines):
            raise ValueError(f"run {run.id!r} is a baseline; it cannot become {run.status!r}")
        if self.run(run.id) is not None:
            runs = tuple(run if r.id == run.id else r for r in self.runs)
        else:
            runs = self.runs + (run,)
        results = {k: v for k, v in self.results if v != run.id}  # a replaced run stops being a result
        if run.status == "completed":
            results[run.identity] = run.id
        else:
            # a failed rerun keeps the older result, unless it replaced that very run
            results.update({k: v for k, v in self.results if k == run.identity and v != run.id})
        return attrs.evolve(self, runs=runs, results=results)

    def with_promotion(
        self, track: str, run_id: str, checks: tuple[str, ...] | list[str], time: str | None = None, *,
        experiment: str | None = None, verdicts: tuple[str, ...] | list[str] = (), lock: str = "",
    ) -> "State":
        """Make completed run `run_id` the baseline of `track` and append the
        audit record (`experiment`: the promoting experiment, by default the
        run's; `verdicts`: the check runs it rests on; `lock`: the lock file
        written, relative to the state folder; `runs_seen` is set to the
        runs recorded so far). ValueError (a caller bug) if the run is not a
        completed run of this state, or a verdict is not a run of it."""
        run = self.run(run_id)
        if run is None or run.status != "completed":
            raise ValueError(f"cannot promote {run_id!r}: not a completed run in this state")
        missing = [v for v in verdicts if self.run(v) is None]
        if missing:
            raise ValueError(f"cannot promote {run_id!r}: verdict runs {missing!r} are not in this state")
        time = time or utc_now()
        experiment = experiment or run.experiment
        old = self.baseline(track)
        baseline = Baseline(track=track, run=run_id, experiment=experiment, promoted=time)
        promotion = Promotion(
            track=track, run=run_id, experiment=experiment, checks=tuple(checks),
            previous=old.run if old else None, time=time, verdicts=tuple(verdicts),
            runs_seen=len(self.runs), lock=lock,
        )
        baselines = _replace(self.baselines, lambda b: b.track, baseline, lambda b: b.track)
        return attrs.evolve(self, baselines=baselines, promotions=self.promotions + (promotion,))

    # -- invariants ----------------------------------------------------
    def problems(self) -> list[tuple[str, str]]:
        """(key path, what is wrong) for each broken invariant; [] when sound."""
        out: list[tuple[str, str]] = []

        def dupes(name: str, items: tuple, key) -> None:
            seen: set = set()
            for i, item in enumerate(items):
                k = key(item)
                if k in seen:
                    out.append((f"{name}[{i}]", f"duplicate {k!r}"))
                seen.add(k)

        dupes("environments", self.environments, lambda e: e.identity)
        dupes("servers", self.servers, lambda s: s.identity)
        dupes("runs", self.runs, lambda r: r.id)
        dupes("baselines", self.baselines, lambda b: b.track)
        dupes("steps", self.steps, lambda s: s.addr)
        for i, run in enumerate(self.runs):
            if not RUN_ID_RE.match(run.id):
                out.append((f"runs[{i}].id", f"{run.id!r} is not a valid run id (letters, digits, . _ -)"))
            if run.runs is not None and run.runs < 0:
                out.append((f"runs[{i}].runs", f"expected a count (0 or more), found {run.runs}"))
        completed = {r.id for r in self.runs if r.status == "completed"}
        for identity, run_id in self.results:
            if run_id not in completed:
                out.append((f"results.{identity}", f"run {run_id!r} is not a completed run in this state"))
        for i, b in enumerate(self.baselines):
            if b.run not in completed:
                out.append((f"baselines[{i}].run", f"run {b.run!r} is not a completed run in this state"))
        known = {r.id for r in self.runs}
        for i, p in enumerate(self.promotions):
            for j, v in enumerate(p.verdicts):
                if v not in known:
                    out.append((f"promotions[{i}].verdicts[{j}]", f"run {v!r} is not a run in this state"))
            if p.runs_seen is not None and not 0 <= p.runs_seen <= len(self.runs):
                out.append((f"promotions[{i}].runs_seen", f"expected 0 to {len(self.runs)} (the runs recorded), found {p.runs_seen}"))
        return out
