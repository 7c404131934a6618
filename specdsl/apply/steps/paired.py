"""A paired benchmark: a candidate and its baseline measured arm against arm
on one machine, alternating ABBA BAAB ... (specdsl.graph.pairs), each letter
a block of `workload.block` runs; adjacent blocks of one arm share a server
launch. After the first `workload.runs` pairs, while a gating assertion of
the experiment is undecided and the budget (`max_runs` pairs) allows, more
pairs are added with the server up, at the looks of the verdicts' schedule
(repeated looks are accounted for there, see docs/verdicts.md).

The result (`result.json`) holds every run, in the order it ran, with
`pairs`: for each pair its index, its arms' run indexes in order, and the
launch that served each block. What completed stays recorded when the step
is interrupted: the pairs so far are the result, and a re-apply adds the
rest.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import attrs

from specdsl import bench, secrets, servers
from specdsl.apply import gpus, validity
from specdsl.apply.context import StepContext, StepFailed
from specdsl.apply.steps.common import localize
from specdsl.bench.datasets import local_dataset
from specdsl.graph.pairs import BASELINE, CANDIDATE, schedule
from specdsl.hosts import Cancelled
from specdsl.plan.diff import first_pairs, max_runs


@attrs.define
class _Arm:
    name: str
    server: object
    env: object


@attrs.define
class _Pairing:
    """What a paired run has measured so far."""

    runs: list = attrs.Factory(list)  # bench.RunResult, index = position
    pairs: list = attrs.Factory(list)  # {"pair": i, "blocks": [{"arm": A|B, "runs": [..], "launch": k}, ...]}
    launches: list = attrs.Factory(list)  # {"arm": A|B, "argv": [...], "log": path}
    effective: dict = attrs.Factory(dict)  # arm -> effective config (last read)
    warnings: list = attrs.Factory(list)
    warned: set = attrs.Factory(set)  # (arm, warning) already said
    gpu_facts: dict = attrs.Factory(dict)  # the GPU snapshots at the pair's start and end (apply.gpus)

    def complete_pairs(self) -> list:
        return [p for p in self.pairs if len(p["blocks"]) == 2]

    def to_json(self, arms: dict[str, str]) -> dict:
        complete = self.complete_pairs()
        keep = {i for p in complete for b in p["blocks"] for i in b["runs"]}
        runs = [r for r in self.runs if r.index in keep]
        out = {"runs": [r.to_json() for r in runs], "pairs": complete, "arms": arms, "launches": self.launches,
               "effective": secrets.redact_tree(self.effective)}
        return out | ({"gpu_facts": self.gpu_facts} if self.gpu_facts else {})


def run_paired(ctx: StepContext, decide_more) -> tuple[dict, dict]:
    """Measure the pairs; returns (result document, candidate's effective
    config). `decide_more(doc) -> bool` says, at a look, whether another
    pair is needed. Raises StepFailed or Cancelled (after recording the
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
    folder = ctx.new_run()
    there = host.run_folder(folder)
    workload = exp.workload
    done = _Pairing()
    state = {"handle": None, "arm": None}

    def serve(i: int, letter: str):
        if state["arm"] == letter:
            return state["handle"]
        stop_current()
        arm = arms[letter]
        n = len(done.launches)
        sub = there / f"launch-{n}-{letter}"
        ctx.progress(f"pair {i + 1} arm {letter} ({arm.name}): starting its server")
        pinned = gpus.pin(walk, ctx.addr, host, step.payload["host"], arm.server, ctx.stop)  # the pair's own GPUs
        try:
            handle = servers.launch(pinned, arm.env, sub, host=host, progress=ctx.progress, stop=ctx.stop)
        except servers.LaunchError as exc:
            host.collect(there, folder)
            raise StepFailed(f"arm {letter} ({arm.name}): {exc}", str(folder / sub.name / "server.log")) from None
        with walk.mutex:
            walk.result.launches += 1
        done.launches.append({"arm": letter, "argv": list(handle.argv), "log": str(folder / sub.name / "server.log"),
                              **gpus.visible(walk, ctx.addr, step.payload["host"])})
        state.update(handle=handle, arm=letter)
        return handle

    def stop_current():
        if state["handle"] is not None:
            letter = state["arm"]
            handle = state["handle"]
            try:
                effective, warnings = servers.effective_config(arms[letter].server, handle, host)
                done.effective[letter] = effective
                # by experiment and launch (several experiments share a server block), once per arm
                for w in warnings:
                    if (letter, w) not in done.warned:
                        done.warned.add((letter, w))
                        done.warnings.append(f"{arms[letter].name} ({step.addr} launch {len(done.launches) - 1}, arm {letter}): {w}")
            except Exception as exc:  # a report that cannot be read must not lose the runs
                done.warnings.append(f"{arms[letter].name}: could not read the effective configuration: {exc}")
            servers.teardown(handle, host)
            state.update(handle=None, arm=None)

    def block(i: int, letter: str, pairs: int) -> None:
        handle = serve(i, letter)
        arm = arms[letter]
        sub = folder / f"pair-{i}-{letter}"
        w = attrs.evolve(workload, runs=workload.block, dataset=local_dataset(workload.dataset, walk.spec_dir))
        say = block_progress(ctx.progress, i, letter, len(done.runs), 2 * workload.block * pairs)
        watch = validity.watch(ctx, arm.server.name, handle, host)  # its server lost mid-block fails the step
        try:
            if w.command:
                say(f"run 1/{w.runs}: the command" if w.runs == 1 else f"runs 1-{w.runs}/{w.runs}: the command")
                result = bench.run_command_workload(w, host=host, server_host=handle.bind, port=handle.port,
                                                    model=arm.server.model, out_dir=sub, stop=watch.stop)
            else:
                tokenizer = arm.server.model if Path(arm.server.model).is_dir() else None
                adapter = servers.adapter_for(arm.server.engine)
                # both arms of a pair get the same fresh prompts; each pair new ones
                result = bench.run_benchmark(w, handle.base_url, arm.server.model, sub, quirks=adapter.quirks,
                                             tokenizer=tokenizer, progress=say, stop=watch.stop,
                                             server=adapter.server_side(), first_run=i * workload.block)
        except (bench.BenchError, Cancelled) as exc:
            validity.raise_if_lost(watch, f"pair {i} arm {letter} ({arm.name}): ", sub)
            if isinstance(exc, Cancelled):
                raise
            raise StepFailed(f"pair {i} arm {letter} ({arm.name}): {exc} (server log: {handle.log_path})", str(sub)) from None
        finally:
            watch.close()
        validity.raise_if_lost(watch, f"pair {i} arm {letter} ({arm.name}): ", sub)
        for w in result.warnings():  # e.g. client-bound, short outputs (specdsl.bench): named by pair and arm
            done.warnings.append(f"{ctx.addr} pair {i} arm {letter} ({arm.name}): {w}")
        start = len(done.runs)
        for k, r in enumerate(result.runs):
            done.runs.append(attrs.evolve(r, index=start + k))
        pair = next((p for p in done.pairs if p["pair"] == i), None)
        if pair is None:
            pair = {"pair": i, "blocks": []}
            done.pairs.append(pair)
        pair["blocks"].append({"arm": letter, "runs": list(range(start, start + len(result.runs))),
                               "launch": len(done.launches) - 1})

    names = {BASELINE: base.name, CANDIDATE: exp.name}
    budget = max_runs(workload)
    start = gpus.snapshot(walk, host, step.payload["host"], ctx.addr)  # before either arm's server: all others
    try:
        n = first_pairs(workload)
        for i, letter in schedule(n):
            block(i, letter, n)
        while n < budget and decide_more(done.to_json(names)):
            for i, letter in schedule(1, n):
                block(i, letter, n + 1)
            n += 1
    except (Cancelled, validity.ServerLost):  # what completed stays recorded
        _cleanup(stop_current, ctx)
        if done.complete_pairs():
            record(ctx, done.to_json(names), done.effective.get(CANDIDATE, {}), done.launches)
        raise
    except BaseException:
        _cleanup(stop_current, ctx)
        raise
    # at the last run's end, beside the last arm's server (not counted: its
    # own). After its teardown the driver can list it for a while yet, which
    # read as another job on the H200 (docs/gpu-run.md).
    decl = step.payload["host"]
    last = state["handle"]
    end = gpus.snapshot(walk, host, decl, ctx.addr, gpus.server_pids(walk, host, decl, last) if last else frozenset())
    stop_current()
    host.collect(there, folder)
    done.gpu_facts, gpu_warnings = gpus.run_gpu_facts(ctx.addr, start, end)
    for w in done.warnings + gpu_warnings:
        walk.result.warn(w)
    return done.to_json(names), done.effective.get(CANDIDATE, {})


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
    from specdsl.apply.steps.benchmark import medians_of_runs

    folder = ctx.folder
    (folder / "result.json").write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    (folder / "effective.json").write_text(json.dumps(secrets.redact_tree(effective), sort_keys=True, default=str))
    candidate = {i for p in doc["pairs"] for b in p["blocks"] if b["arm"] == CANDIDATE for i in b["runs"]}
    metrics = medians_of_runs([r for r in doc["runs"] if r["index"] in candidate and not r.get("invalid")])
    argv = next((tuple(x["argv"]) for x in reversed(launches) if x["arm"] == CANDIDATE), ())
    effective = effective | gpus.visible(ctx.walk, ctx.addr, ctx.step.payload["host"])  # the GPUs both arms ran on
    effective = effective | doc.get("gpu_facts", {})  # the snapshots at the pair's start and end
    run = attrs.evolve(ctx.writer.run_record(ctx.step, ctx.run_id, folder, ctx.started, "completed", metrics=metrics,
                                             effective=effective, argv=argv), runs=len(doc["pairs"]))
    ctx.writer.step_done(ctx.step, run)
    return metrics
