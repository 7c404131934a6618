"""promote: move a track's baseline to this experiment's result and write
the stack lock, only when every check of the experiment passed."""

from __future__ import annotations

import os

from specdsl.apply import checks
from specdsl.apply.context import StepContext
from specdsl.apply.outcome import Outcome, Reason, Status
from specdsl.apply.state_writer import write_stack_lock
from specdsl.apply.steps.common import completed, planned_reuse
from specdsl.plan.model import Action


class Promote:
    def run(self, ctx: StepContext) -> Outcome:
        walk, step = ctx.walk, ctx.step
        if walk.action(ctx.addr) is not Action.PROMOTE:
            return planned_reuse(ctx)
        exp = step.payload["experiment"]
        verdicts = {d: walk.verdicts.get(d) for d in step.deps if walk.graph.steps[d].kind == "check"}
        bad = [d for d, v in verdicts.items() if v is None or v.status != checks.PASS]
        if bad:
            return Outcome(ctx.addr, step.kind, Status.SKIPPED, Reason.CHECK_NOT_PASSED, f"not promoted: {', '.join(bad)} did not pass")
        cells = walk.graph.by_experiment[exp.name]
        state = ctx.writer.state
        run = state.result(walk.graph.steps[cells["benchmark"]].identity)
        prov = cells["provision"]
        # the argv of the candidate's server: its launch's run, or the paired benchmark's own run
        launch_identity = walk.graph.steps[cells["launch"]].identity if "launch" in cells else None
        argv = run.argv or next((r.argv for r in reversed(state.runs) if r.identity == launch_identity and r.argv), ())
        lock = write_stack_lock(walk.spec_dir, exp.promote, exp,
                                env_summary(walk.envs.get(prov), state, walk.graph.steps[prov].identity),
                                list(argv), run.id, dict(run.metrics))
        passed = [walk.graph.steps[d].payload["assertion"].name for d in verdicts]
        ctx.writer.change(lambda s: s.with_promotion(exp.promote, run.id, passed))
        return completed(ctx, f"track {exp.promote} -> run {run.id}; lock {os.path.relpath(lock)}")


def env_summary(info, state, identity: str) -> dict | None:
    """What the lock records of the environment: from this walk's build, or
    from state when the environment was reused (nvcc included either way)."""
    if info is not None:
        return {"python_version": info.python_version, "packages": dict(info.packages),
                "torch": {k: v for k, v in (info.torch or {}).items() if v is not None}, "nvcc": info.nvcc}
    env = state.environment(identity)
    if env is None:
        return None
    return {"python_version": env.python_version, "packages": dict(env.packages), "torch": dict(env.torch), "nvcc": env.nvcc or None}
