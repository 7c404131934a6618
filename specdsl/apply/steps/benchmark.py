"""benchmark: the workload against the server of its launch, its results
and the server's effective configuration recorded.

Runs accumulate: when the recorded result of this identity holds fewer
runs than the workload wants (runs are not part of the identity), only the
missing runs are made and the result holds the old runs and the new ones
(`--rerun` starts afresh)."""

from __future__ import annotations

import json

import attrs

from specdsl import bench, secrets, servers
from specdsl.apply import gpus, run_conditions, validity
from specdsl.apply.context import StepContext, StepFailed
from specdsl.apply.stack_facts import stack_facts
from specdsl.apply.outcome import Outcome
from specdsl.apply.steps.common import (command_stack, completed, localize, localize_command, medians_of, planned_reuse,
                                        prior_runs, stack_info)
from specdsl.bench.datasets import local_dataset
from specdsl.bench.tokenizer_choice import tokenizer_for
from specdsl.hosts import Cancelled, host_key
from specdsl.paired_result import PairedResult
from specdsl.plan.model import Action
from specdsl.servers import jit as server_jit


class Benchmark:
    soft_after = True  # a baseline's benchmark first is a preference: the server order follows it
    one_at_a_time = True  # two benchmarks never load one server at once

    def session_key(self, walk, step) -> str | None:
        """A paired benchmark starts its arms' servers itself: it holds its
        machine's GPUs while it runs (a plain one runs inside its launch's session)."""
        if "paired" in step.payload and walk.action(step.addr) is Action.RUN:
            return f"{host_key(step.payload['host'])}/gpus"
        return None

    def run(self, ctx: StepContext) -> Outcome:
        walk, step = ctx.walk, ctx.step
        if walk.action(ctx.addr) is not Action.RUN:
            return planned_reuse(ctx)
        if "endpoint" in step.payload:  # servers already running: nothing launched
            from specdsl.apply.steps import endpoint

            if "paired" in step.payload:
                exp = step.payload["experiment"]
                return endpoint.run_pairs(ctx, _wants_more(walk, exp, walk.plan.more))
            return endpoint.run(ctx)
        if "paired" in step.payload:
            return self._paired(ctx)
        launch = step.deps[0]
        handle = walk.handles.get(launch)
        if handle is None:
            raise StepFailed(f"the server of {launch} is not up")
        exp = step.payload["experiment"]
        host = walk.host_of(walk.graph.steps[launch])
        folder = ctx.new_run()
        server = localize(exp.server, walk.spec_dir)
        prior = [] if walk.plan.rerun else prior_runs(ctx, exp.workload.runs)
        workload = attrs.evolve(exp.workload, runs=exp.workload.runs - len(prior)) if prior else exp.workload
        workload = attrs.evolve(workload, dataset=local_dataset(workload.dataset, walk.spec_dir))
        workload = localize_command(workload, walk.spec_dir, host)
        provision = walk.graph.steps[launch].deps[0]
        stack = command_stack(stack_info(walk, provision, host, workload), exp.stack.env, server) if workload.command else None
        start = gpus.snapshot(walk, host, exp.host, launch, gpus.server_pids(walk, host, exp.host, handle))
        watch = validity.watch(ctx, server.name, handle, host)  # a server lost mid-run fails the step
        try:
            with watch:
                if workload.command:
                    result = bench.run_command_workload(workload, host=host, server_host=handle.bind, port=handle.port,
                                                        model=server.model, out_dir=folder, stop=watch.stop,
                                                        stack=stack)
                else:
                    tokenizer = tokenizer_for(workload, server.model, walk.spec_dir)
                    adapter = servers.adapter_for(server.engine)
                    result = bench.run_benchmark(workload, handle.base_url, server.model, folder,
                                                 quirks=adapter.quirks, tokenizer=tokenizer,
                                                 progress=ctx.progress, stop=watch.stop,
                                                 server=adapter.server_side(), first_run=len(prior),
                                                 watches=run_conditions.watches(walk, host, exp.host, launch, folder),
                                                 jit=server_jit.probe(handle, host))
        except bench.Unsettled as exc:  # a launch that did not settle is dropped, never measured
            validity.launch_dropped(ctx, exc, handle.log_path, folder)
        except (bench.BenchError, Cancelled) as exc:
            if watch.check():
                validity.server_lost(ctx, watch, prior, getattr(exc, "runs", ()), folder, medians_of)
            if isinstance(exc, Cancelled):
                raise
            raise StepFailed(f"{exc} (server log: {handle.log_path})", str(folder)) from None
        if watch.check():
            validity.server_lost(ctx, watch, prior, result.runs, folder, medians_of, result.settings)
        run_warnings = result.warnings()  # the runs made now, e.g. "client-bound: ..." (specdsl.bench.monitor)
        end = gpus.snapshot(walk, host, exp.host, launch, gpus.server_pids(walk, host, exp.host, handle))
        gpu_facts, gpu_warnings = gpus.run_gpu_facts(ctx.addr, start, end)
        if prior:
            result = bench.BenchResult(runs=tuple(prior) + tuple(attrs.evolve(r, index=len(prior) + i) for i, r in enumerate(result.runs)),
                                       settings=result.settings)
            (folder / "result.json").write_text(json.dumps(bench.stamped(result.to_json()), indent=1, sort_keys=True) + "\n")
        try:
            effective, warnings = servers.effective_config(server, handle, host)
        except Exception as exc:  # an unreadable report must not lose the benchmark's results
            effective, warnings = {}, [f"could not read the effective configuration: {exc}"]
        (folder / "effective.json").write_text(json.dumps(secrets.redact_tree(effective), sort_keys=True, default=str))
        for w in warnings:  # named by experiment and launch: several experiments share a server block
            walk.result.warn(f"{exp.name} ({launch}): {w}")
        for w in run_warnings:
            walk.result.warn(f"{ctx.addr}: {w}")
        for w in gpu_warnings:
            walk.result.warn(w)
        metrics = medians_of(validity.valid(result.runs))  # an invalid run is not a measurement
        run = attrs.evolve(ctx.writer.run_record(step, ctx.run_id, folder, ctx.started, "completed", metrics=metrics,
                                                 effective=effective | stack_facts(walk, ctx.writer.state, step) | gpu_facts | run_conditions.during(result.runs)),
                           runs=len(validity.valid(result.runs)),
                           invalid=validity.invalid_of(result.runs))
        ctx.writer.step_done(step, run)
        summary = ", ".join(f"{k} {metrics[k]:.4g}" for k in ("output_throughput", "median_ttft_ms") if k in metrics)
        bad = validity.note_invalid(ctx, result.runs, exp.workload.runs)
        return completed(ctx, ", ".join(x for x in (summary, bad) if x), str(folder))


    def _paired(self, ctx: StepContext) -> Outcome:
        from specdsl.apply import bursts
        from specdsl.apply.steps import paired
        from specdsl.plan.looks import block_of, looks_of

        exp = ctx.step.payload["experiment"]
        extra = ctx.walk.plan.more
        followers = [(f, _wants_more(ctx.walk, f.payload["experiment"], extra)) for f in paired.sharing_followers(ctx)]
        more = _wants_more(ctx.walk, exp, extra)
        doc, effective = paired.run_paired(ctx, more, looks_of(exp.workload, block_of(exp.workload, ctx.writer.state, exp.name)),
                                         extra, followers)
        metrics = paired.record(ctx, doc, effective, doc["launches"])
        validity.note_left_out(ctx, doc)  # pairs with an invalid run: no verdict reads them
        bursts.note_remeasured(ctx, doc)  # runs a burst hit, measured again
        summary = ", ".join(f"{k} {metrics[k]:.4g}" for k in ("output_throughput", "median_ttft_ms") if k in metrics)
        result = PairedResult.of(doc)
        dropped = sum(1 for x in result.launches if x.dropped)
        line = (f"{len(result.pairs)} pairs, {len(result.launches)} launches"
                + (f" ({dropped} dropped: did not settle)" if dropped else "") + f"; candidate {summary}"
                + (f"; stopped: {result.stopped}" if result.stopped else ""))
        return completed(ctx, line, str(ctx.folder))


def _wants_more(walk, exp, extra: int):
    """decide_more(doc) of a paired comparison of `exp`: whether, after the
    pairs of `doc`, another pair is needed: before its next look (or the
    first that can decide), or while a gating assertion is undecided."""
    from specdsl.apply import cache_hits, judge
    from specdsl.plan.looks import schedule_for

    env = judge_env(walk, exp)

    def more(doc: dict) -> bool:
        base, cand, pairs = judge.blocks_of(doc, doc.get("effective", {}).get("B", {}))
        looks = doc.get("looks") or {}
        verdicts = judge.judge_experiment(exp, judge.Measured(cand, base, pairs, client_bound=judge.client_bound_of(doc),
                                                              cache_mismatch=cache_hits.mismatch(doc),
                                                              looks=looks, extra=extra), env, adaptive=True)
        look = schedule_for(exp.workload, looks, extra)
        if look is not None and len(pairs) not in look.looks():
            return True  # between looks (or before the first that can decide): measure up to the next one
        return judge.undecided(verdicts)

    return more


def judge_env(walk, exp) -> dict:
    env = {f"var.{k}": v for k, v in walk.variables.items()}
    env.update({f"matrix.{k}": v for k, v in exp.matrix})
    return env
