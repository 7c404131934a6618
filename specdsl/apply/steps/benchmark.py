"""benchmark: the workload against the server of its launch, its results
and the server's effective configuration recorded."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from specdsl import bench, servers
from specdsl.apply.context import StepContext, StepFailed
from specdsl.apply.outcome import Outcome
from specdsl.apply.steps.common import completed, localize, planned_reuse
from specdsl.plan.model import Action


class Benchmark:
    soft_after = True  # a baseline's benchmark first is a preference: the server order follows it

    def run(self, ctx: StepContext) -> Outcome:
        walk, step = ctx.walk, ctx.step
        if walk.action(ctx.addr) is not Action.RUN:
            return planned_reuse(ctx)
        launch = step.deps[0]
        handle = walk.handles.get(launch)
        if handle is None:
            raise StepFailed(f"the server of {launch} is not up")
        exp = step.payload["experiment"]
        host = walk.host_of(walk.graph.steps[launch])
        folder = ctx.new_run()
        server = localize(exp.server, walk.spec_dir)
        workload = exp.workload
        try:
            if workload.command:
                result = bench.run_command_workload(workload, host=host, server_host=handle.bind, port=handle.port,
                                                    model=server.model, out_dir=folder, stop=ctx.stop)
            else:
                tokenizer = server.model if Path(server.model).is_dir() else None
                result = bench.run_benchmark(workload, handle.base_url, server.model, folder,
                                             quirks=servers.adapter_for(server.engine).quirks, tokenizer=tokenizer,
                                             progress=ctx.progress, stop=ctx.stop)
        except bench.BenchError as exc:
            raise StepFailed(f"{exc} (server log: {handle.log_path})", str(folder)) from None
        try:
            effective, warnings = servers.effective_config(server, handle, host)
        except Exception as exc:  # an unreadable report must not lose the benchmark's results
            effective, warnings = {}, [f"could not read the effective configuration: {exc}"]
        (folder / "effective.json").write_text(json.dumps(effective, sort_keys=True, default=str))
        for w in warnings:
            walk.result.warn(f"{exp.server.name}: {w}")
        metrics = medians(result)
        run = ctx.writer.run_record(step, ctx.run_id, folder, ctx.started, "completed", metrics=metrics, effective=effective)
        ctx.writer.step_done(step, run)
        summary = ", ".join(f"{k} {metrics[k]:.4g}" for k in ("output_throughput", "median_ttft_ms") if k in metrics)
        return completed(ctx, summary, str(folder))


def medians(result: bench.BenchResult) -> dict[str, float]:
    """Each scalar metric's median across runs (what state records)."""
    names: dict[str, list[float]] = {}
    for run in result.runs:
        for name, value in run.metrics.items():
            names.setdefault(name, []).append(float(value))
    return {name: statistics.median(values) for name, values in sorted(names.items())}
