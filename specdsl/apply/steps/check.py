"""check: one assertion evaluated on recorded results, as soon as they are
recorded (the server may still be up). A verdict is written to state only
when it is new: a re-apply that decides the same thing writes nothing."""

from __future__ import annotations

import attrs

from specdsl.apply import budget, cache_hits, counts, judge, validity
from specdsl.apply.context import StepContext
from specdsl.apply.outcome import Outcome, Reason, Status
from specdsl.bench.validity import valid_document
from specdsl.apply.results import baseline_results, document_of, effective_of, load_results, per_run
from specdsl.paired_result import PairedResult
from specdsl.state import new_run_id, utc_now
from specdsl.verdict.record import Verdict


class Check:
    def run(self, ctx: StepContext) -> Outcome:
        walk, step = ctx.walk, ctx.step
        exp = step.payload["experiment"]
        state, state_dir = ctx.writer.state, ctx.writer.state_dir
        bench_step = walk.graph.steps[step.deps[0]]
        run = state.result(bench_step.identity)
        env = {f"var.{k}": v for k, v in walk.variables.items()}
        env.update({f"matrix.{k}": v for k, v in exp.matrix})
        doc = document_of(run, state_dir) if run is not None and "paired" in bench_step.payload else None
        if (typed := PairedResult.of(doc)) is not None and typed.pairs:
            base, cand, pairs = judge.blocks_of(doc, effective_of(run))
            measured, adaptive = judge.Measured(cand, base, pairs, client_bound=judge.client_bound_of(doc),
                                                cache_mismatch=cache_hits.mismatch(doc)), True
        elif exp.baseline is not None and exp.baseline.kind == "track" and exp.baseline.mode == "paired":
            # paired, but the graph found no configuration to rebuild the track from
            mine = load_results(state, state_dir, bench_step.identity)
            measured, adaptive = judge.Measured(mine, None, candidate_runs=per_run(run, state_dir),
                                                baseline_missing=step.payload.get("baseline_missing", ""),
                                                client_bound=judge.client_bound_of(valid_document(document_of(run, state_dir) if run is not None and run.folder else None))), False
        else:
            mine = load_results(state, state_dir, bench_step.identity)
            baseline = baseline_results(state, state_dir, exp, walk.graph)
            measured, adaptive = judge.Measured(mine, baseline, candidate_runs=per_run(run, state_dir),
                                                baseline_note=baseline_note(state, exp, run.id if run is not None else None),
                                                client_bound=judge.client_bound_of(valid_document(document_of(run, state_dir) if run is not None and run.folder else None))), False
        assertion = step.payload["assertion"]
        raw = document_of(run, state_dir) if run is not None and run.folder else None
        measured = attrs.evolve(measured, every_run=counts.every_run(raw))  # `failed == 0` reads invalid runs too
        verdict = judge.judge_experiment(exp, measured, env, adaptive=adaptive)[assertion.name]
        if not counts.reads_every_run(assertion.expr):
            verdict = validity.annotate(verdict, *validity.not_read(raw), paired=bool((got := PairedResult.of(raw)) and got.pairs))
        verdict = validity.stopped_verdict(verdict, raw)  # launches that did not settle stopped the pairs
        verdict = budget.annotate(verdict, raw)  # stopped by its budget: what a decision would still cost
        with walk.mutex:
            walk.verdicts[ctx.addr] = verdict
            walk.result.verdicts.append((exp.name, verdict))
        prior = next((r for r in reversed(state.runs_of(step.addr)) if r.identity == step.identity), None)
        if prior is None or not same_verdict(prior.verdict, verdict):
            # every new verdict is kept (state is the history of what was checked), with its numbers
            # (what `specdsl state show` and a later plan read back); it needs no run folder
            now = utc_now()
            run = ctx.writer.run_record(step, new_run_id(), None, now, "completed", verdict=verdict)
            ctx.writer.step_done(step, run)
        return Outcome(ctx.addr, step.kind, Status.COMPLETED, Reason.DONE, verdict.detail, verdict=verdict.status.value)


def same_verdict(recorded: Verdict | None, verdict: Verdict) -> bool:
    """Whether `verdict` says what the recorded one says: its status and
    its line (numbers, method, notes) as shown. One read from an older
    state has the same line but its numbers rounded, so the line decides."""
    return recorded is not None and (recorded.status, recorded.detail) == (verdict.status, verdict.detail)


def baseline_note(state, exp, mine: str | None) -> str:
    """How a baseline not measured alongside was measured. `mine` is the
    candidate's result run: once it is the track's baseline, the note names
    the run it replaced, as `baseline_results` reads it (`State.baseline_for`),
    so the verdict's text does not change when the candidate is promoted."""
    if exp.baseline is None:
        return ""
    if exp.baseline.kind == "experiment":
        return f"baseline {exp.baseline.name} was measured apart (another machine): drift between them is not controlled"
    base = state.baseline_for(exp.baseline.name, mine)
    run = state.run(base) if base is not None else None
    when = run.finished if run is not None else "an unknown time"
    return f"baseline: the recorded result of track {exp.baseline.name} (measured {when}): drift since then is not controlled"
