"""A paired benchmark: a candidate and its baseline measured arm against arm
on one machine, pair after pair, each pair on two fresh launches (the
launch is the unit: specdsl.graph.pairs). Both servers of a pair run side
by side when they fit (their runs alternate ABBA), else one after the
other; every launch is warmed up at full concurrency before any run a
verdict reads. After the first `workload.runs` pairs, while a gating
assertion of the experiment is undecided and the budget (`max_runs` pairs)
allows, more pairs are added at the looks of the verdicts' schedule
(repeated looks are accounted for there, see docs/verdicts.md).

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
from pathlib import Path

import attrs

from specdsl import bench, secrets, servers
from specdsl.apply import gpus, validity
from specdsl.apply.context import StepContext, StepFailed
from specdsl.apply.steps.common import localize, medians_of_runs
from specdsl.bench.datasets import local_dataset
from specdsl.bench.steady import cold_start_warning
from specdsl.graph.build import PAIR_DESIGN
from specdsl.graph.pairs import BASELINE, CANDIDATE, pair_order, run_order
from specdsl.hosts import Cancelled
from specdsl.plan.looks import block_of, first_pairs, max_runs


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

    def complete_pairs(self) -> list:
        return [p for p in self.pairs if len(p["blocks"]) == 2]

    def to_json(self, arms: dict[str, str]) -> dict:
        complete = self.complete_pairs()
        keep = {i for p in complete for b in p["blocks"] for i in b["runs"]}
        runs = [r for r in self.runs if r.index in keep]
        from specdsl import __version__

        out = {"runs": [r.to_json() for r in runs], "pairs": complete, "arms": arms, "launches": self.launches,
               "effective": secrets.redact_tree(self.effective), "design": PAIR_DESIGN, "looks": self.looks,
               "side_by_side": self.side_by_side, "specdsl": __version__}
        if self.continued:
            out["continued"] = self.continued
        return out | ({"gpu_facts": self.gpu_facts} if self.gpu_facts else {})

    @classmethod
    def from_json(cls, doc: dict) -> "_Pairing":
        done = cls(runs=[bench.RunResult.from_json(r) for r in doc.get("runs", ())],
                   pairs=[p for p in doc.get("pairs", ()) if len(p.get("blocks", ())) == 2],
                   launches=list(doc.get("launches", ())), effective=dict(doc.get("effective", {})),
                   looks=dict(doc.get("looks", {})))
        done.continued = len(done.pairs)
        return done


def run_paired(ctx: StepContext, decide_more, looks: dict, extra: int = 0) -> tuple[dict, dict]:
    """Measure the pairs; returns (result document, candidate's effective
    config). `decide_more(doc) -> bool` says, after a pair, whether another
    is needed; `looks` is the look schedule to record (an earlier apply's
    recorded one wins); `extra` pairs more than `max_runs` may be measured
    (`apply --more N`). Raises StepFailed or Cancelled (after recording the
    complete pairs: see `record`)."""
    walk, step = ctx.walk, ctx.step
    exp, base = step.payload["experiment"], step.payload["paired"]
    cells = walk.graph.by_experiment
    arms = {
        BASELINE: _Arm(base.name, localize(base.server, walk.spec_dir), walk.envs.get(cells[base.name]["provision"])),
        CANDIDATE: _Arm(exp.name, localize(exp.server, walk.spec_dir), walk.envs.get(cells[exp.name]["provision"])),
    }
    for letter, arm in arms.items():
        if arm.env is None:
            raise StepFailed(f"the environment of {arm.name} was not provisioned in this apply")
    host = ctx.host
    decl = step.payload["host"]
    prior = [] if walk.plan.rerun else prior_pairs(ctx)
    folder = ctx.new_run()
    there = host.run_folder(folder)
    workload = exp.workload
    done = _Pairing.from_json(prior) if prior else _Pairing()
    done.looks = done.looks or dict(looks)
    up: dict[str, object] = {}  # arm -> the handle of its server, while up
    lock = threading.Lock()
    fits = gpus.split(walk, ctx.addr, decl, [arms[BASELINE].server, arms[CANDIDATE].server])
    side_by_side = done.side_by_side = fits is not None
    block = block_of(workload, ctx.writer.state, exp.name)
    names = {BASELINE: base.name, CANDIDATE: exp.name}
    w_run = attrs.evolve(workload, runs=1, warmup=0, warmup_time=None,
                         dataset=local_dataset(workload.dataset, walk.spec_dir))
    w_warm = attrs.evolve(w_run, warmup=workload.warmup, warmup_time=workload.warmup_time)

    def launch(i: int, letter: str, n: int) -> None:
        arm = arms[letter]
        sub = there / f"launch-{n}-{letter}"
        ctx.progress(f"pair {i + 1} arm {letter} ({arm.name}): starting its server")
        if side_by_side:
            pinned = gpus.pin_ids(host, decl, arm.server, fits[0 if letter == BASELINE else 1], ctx.stop)
        else:
            pinned = gpus.pin(walk, ctx.addr, host, decl, arm.server, ctx.stop)  # the pair's own GPUs
        began = time.monotonic()
        try:
            handle = servers.launch(pinned, arm.env, sub, host=host, progress=ctx.progress, stop=ctx.stop)
        except servers.LaunchError as exc:
            host.collect(there, folder)
            raise StepFailed(f"pair {i + 1} arm {letter} ({arm.name}): {exc}", str(folder / sub.name / "server.log")) from None
        with lock:
            up[letter] = (handle, n)
            walk.result.launches += 1
            done.launches[n].update({"argv": list(handle.argv), "log": str(folder / sub.name / "server.log"),
                                     "launch_s": round(time.monotonic() - began, 3)})
            if side_by_side and fits[0] + fits[1]:  # each arm on its own GPUs
                done.launches[n][gpus.VISIBLE] = ",".join(map(str, fits[0 if letter == BASELINE else 1]))
            else:
                done.launches[n].update(gpus.visible(walk, ctx.addr, decl))

    def launch_all(i: int, letters) -> None:
        """Launch `letters` (one, or both at once side by side, in parallel);
        their launch numbers follow `letters`."""
        numbers = {}
        for letter in letters:
            numbers[letter] = len(done.launches)
            done.launches.append({"arm": letter, "pair": i})  # filled in by `launch`
        if len(letters) == 1:
            launch(i, letters[0], numbers[letters[0]])
            return
        errors: list[BaseException] = []

        def one(letter):
            try:
                launch(i, letter, numbers[letter])
            except BaseException as exc:  # reported below, the first one wins
                errors.append(exc)

        threads = [threading.Thread(target=one, args=(x,), daemon=True) for x in letters]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]

    def stop_arm(letter: str) -> None:
        handle, n = up.pop(letter)
        try:
            effective, warnings = servers.effective_config(arms[letter].server, handle, host)
            done.effective[letter] = effective
            # each launch's own: what differs between two launches of one arm is noise to a diagnosis
            done.launches[n]["effective"] = secrets.redact_tree(effective)
            # by experiment and launch (several experiments share a server block), once per arm
            for w in warnings:
                if (letter, w) not in done.warned:
                    done.warned.add((letter, w))
                    done.warnings.append(f"{arms[letter].name} ({step.addr} launch {n}, arm {letter}): {w}")
        except Exception as exc:  # a report that cannot be read must not lose the runs
            done.warnings.append(f"{arms[letter].name}: could not read the effective configuration: {exc}")
        servers.teardown(handle, host)

    def stop_all() -> None:
        for letter in list(up):
            stop_arm(letter)

    def warm(i: int, letter: str) -> None:
        handle, n = up[letter]
        arm = arms[letter]
        if workload.command or (workload.warmup <= 0 and not workload.warmup_time):
            return
        tokenizer = arm.server.model if Path(arm.server.model).is_dir() else None
        say = lambda m: ctx.progress(f"pair {i + 1} arm {letter}: {m}")  # noqa: E731
        try:
            got = bench.warm_up(w_warm, handle.base_url, arm.server.model, folder / f"warmup-{n}-{letter}",
                                quirks=servers.adapter_for(arm.server.engine).quirks, tokenizer=tokenizer,
                                progress=say, stop=ctx.stop)
        except bench.BenchError as exc:
            raise StepFailed(f"pair {i + 1} arm {letter} ({arm.name}): {exc} (server log: {handle.log_path})",
                             str(folder)) from None
        done.launches[n]["warmup"] = got

    def one_run(i: int, letter: str, j: int, total: int) -> None:
        handle, n = up[letter]
        arm = arms[letter]
        sub = folder / f"pair-{i}-{letter}-{j}"
        say = block_progress(ctx.progress, i, letter, len(done.runs), total)
        began = time.monotonic()
        watch = validity.watch(ctx, arm.server.name, handle, host)  # its server lost mid-run fails the step
        try:
            if w_run.command:
                say("run 1/1: the command")
                result = bench.run_command_workload(w_run, host=host, server_host=handle.bind, port=handle.port,
                                                    model=arm.server.model, out_dir=sub, stop=watch.stop)
            else:
                tokenizer = arm.server.model if Path(arm.server.model).is_dir() else None
                adapter = servers.adapter_for(arm.server.engine)
                # both arms of a pair get the same fresh prompts for their j-th run; each pair new ones
                result = bench.run_benchmark(w_run, handle.base_url, arm.server.model, sub, quirks=adapter.quirks,
                                             tokenizer=tokenizer, progress=say, stop=watch.stop,
                                             server=adapter.server_side(), first_run=i * block + j)
        except (bench.BenchError, Cancelled) as exc:
            validity.raise_if_lost(watch, f"pair {i + 1} arm {letter} ({arm.name}): ", sub)
            if isinstance(exc, Cancelled):
                raise
            raise StepFailed(f"pair {i + 1} arm {letter} ({arm.name}): {exc} (server log: {handle.log_path})", str(sub)) from None
        finally:
            watch.close()
        validity.raise_if_lost(watch, f"pair {i + 1} arm {letter} ({arm.name}): ", sub)
        done.launches[n].setdefault("run_s", []).append(round(time.monotonic() - began, 3))  # what a run costs (plan, calibrate)
        for w in result.warnings():  # e.g. client-bound, short outputs (specdsl.bench): named by pair and arm
            done.warnings.append(f"{ctx.addr} pair {i + 1} arm {letter} ({arm.name}): {w}")
        start = len(done.runs)
        for k, r in enumerate(result.runs):
            done.runs.append(attrs.evolve(r, index=start + k))
        pair = next((p for p in done.pairs if p["pair"] == i), None)
        if pair is None:
            pair = {"pair": i, "blocks": []}
            done.pairs.append(pair)
        mine = next((b for b in pair["blocks"] if b["arm"] == letter), None)
        if mine is None:
            mine = {"arm": letter, "runs": [], "launch": n}
            pair["blocks"].append(mine)
        mine["runs"] += list(range(start, start + len(result.runs)))

    def snap_end() -> None:
        """The GPU snapshot at the end of the runs so far, beside the servers
        still up (not counted: their own). After a teardown the driver can
        list a server for a while yet, which read as another job on the
        H200 (docs/gpu-run.md)."""
        ours = set()
        for handle, _ in up.values():
            ours |= gpus.server_pids(walk, host, decl, handle)
        ends[0] = gpus.snapshot(walk, host, decl, ctx.addr, ours)

    def cold_starts(i: int) -> None:
        """A launch of pair `i` whose first run was far slower than its later
        ones had a cold start: said in that run's own warnings and apply's."""
        pair = next((p for p in done.pairs if p["pair"] == i), None)
        for b in (pair or {}).get("blocks", ()):
            runs = [done.runs[k] for k in b["runs"]]
            said = cold_start_warning([r.metrics.get("output_throughput", 0.0) for r in runs])
            if said:
                done.runs[b["runs"][0]] = attrs.evolve(runs[0], warnings=tuple(runs[0].warnings) + (said,))
                done.warnings.append(f"{ctx.addr} pair {i + 1} arm {b['arm']} ({arms[b['arm']].name}, launch {b['launch']}): {said}")

    def measure_pair(i: int, planned: int) -> None:
        total = 2 * block * planned
        measure_arms(i, total)
        cold_starts(i)

    def measure_arms(i: int, total: int) -> None:
        if side_by_side:
            launch_all(i, pair_order(i))
            for letter in pair_order(i):
                warm(i, letter)
            for letter, j in run_order(i, block, True):
                one_run(i, letter, j, total)
            snap_end()
            stop_all()
            return
        for letter in pair_order(i):
            launch_all(i, (letter,))
            warm(i, letter)
            for _, j in run_order(i, block, False)[:block]:
                one_run(i, letter, j, total)
            snap_end()
            stop_arm(letter)

    budget = max_runs(workload) + max(0, extra)
    start = gpus.snapshot(walk, host, decl, ctx.addr)  # before either arm's server: all others
    ends: list = [None]
    n = len(done.complete_pairs())
    done.pairs = done.complete_pairs()  # an incomplete pair of an earlier apply is measured again
    try:
        first = max(first_pairs(workload, done.looks), n)
        while n < first or (n < budget and decide_more(done.to_json(names))):
            measure_pair(n, max(first, n + 1))
            n += 1
    except (Cancelled, validity.ServerLost):  # what completed stays recorded
        _cleanup(stop_all, ctx)
        if done.complete_pairs():
            record(ctx, done.to_json(names), done.effective.get(CANDIDATE, {}), done.launches)
        raise
    except BaseException:
        _cleanup(stop_all, ctx)
        raise
    host.collect(there, folder)
    done.gpu_facts, gpu_warnings = gpus.run_gpu_facts(ctx.addr, start, ends[0])
    for w in done.warnings + gpu_warnings:
        walk.result.warn(w)
    return done.to_json(names), done.effective.get(CANDIDATE, {})


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
    if doc.get("design") != PAIR_DESIGN or (run.runs is not None and len(doc.get("pairs", ())) != run.runs):
        return {}
    return doc


_RUN = re.compile(r"runs? (\d+)(?:-(\d+))?/\d+: ")


def block_progress(progress, i: int, letter: str, before: int, total: int):
    """The progress of one block (pair `i`, arm `letter`), as the step's: the
    load generator counts the runs of the block it was given (`run 1/1` for
    every block of one run), so its `run k/b: ...` becomes the run's place
    in the step, `run N/TOTAL, pair P arm X: ...` (`before` runs came
    first; `total` is 2 x block x the pairs planned so far), and any other
    message is named by pair and arm. Every run of every pair and arm is
    announced once, and no two announcements read alike."""
    where = f"pair {i + 1} arm {letter}"

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
    candidate = {i for p in doc["pairs"] for b in p["blocks"] if b["arm"] == CANDIDATE for i in b["runs"]}
    metrics = medians_of_runs([r for r in doc["runs"] if r["index"] in candidate and not r.get("invalid")])
    argv = next((tuple(x["argv"]) for x in reversed(launches) if x["arm"] == CANDIDATE and "argv" in x), ())
    effective = effective | gpus.visible(ctx.walk, ctx.addr, ctx.step.payload["host"])  # the GPUs both arms ran on
    effective = effective | doc.get("gpu_facts", {})  # the snapshots at the pair's start and end
    run = attrs.evolve(ctx.writer.run_record(ctx.step, ctx.run_id, folder, ctx.started, "completed", metrics=metrics,
                                             effective=effective, argv=argv), runs=len(doc["pairs"]))
    ctx.writer.step_done(ctx.step, run)
    return metrics
