"""check: one assertion evaluated on recorded results, as soon as they are
recorded (the server may still be up). A verdict is written to state only
when it is new: a re-apply that decides the same thing writes nothing."""

from __future__ import annotations

from specdsl.apply import checks
from specdsl.apply.context import StepContext
from specdsl.apply.outcome import Outcome, Reason, Status
from specdsl.apply.results import baseline_results, load_results
from specdsl.state import new_run_id, utc_now


class Check:
    def run(self, ctx: StepContext) -> Outcome:
        walk, step = ctx.walk, ctx.step
        exp = step.payload["experiment"]
        state, state_dir = ctx.writer.state, ctx.writer.state_dir
        mine = load_results(state, state_dir, walk.graph.steps[step.deps[0]].identity)
        baseline = baseline_results(state, state_dir, exp, walk.graph)
        env = {f"var.{k}": v for k, v in walk.variables.items()}
        env.update({f"matrix.{k}": v for k, v in exp.matrix})
        assertion = step.payload["assertion"]
        verdict = checks.check(assertion.name, assertion.expr, mine, baseline, env)
        with walk.mutex:
            walk.verdicts[ctx.addr] = verdict
            walk.result.verdicts.append((exp.name, verdict))
        reason = f"{verdict.status}: {verdict.detail}"
        prior = next((r for r in reversed(state.runs_of(step.addr)) if r.identity == step.identity), None)
        if prior is None or prior.reason != reason:
            # every new verdict is kept (state is the history of what was checked); it needs no run folder
            now = utc_now()
            run = ctx.writer.run_record(step, new_run_id(), None, now, "completed", reason=reason,
                                        metrics={"pass": 1.0 if verdict.status == checks.PASS else 0.0})
            ctx.writer.step_done(step, run)
        return Outcome(ctx.addr, step.kind, Status.COMPLETED, Reason.DONE, verdict.detail, verdict=verdict.status)
