"""provision: the stack's environment on the host, built or reused by identity."""

from __future__ import annotations

from specdsl import provision as envs
from specdsl.apply.context import StepContext, StepFailed
from specdsl.apply.outcome import Outcome
from specdsl.apply.steps.common import completed, planned_reuse
from specdsl.plan.model import Action
from specdsl.state import Environment


class Provision:
    max_parallel = 2  # installs are CPU- and network-heavy

    def run(self, ctx: StepContext) -> Outcome:
        walk = ctx.walk
        if not walk.provision_needed(ctx.addr):
            return planned_reuse(ctx)
        step, host = ctx.step, ctx.host
        folder = ctx.new_run()
        log = host.run_folder(folder) / "provision.log"
        try:
            info = envs.provision(step.payload["stack"], host, step.identity, log, progress=ctx.progress, stop=ctx.stop)
        except envs.ProvisionError as exc:
            host.collect(host.run_folder(folder), folder)
            raise StepFailed(str(exc), str(folder / "provision.log")) from None
        host.collect(host.run_folder(folder), folder)
        with walk.mutex:
            walk.envs[ctx.addr] = info
        record = environment_record(info, step, host.key)
        run = ctx.writer.run_record(step, ctx.run_id, folder, ctx.started, "completed")
        ctx.writer.step_done(step, run, lambda s: s.with_environment(record))
        for w in info.warnings:
            walk.result.warn(f"{ctx.addr}: {w}")
        return completed(ctx, info.path, str(folder / "provision.log"), reused=walk.action(ctx.addr) is Action.REUSE)


def environment_record(info, step, host_key: str) -> Environment:
    return Environment(
        identity=step.identity,
        host=host_key,
        path=info.path,
        python=info.python,
        python_version=info.python_version,
        packages=info.packages,
        torch={k: v for k, v in (info.torch or {}).items() if v is not None},
        created=info.created,
        nvcc=info.nvcc or "",
    )
