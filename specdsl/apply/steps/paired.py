"""A paired benchmark: a candidate and its baseline measured arm against arm
on one machine, pair after pair, each pair on two fresh launches (the
launch is the unit: specdsl.graph.pairs). Both servers of a pair run side
by side when they fit (their runs alternate ABBA), else one after the
other; every launch is warmed up at full concurrency before any run a
verdict reads. A launch whose steady warm-up did not settle
(specdsl.bench.steady) is dropped, never measured, and a fresh one of its
arm replaces it, at most MAX_REPLACED times a pair; then the comparison
stops with the pairs it has, and its undecided verdicts are INCONCLUSIVE
with the reason (`stopped` in the result; specdsl.apply.validity). After
the first `workload.runs` pairs, while a gating assertion of the
experiment is undecided and the budget (`max_runs` pairs) allows, more
pairs are added at the looks of the verdicts' schedule (repeated looks are
accounted for there, see docs/verdicts.md).

The result (`result.json`) holds every run, in the order it ran, with
`pairs`: for each pair its index, its arms' run indexes, and the launch
that served each arm; `launches`: per launch its arm, pair, command, log
and `launch_s` (start to ready); `looks`: the look schedule the pairs were
measured under (its horizon stays when `max_runs` is raised later). What
completed stays recorded when the step is interrupted: the pairs so far
are the result, and a re-apply adds the rest. A re-apply of an undecided
benchmark of the same identity continues it: the recorded pairs are kept
and only new pairs launch servers.
"""

from __future__ import annotations

import json
import re
import threading
import time

import attrs

from specdsl import bench, secrets, servers
from specdsl.apply import bursts, gpus, run_conditions, validity
from specdsl.apply.budget import Spending
from specdsl.apply.context import StepContext, StepFailed
from specdsl.apply.stack_facts import stack_facts
from specdsl.apply.steps.common import cache_facts, command_stack, localize, localize_command, medians_of_runs
from specdsl.bench.datasets import local_dataset
from specdsl.bench.tokenizer_choice import tokenizer_for
from specdsl.bench.steady import cold_start_warning
from specdsl.graph.build import PAIR_DESIGN
from specdsl.graph.pairs import BASELINE, CANDIDATE, arm_order, arms_run_order
from specdsl.hosts import Cancelled
from specdsl.paired_result import PairedResult
from specdsl.plan.looks import counting_block, first_pairs, grid_first, recorded_block, schedule_for
from specdsl.servers import jit as server_jit

MAX_REPLACED = 2  # fresh launches that may replace dropped ones of one arm in one pair


class _Dropped(Exception):
    """A launch whose warm-up did not settle (bench.Unsettled): `reason`."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _Stopped(Exception):
    """The comparison stops: a pair's arm did not settle MAX_REPLACED + 1 times."""


@attrs.define
class _Arm:
    name: str
    server: object
    env: object


@attrs.define
class _Pairing:
    """What a paired run has measured so far (with what an earlier apply
    of the same benchmark measured, when it continues)."""

    runs: list = attrs.Factory(list)  # bench.RunResult, index = position
    pairs: list = attrs.Factory(list)  # {"pair": i, "blocks": [{"arm": A|B, "runs": [..], "launch": k}, ...]}
    launches: list = attrs.Factory(list)  # {"arm", "pair", "argv", "log", "launch_s", "warmup", "effective"}
    effective: dict = attrs.Factory(dict)  # arm -> effective config (last read)
    warnings: list = attrs.Factory(list)
    warned: set = attrs.Factory(set)  # (arm, warning) already said
    gpu_facts: dict = attrs.Factory(dict)  # the GPU snapshots at the step's start and end (apply.gpus)
    looks: dict = attrs.Factory(dict)  # the look schedule's horizon and steps (plan.looks.schedule_for)
    continued: int = 0  # pairs an earlier apply recorded
    side_by_side: bool = False  # both arms of a pair up at once
    shared: dict = attrs.Factory(dict)  # measured in blocks shared with other comparisons: {"with", "leader", "folder"}
    stopped: str = ""  # why measuring stopped before the verdicts were decided (launches that did not settle)
    budget: dict = attrs.Factory(dict)  # why its budget stopped it in this apply (apply.budget), else empty

    def complete_pairs(self) -> list:
        return [p for p in self.pairs if len(p["blocks"]) == 2]

    def to_json(self, arms: dict[str, str]) -> dict:
        complete = self.complete_pairs()
        keep = {i for p in complete for b in p["blocks"] for i in b["runs"] + b.get("remeasured", [])}
        runs = [r for r in self.runs if r.index in keep]
        from specdsl import __version__

        out = {"runs": [r.to_json() for r in runs], "pairs": complete, "arms": arms, "launches": self.launches,
               "effective": secrets.redact_tree(self.effective), "design": PAIR_DESIGN, "looks": self.looks,
               "side_by_side": self.side_by_side, "specdsl": __version__}
        if self.continued:
            out["continued"] = self.continued
        if self.shared:
            out["shared"] = self.shared
        if self.stopped:
            out["stopped"] = self.stopped
        if self.budget:
            out["budget"] = self.budget
        return out | ({"gpu_facts": self.gpu_facts} if self.gpu_facts else {})

    @classmethod
    def from_json(cls, doc: dict, *, earlier: bool = True) -> "_Pairing":
        """What `doc` measured: an earlier apply's result (`earlier`), or
        what a block leader measured in this apply for this comparison."""
        got = PairedResult.of(doc)
        done = cls(runs=[bench.RunResult.from_json(r) for r in got.runs],
                   pairs=[p.to_json() for p in got.complete_pairs()],
                   launches=[x.to_json() for x in got.launches or ()], effective=dict(got.effective or {}),
                   looks=dict(got.looks or {}), shared=dict(got.shared or {}),
                   side_by_side=bool(got.side_by_side), gpu_facts=dict(got.gpu_facts or {}))
        done.continued = len(done.pairs) if earlier else (got.continued or 0)
        return done

    def add_runs(self, i: int, letter: str, runs, launch: int) -> None:
        """The runs of arm `letter` of pair `i`, made on launch `launch`."""
        start = len(self.runs)
        for k, r in enumerate(runs):
            self.runs.append(attrs.evolve(r, index=start + k))
        pair = next((p for p in self.pairs if p["pair"] == i), None)
        if pair is None:
            pair = {"pair": i, "blocks": []}
            self.pairs.append(pair)
        mine = next((b for b in pair["blocks"] if b["arm"] == letter), None)
        if mine is None:
            mine = {"arm": letter, "runs": [], "launch": launch}
            pair["blocks"].append(mine)
        mine["runs"] += list(range(start, start + len(runs)))


@attrs.define
class _Comparison:
    """One candidate against the baseline, inside a (possibly shared) walk
    of blocks: its step, its candidate arm, what it measured, and when it
    wants another pair."""

    addr: str
    name: str
    label: str  # its candidate's launches and runs are named by it: B (the leader's), B2, B3, ...
    arm: _Arm
    done: _Pairing
    more: object  # decide_more(doc) -> bool
    first: int
    budget: int
    names: dict
    local: dict = attrs.Factory(dict)  # the walk's launch number -> its number in `done.launches`

    def doc(self) -> dict:
        return self.done.to_json(self.names)

    def wants(self, i: int) -> bool:
        """Whether it measures pair `i` (it has `i` complete pairs)."""
        return i < self.first or (i < self.budget and self.more(self.doc()))


def run_paired(ctx: StepContext, decide_more, looks: dict, extra: int = 0, followers=()) -> tuple[dict, dict]:
    """Measure the pairs; returns (result document, candidate's effective
    config). `decide_more(doc) -> bool` says, after a pair, whether another
    is needed; `looks` is the look schedule to record (an earlier apply's
    recorded one wins); `extra` pairs more than `max_runs` may be measured
    (`apply --more N`). `followers`: (step, decide_more) of other
    comparisons against the same baseline that this step measures with
    its own in shared blocks (`sharing_followers`); what they measured is
    left in `walk.shared_pairs` for their own steps to record. Raises
    StepFailed or Cancelled (after recording the complete pairs: see
    `record`)."""
    return _PairedWalk.of(ctx, decide_more, looks, extra, followers).run()


def _arms(ctx: StepContext, members) -> dict[str, _Arm]:
    """The arms of a walk of blocks: the baseline (A), each member's
    candidate (B, B2, B3, ...), with their environments provisioned."""
    walk, base = ctx.walk, ctx.step.payload["paired"]
    cells = walk.graph.by_experiment
    arms = {BASELINE: _Arm(base.name, localize(base.server, walk.spec_dir), walk.envs.get(cells[base.name]["provision"]))}
    for k, (member, _) in enumerate(members):
        e = member.payload["experiment"]
        arms[CANDIDATE if k == 0 else f"{CANDIDATE}{k + 1}"] = _Arm(
            e.name, localize(e.server, walk.spec_dir), walk.envs.get(cells[e.name]["provision"]))
    for arm in arms.values():
        if arm.env is None:
            raise StepFailed(f"the environment of {arm.name} was not provisioned in this apply")
    return arms


def _continued(ctx: StepContext) -> tuple[dict | None, dict]:
    """(what a leader that stopped left this step, or None; the pairs it
    continues: that, or an earlier apply's, or none under --rerun)."""
    shared = ctx.walk.shared_pairs.pop(ctx.step.addr, None)
    return shared, shared if shared is not None else ([] if ctx.walk.plan.rerun else prior_pairs(ctx))


def _comparisons(ctx: StepContext, members, arms: dict, looks: dict, extra: int, folder, continued) -> list[_Comparison]:
    """One _Comparison per member, the step's own first (with the pairs it
    continues: `continued`, from _continued)."""
    step = ctx.step
    base, workload = step.payload["paired"], step.payload["experiment"].workload
    shared, prior = continued
    comps: list[_Comparison] = []
    for k, ((member, more), label) in enumerate(zip(members, list(arms)[1:])):
        done = _Pairing.from_json(prior, earlier=shared is None) if k == 0 and prior else _Pairing()
        done.looks = done.looks or dict(looks)
        names = {BASELINE: base.name, CANDIDATE: member.payload["experiment"].name}
        if len(members) > 1:
            done.shared = {"with": [m.addr for m, _ in members if m is not member], "leader": step.addr,
                           "folder": str(folder)}
        have = len(done.complete_pairs())
        done.pairs = done.complete_pairs()  # an incomplete pair of an earlier apply is measured again
        # at least the pairs `runs` asks for, also when `runs` was raised after an
        # earlier apply recorded its looks (plan: "1 more run needed (3 recorded, 4 wanted)")
        budget = schedule_for(workload, done.looks, max(0, extra)).max
        first = max(first_pairs(workload, done.looks), grid_first(workload, counting_block(done.looks, workload)), have)
        comps.append(_Comparison(member.addr, names[CANDIDATE], label, arms[label], done, more, first, budget, names))
    return comps


def _shown(label: str) -> str:
    """How messages name an arm: A, or B (each comparison's candidate is its arm B)."""
    return BASELINE if label == BASELINE else CANDIDATE


def _readers_of(label: str, block_comps) -> list[_Comparison]:
    """The comparisons of a block that read arm `label`'s runs: all for the baseline."""
    return list(block_comps) if label == BASELINE else [c for c in block_comps if c.label == label]


@attrs.define
class _PairedWalk:
    """One paired step's walk of blocks: its arms and comparisons, the
    servers up, the walk's launches, and what it says when done. Each
    method is one part of a block's life (launch, warm up, run, stop)."""

    ctx: StepContext
    arms: dict  # label -> _Arm: A, B, B2, ...
    comps: list  # the comparisons, the step's own first
    folder: object  # the run folder here
    there: object  # the run folder on the host
    w_run: object  # a run of one arm: no warm-up of its own
    w_warm: object  # its launch's warm-up
    block: int  # runs per launch: one for every comparison of the walk (one share key)
    gpu_of: dict  # label -> its GPUs, when the arms run side by side
    side_by_side: bool
    up: dict = attrs.Factory(dict)  # label -> (the handle of its server, the walk's launch number), while up
    lock: threading.Lock = attrs.Factory(threading.Lock)
    launched: list = attrs.Factory(list)  # the walk's launches, each shared by the comparisons of its block
    warnings: list = attrs.Factory(list)
    warned: set = attrs.Factory(set)  # (label, warning) of the effective configurations, said once
    probes: dict = attrs.Factory(dict)  # label -> the compile lines its server's log gains (servers.jit)
    rates: dict = attrs.Factory(dict)  # launch -> the most requests a second it has reached (a duration run's fresh prompts)
    made: int = 0  # runs so far, an earlier apply's included (progress)
    tries: dict = attrs.Factory(dict)  # a run folder's name -> its measurements (specdsl.apply.bursts)
    end: object = None  # the GPU snapshot at the end of the runs so far (snap_end)

    @classmethod
    def of(cls, ctx: StepContext, decide_more, looks: dict, extra: int, followers) -> "_PairedWalk":
        members = [(ctx.step, decide_more)] + list(followers)
        arms = _arms(ctx, members)
        continued = _continued(ctx)
        folder = ctx.new_run()
        comps = _comparisons(ctx, members, arms, looks, extra, folder, continued)
        walk, host, workload = ctx.walk, ctx.host, ctx.step.payload["experiment"].workload
        fits = gpus.split(walk, ctx.addr, ctx.step.payload["host"], [a.server for a in arms.values()])
        w_run = localize_command(attrs.evolve(workload, runs=1, warmup=0, warmup_time=None, warmup_tolerance=None,
                                              dataset=local_dataset(workload.dataset, walk.spec_dir)),
                                 walk.spec_dir, host)
        w_warm = attrs.evolve(w_run, warmup=workload.warmup, warmup_time=workload.warmup_time,
                              warmup_tolerance=workload.warmup_tolerance)
        return cls(ctx, arms, comps, folder, host.run_folder(folder), w_run, w_warm,
                   recorded_block(comps[0].done.looks, workload), dict(zip(arms, fits)) if fits is not None else {},
                   fits is not None, made=len(comps[0].done.runs))

    @property
    def decl(self):
        return self.ctx.step.payload["host"]

    def run(self) -> tuple[dict, dict]:
        """Block after block while a comparison wants another pair and its
        budget allows; what completed stays recorded when it is stopped."""
        ctx, walk, comps, lead = self.ctx, self.ctx.walk, self.comps, self.comps[0].done
        start = gpus.snapshot(walk, ctx.host, self.decl, ctx.addr)  # before any arm's server: all others
        i = len(lead.complete_pairs())
        active = list(comps)
        spending = Spending.of(ctx, comps)  # no pair past a budget (apply/budget.py)
        try:
            while True:
                active = spending.allowed(i, [c for c in active if c.wants(i)])
                if not active:
                    break
                began = time.monotonic()
                self.measure_block(i, active, max([c.first for c in active] + [i + 1]))
                spending.charge(i, active, time.monotonic() - began)
                i += 1
        except _Stopped as stopped:  # the pairs so far are the result; its undecided verdicts say why
            _cleanup(self.stop_all, ctx)
            for c in comps:
                c.done.stopped = str(stopped)
            self.warnings.append(f"{ctx.addr}: measuring stopped: {stopped}")
        except (Cancelled, validity.ServerLost):  # what completed stays recorded
            _cleanup(self.stop_all, ctx)
            _leave(walk, comps[1:])
            if lead.complete_pairs():
                record(ctx, comps[0].doc(), lead.effective.get(CANDIDATE, {}), lead.launches)
            raise
        except BaseException:
            _cleanup(self.stop_all, ctx)
            _leave(walk, comps[1:])
            raise
        return self.finish(start)

    def finish(self, start) -> tuple[dict, dict]:
        """The run folder collected, the GPU facts of the step's start and
        end, the warnings said; (result document, candidate's effective)."""
        ctx, comps, lead = self.ctx, self.comps, self.comps[0].done
        ctx.host.collect(self.there, self.folder)
        facts, gpu_warnings = gpus.run_gpu_facts(ctx.addr, start, self.end)
        for c in comps:
            if self.end is not None or not c.done.gpu_facts:  # nothing measured now: the leader's snapshots stay
                c.done.gpu_facts = facts
        for w in self.warnings + gpu_warnings:
            ctx.walk.result.warn(w)
        _leave(ctx.walk, comps[1:])
        return comps[0].doc(), lead.effective.get(CANDIDATE, {})

    def launch(self, i: int, label: str, n: int) -> None:
        ctx, walk, host, arm = self.ctx, self.ctx.walk, self.ctx.host, self.arms[label]
        sub = self.there / f"launch-{n}-{label}"
        ctx.progress(f"pair {i + 1} arm {_shown(label)} ({arm.name}): starting its server")
        if self.side_by_side:
            pinned = gpus.pin_ids(host, self.decl, arm.server, self.gpu_of[label], ctx.stop)
        else:
            pinned = gpus.pin(walk, ctx.addr, host, self.decl, arm.server, ctx.stop)  # the pair's own GPUs
        began = time.monotonic()
        try:
            handle = servers.launch(pinned, arm.env, sub, host=host, progress=ctx.progress, stop=ctx.stop,
                                    warn=lambda w: walk.result.warn(f"{ctx.addr} pair {i + 1} arm {_shown(label)} ({arm.name}): {w}"))
        except servers.LaunchError as exc:
            host.collect(self.there, self.folder)
            raise StepFailed(f"pair {i + 1} arm {_shown(label)} ({arm.name}): {exc}",
                             str(self.folder / sub.name / "server.log")) from None
        with self.lock:
            self.up[label] = (handle, n)
            walk.result.launches += 1
            entry = self.launched[n]
            entry.update({"argv": list(handle.argv), "log": str(self.folder / sub.name / "server.log"),
                          "launch_s": round(time.monotonic() - began, 3)} | cache_facts(handle))
            if self.side_by_side and any(self.gpu_of.values()):  # each arm on its own GPUs
                entry[gpus.VISIBLE] = ",".join(map(str, self.gpu_of[label]))
            else:
                entry.update(gpus.visible(walk, ctx.addr, self.decl))

    def launch_all(self, i: int, labels, block_comps) -> None:
        """Launch `labels` (one, or all at once side by side, in parallel);
        their launch numbers follow `labels`; each comparison of the block
        lists the baseline's launch and its own candidate's."""
        numbers = {}
        for label in labels:
            numbers[label] = len(self.launched)
            entry = {"arm": _shown(label), "pair": i}  # filled in by `launch`
            self.launched.append(entry)
            readers = _readers_of(label, block_comps)
            if label == BASELINE and len(readers) > 1:
                entry["shared_by"] = [c.addr for c in readers]
            for c in readers:
                c.local[numbers[label]] = len(c.done.launches)
                c.done.launches.append(entry)
        if len(labels) == 1:
            self.launch(i, labels[0], numbers[labels[0]])
            return
        errors: list[BaseException] = []

        def one(label):
            try:
                self.launch(i, label, numbers[label])
            except BaseException as exc:  # reported below, the first one wins
                errors.append(exc)

        threads = [threading.Thread(target=one, args=(x,), daemon=True) for x in labels]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]

    def stop_arm(self, label: str, block_comps) -> None:
        handle, n = self.up.pop(label)
        arm = self.arms[label]
        try:
            effective, said = servers.effective_config(arm.server, handle, self.ctx.host)
            for c in _readers_of(label, block_comps):
                c.done.effective[_shown(label)] = effective
            # each launch's own: what differs between two launches of one arm is noise to a diagnosis
            self.launched[n]["effective"] = secrets.redact_tree(effective)
            # by experiment and launch (several experiments share a server block), once per arm
            for w in said:
                if (label, w) not in self.warned:
                    self.warned.add((label, w))
                    self.warnings.append(f"{arm.name} ({self.ctx.step.addr} launch {n}, arm {_shown(label)}): {w}")
        except Exception as exc:  # a report that cannot be read must not lose the runs
            self.warnings.append(f"{arm.name}: could not read the effective configuration: {exc}")
        servers.teardown(handle, self.ctx.host)

    def stop_all(self, block_comps=()) -> None:
        for label in list(self.up):
            self.stop_arm(label, block_comps or self.comps)

    def warm(self, i: int, label: str) -> None:
        ctx, workload = self.ctx, self.ctx.step.payload["experiment"].workload
        handle, n = self.up[label]
        arm = self.arms[label]
        self.probes[label] = server_jit.probe(handle, ctx.host)  # from here on: its startup is not the warm-up's
        if workload.command or (workload.warmup <= 0 and not workload.warmup_time and workload.warmup_tolerance is None):
            return
        tokenizer = tokenizer_for(self.w_warm, arm.server.model, ctx.walk.spec_dir)
        say = lambda m: ctx.progress(f"pair {i + 1} arm {_shown(label)}: {m}")  # noqa: E731
        try:
            got = bench.warm_up(self.w_warm, handle.base_url, arm.server.model, self.folder / f"warmup-{n}-{label}",
                                quirks=servers.adapter_for(arm.server.engine).quirks, tokenizer=tokenizer,
                                progress=say, stop=ctx.stop, jit=self.probes[label])
        except bench.Unsettled as exc:
            self.launched[n].update({"warmup": exc.warmup, "dropped": exc.reason, "log_lines": list(exc.log_lines)})
            raise _Dropped(exc.reason) from None
        except bench.BenchError as exc:
            raise StepFailed(f"pair {i + 1} arm {_shown(label)} ({arm.name}): {exc} (server log: {handle.log_path})",
                             str(self.folder)) from None
        self.launched[n]["warmup"] = got
        self.rates[n] = max(self.rates.get(n, 0.0), float(got.get("peak_rate") or 0.0))

    def warm_steady(self, i: int, label: str, block_comps) -> None:
        """Warm `label`'s launch up; a launch that does not settle is
        dropped (counted, said with its reason and log lines, stopped) and
        a fresh one replaces it, at most MAX_REPLACED times; then _Stopped."""
        ctx = self.ctx
        for tries in range(MAX_REPLACED + 1):
            try:
                self.warm(i, label)
                return
            except _Dropped as drop:
                _, n = self.up[label]
                with ctx.walk.mutex:
                    ctx.walk.result.dropped_launches += 1
                lines = self.launched[n].get("log_lines") or []
                self.warnings.append(f"{ctx.addr} pair {i + 1} arm {_shown(label)} ({self.arms[label].name}, launch {n}): "
                                     f"launch dropped, never measured: {drop.reason}"
                                     + "".join(f"\n    {line}" for line in lines[-5:]))
                self.stop_arm(label, block_comps)
                if tries == MAX_REPLACED:
                    raise _Stopped(f"arm {_shown(label)}'s launch did not settle {tries + 1} times in pair {i + 1} "
                                   f"({MAX_REPLACED} fresh launches replaced dropped ones): {drop.reason}") from None
                ctx.progress(f"pair {i + 1} arm {_shown(label)}: launch dropped ({drop.reason}); a fresh one replaces it")
                self.launch_all(i, (label,), block_comps)

    def one_run(self, i: int, label: str, j: int, total: int, block_comps) -> dict:
        ctx, walk, host = self.ctx, self.ctx.walk, self.ctx.host
        handle, n = self.up[label]
        arm = self.arms[label]
        letter = _shown(label)
        sub = self.folder / f"pair-{i}-{label}-{j}"
        self.tries[sub.name] = self.tries.get(sub.name, 0) + 1
        again = self.tries[sub.name] > 1  # its round measured again (a burst): the first run's files stay
        if again:
            sub = self.folder / f"{sub.name}-again-{self.tries[sub.name] - 1}"
        say = block_progress(bursts.said_again(ctx.progress) if again else ctx.progress, i, letter, self.made, total,
                             arm.name if len(self.comps) > 1 else None)
        began = time.monotonic()
        load = bursts.meter()  # what else the machine did meanwhile (a burst: specdsl.apply.bursts)
        watch = validity.watch(ctx, arm.server.name, handle, host)  # its server lost mid-run fails the step
        w_run = self.w_run
        try:
            if w_run.command:
                say("run 1/1: the command")
                result = bench.run_command_workload(w_run, host=host, server_host=handle.bind, port=handle.port,
                                                    model=arm.server.model, out_dir=sub, stop=watch.stop,
                                                    stack=command_stack(arm.env, arm.env.env, arm.server))
            else:
                tokenizer = tokenizer_for(w_run, arm.server.model, ctx.walk.spec_dir)
                adapter = servers.adapter_for(arm.server.engine)
                # every arm of a block gets the same fresh prompts for its j-th run; each block new ones
                result = bench.run_benchmark(w_run, handle.base_url, arm.server.model, sub, quirks=adapter.quirks,
                                             tokenizer=tokenizer, progress=say, stop=watch.stop,
                                             server=adapter.server_side(), first_run=i * self.block + j,
                                             watches=run_conditions.watches(walk, host, self.decl, ctx.addr, sub,
                                                                            self.gpu_of.get(label)),
                                             jit=self.probes.get(label), rate_hint=self.rates.get(n, 0.0))
        except (bench.BenchError, Cancelled) as exc:
            validity.raise_if_lost(watch, f"pair {i + 1} arm {letter} ({arm.name}): ", sub)
            if isinstance(exc, Cancelled):
                raise
            raise StepFailed(f"pair {i + 1} arm {letter} ({arm.name}): {exc} (server log: {handle.log_path})", str(sub)) from None
        finally:
            watch.close()
        validity.raise_if_lost(watch, f"pair {i + 1} arm {letter} ({arm.name}): ", sub)
        seen = load.stop()
        self.rates[n] = max(self.rates.get(n, 0.0), result.peak_rate())
        result = attrs.evolve(result, runs=tuple(attrs.evolve(r, host=seen) for r in result.runs))
        self.launched[n].setdefault("run_s", []).append(round(time.monotonic() - began, 3))  # what a run costs (plan, calibrate)
        for w in result.warnings():  # e.g. client-bound, short outputs (specdsl.bench): named by pair and arm
            self.warnings.append(f"{ctx.addr} pair {i + 1} arm {letter} ({arm.name}): {w}")
        self.made += len(result.runs)
        for c in _readers_of(label, block_comps):
            c.done.add_runs(i, letter, result.runs, c.local[n])
        return bursts.round_record(seen, result.runs)  # what the round's rule reads (apply.bursts)

    def drop(self, i: int, label: str, why: str, block_comps) -> None:
        """Arm `label`'s latest run of pair `i` is invalid (a burst): it no longer takes a place in the progress."""
        self.made -= 1
        for c in _readers_of(label, block_comps):
            bursts.drop_latest(c.done, i, _shown(label), why)

    def snap_end(self) -> None:
        """The GPU snapshot at the end of the runs so far, beside the servers
        still up (not counted: their own). After a teardown the driver can
        list a server for a while yet, which read as another job on the
        H200 (docs/gpu-run.md)."""
        ctx = self.ctx
        ours = set()
        for handle, _ in self.up.values():
            ours |= gpus.server_pids(ctx.walk, ctx.host, self.decl, handle)
        self.end = gpus.snapshot(ctx.walk, ctx.host, self.decl, ctx.addr, ours)

    def cold_starts(self, i: int, block_comps) -> None:
        """A launch of pair `i` whose first run was far slower than its later
        ones had a cold start: said in that run's own warnings and apply's
        (a shared baseline launch once)."""
        said_of: set = set()
        for c in block_comps:
            pair = next((p for p in c.done.pairs if p["pair"] == i), None)
            for b in (pair or {}).get("blocks", ()):
                runs = [c.done.runs[k] for k in b["runs"]]
                said = cold_start_warning([r.metrics.get("output_throughput", 0.0) for r in runs])
                if said:
                    c.done.runs[b["runs"][0]] = attrs.evolve(runs[0], warnings=tuple(runs[0].warnings) + (said,))
                    name = self.arms[BASELINE].name if b["arm"] == BASELINE else c.name
                    if (b["arm"], name) not in said_of:
                        said_of.add((b["arm"], name))
                        self.warnings.append(f"{self.ctx.addr} pair {i + 1} arm {b['arm']} ({name}, launch {b['launch']}): {said}")

    def measure_block(self, i: int, block_comps, planned: int) -> None:
        labels = [BASELINE] + [c.label for c in block_comps]
        for c in block_comps:
            c.done.side_by_side = self.side_by_side  # how its latest pairs ran
        total = self.made + len(labels) * self.block * (planned - i)
        order = arm_order(i, labels)
        if self.side_by_side:
            self.launch_all(i, order, block_comps)
            for label in order:
                self.warm_steady(i, label, block_comps)
            # round by round; a round a burst hit is measured again (specdsl.apply.bursts)
            bursts.measure_rounds(
                arms_run_order(i, labels, self.block, True), lambda label, j: self.one_run(i, label, j, total, block_comps),
                lambda label, why: self.drop(i, label, why, block_comps),
                lambda label, w: [bursts.with_warning(c.done, i, _shown(label), w) for c in _readers_of(label, block_comps)],
                self.ctx.stop)
            self.snap_end()
            self.stop_all(block_comps)
        else:
            for label in order:
                self.launch_all(i, (label,), block_comps)
                self.warm_steady(i, label, block_comps)
                for j in range(self.block):
                    self.one_run(i, label, j, total, block_comps)
                self.snap_end()
                self.stop_arm(label, block_comps)
        self.cold_starts(i, block_comps)


def _leave(walk, followers) -> None:
    """What the leader measured for each follower, for its own step to
    record (and go on from, alone, when the leader stopped early)."""
    with walk.mutex:
        for c in followers:
            if c.done.complete_pairs():
                walk.shared_pairs[c.addr] = c.doc()


def sharing_followers(ctx: StepContext) -> list:
    """The other paired benchmarks this step measures with its own, in
    blocks that share the baseline's launches (specdsl.graph.pairs): the
    group the plan decided (`Change.shares`, of the paired benchmarks that
    run from nothing: plan.diff.shared_blocks), less those whose step has
    started and those whose environments are not provisioned yet; none
    when a leader that stopped left this one what it measured. Marks them
    started."""
    walk, me = ctx.walk, ctx.step
    with walk.mutex:
        walk.paired_started.add(me.addr)
        change = walk.change(me.addr)
        if change is None or me.addr in walk.shared_pairs:
            return []
        group = change.shares
        cells = walk.graph.by_experiment
        out = []
        for addr in group:
            step = walk.graph.steps[addr]
            if addr == me.addr or addr in walk.paired_started:
                continue
            if walk.envs.get(cells[step.payload["experiment"].name]["provision"]) is None:
                continue  # its stack is not ready yet: it measures on its own
            walk.paired_started.add(addr)
            out.append(step)
        return out


def prior_pairs(ctx: StepContext) -> dict:
    """The result an earlier apply recorded for this benchmark's identity
    (its pairs to continue from), when its folder still holds it and it was
    measured with launch pairs; else {} (measure afresh)."""
    state = ctx.writer.state
    run = state.result(ctx.step.identity)
    if run is None:
        return {}
    try:
        doc = json.loads((ctx.writer.state_dir / run.folder / "result.json").read_text())
    except (OSError, ValueError):
        return {}
    got = PairedResult.of(doc)
    if got is None or got.design != PAIR_DESIGN or (run.runs is not None and len(got.pairs) != run.runs):
        return {}
    return doc


_RUN = re.compile(r"runs? (\d+)(?:-(\d+))?/\d+: ")


def block_progress(progress, i: int, letter: str, before: int, total: int, name: str | None = None):
    """The progress of one block (pair `i`, arm `letter`), as the step's: the
    load generator counts the runs of the block it was given (`run 1/1` for
    every block of one run), so its `run k/b: ...` becomes the run's place
    in the step, `run N/TOTAL, pair P arm X: ...` (`before` runs came
    first; `total` is 2 x block x the pairs planned so far), and any other
    message is named by pair and arm. Every run of every pair and arm is
    announced once, and no two announcements read alike (in shared blocks,
    where several arms are B, `name` names the arm's experiment)."""
    where = f"pair {i + 1} arm {letter}" + (f" ({name})" if name else "")

    def say(message: str) -> None:
        m = _RUN.match(message)
        if m is None:
            progress(f"{where}: {message}")
            return
        first, last = before + int(m.group(1)), before + int(m.group(2) or m.group(1))
        runs = f"run {first}" if first == last else f"runs {first}-{last}"
        progress(f"{runs}/{total}, {where}: {message[m.end():]}")

    return say


def _cleanup(stop_current, ctx) -> None:
    try:
        stop_current()
    except Exception as exc:  # the first error is the one to report
        ctx.walk.result.warn(f"{ctx.addr}: stopping a server: {exc}")


def record(ctx: StepContext, doc: dict, effective: dict, launches: list) -> dict[str, float]:
    """Write the result and record the run (completed, with its pair count)."""
    folder = ctx.folder
    (folder / "result.json").write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    (folder / "effective.json").write_text(json.dumps(secrets.redact_tree(effective), sort_keys=True, default=str))
    got = PairedResult.of(doc)
    candidate = got.run_indexes(CANDIDATE)
    metrics = medians_of_runs([r for r in got.runs if r["index"] in candidate and not r.get("invalid")])
    argv = next((tuple(x["argv"]) for x in reversed(launches) if x["arm"] == CANDIDATE and "argv" in x), ())
    effective = effective | gpus.visible(ctx.walk, ctx.addr, ctx.step.payload["host"])  # the GPUs both arms ran on
    effective = effective | dict(got.gpu_facts or {})  # the snapshots at the pair's start and end
    effective = effective | run_conditions.during(bench.RunResult.from_json(r) for r in got.runs)  # each run's GPUs
    # the candidate's stack (its provision: the step's last dependency): torch's CUDA build, nvcc
    effective = stack_facts(ctx.walk, ctx.writer.state, ctx.step, deps=ctx.step.deps[-1:]) | effective
    run = attrs.evolve(ctx.writer.run_record(ctx.step, ctx.run_id, folder, ctx.started, "completed", metrics=metrics,
                                             effective=effective, argv=argv), runs=len(got.pairs))
    ctx.writer.step_done(ctx.step, run)
    return metrics
