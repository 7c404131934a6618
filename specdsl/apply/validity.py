"""What a benchmark step does with invalid runs and a lost server (the
rules are specdsl.bench.validity's; the watch is specdsl.apply.server_watch).

- Invalid runs stay in the run folder's result, marked; the run record
  counts only the valid ones (`runs`, `metrics`) and names the others
  (`invalid`), apply warns, and the closing summary counts them. A
  re-apply makes the runs that are missing (plan sees fewer than wanted).
- A launch whose steady warm-up did not settle (specdsl.bench.steady) is
  dropped, never measured: counted in the closing summary, its reason and
  log lines said; a lone benchmark fails with them (`launch_dropped`), a
  paired one replaces the launch (specdsl.apply.steps.paired) and, when it
  had to stop, its undecided verdicts say why (`stopped_verdict`).
- A server lost during its benchmark fails the step (exit 5) with what was
  lost and when. The valid runs that ended before it are recorded as the
  result (a completed record of their own), so a re-apply relaunches the
  server and makes only the runs that are missing.
"""

from __future__ import annotations

import json
from pathlib import Path

import attrs

from specdsl import bench
from specdsl.apply.context import StepContext, StepFailed
from specdsl.bench.validity import describe_invalid, excluded_pairs, invalid_runs
from specdsl.paired_result import PairedResult
from specdsl.state import new_run_id
from specdsl.verdict.decision import Status
from specdsl.verdict.record import Verdict


class ServerLost(StepFailed):
    """The server (or its host's connection) was lost while its benchmark ran."""


def watch(ctx: StepContext, name: str, handle, host):
    """A started `ServerWatch` of the server `name` for this step (close
    it). A server that does not answer its health URL within the workload's
    request `timeout` (at most 30 s), twice in a row, stopped answering."""
    from specdsl.apply.server_watch import ServerWatch

    timeout = min(30.0, float(ctx.step.payload["experiment"].workload.timeout))
    return ServerWatch(name, handle, host, ctx.stop, answer_timeout_s=timeout).start()


def raise_if_lost(watch, where: str, folder) -> None:
    """ServerLost (the step fails, exit 5) when `watch` saw its server lost."""
    watch.close()
    if watch.check():
        raise ServerLost(f"{where}{watch.lost}" + (f"\n{watch.log}" if watch.log else ""), str(folder))


def invalid_of(runs) -> tuple[str, ...] | None:
    """`run N: why` of each invalid run (bench.RunResult), None when all are valid."""
    found = tuple(f"run {r.index}: {r.invalid}" for r in runs if r.invalid)
    return found or None


def valid(runs) -> list:
    return [r for r in runs if not r.invalid]


def note_invalid(ctx: StepContext, runs, wanted: int) -> str:
    """Warn about the invalid runs of a result and count them in the walk's
    summary; returns the words the step's line adds ('' when none)."""
    bad = [(r.index, r.invalid) for r in runs if r.invalid]
    if not bad:
        return ""
    good = len(runs) - len(bad)
    with ctx.walk.mutex:
        ctx.walk.result.invalid_runs += len(bad)
    ctx.walk.result.warn(f"{ctx.addr}: {len(bad)} invalid run{'s' if len(bad) != 1 else ''}, not read by any verdict "
                         f"({describe_invalid(bad)}); {good} valid of {wanted} wanted"
                         + ("; a re-apply makes the missing runs" if good < wanted else ""))
    return f"{len(bad)} invalid run{'s' if len(bad) != 1 else ''}"


def note_left_out(ctx: StepContext, doc: dict) -> None:
    """Warn about the pairs of a paired result that no verdict reads (a run
    of one of their blocks is invalid) and count their invalid runs."""
    left = excluded_pairs(doc)
    if not left:
        return
    bad = {i for i, _ in invalid_runs(doc)}
    paired = PairedResult.of(doc)
    with ctx.walk.mutex:  # those of their blocks (a run a burst hit and measured again is counted apart: apply.bursts)
        ctx.walk.result.invalid_runs += len(paired.run_indexes() & bad)
    ctx.walk.result.warn(f"{ctx.addr}: {len(left)} of {len(paired.pairs)} pairs left out of every verdict, both arms' "
                         "blocks (an invalid run): " + "; ".join(f"pair {i + 1} ({why})" for i, why in left))


def mark_lost(runs, lost: str) -> list:
    """The runs of a benchmark whose server was lost: the last one, when
    some of its requests failed (they failed when the server went), is
    invalid because of it."""
    runs = list(runs)
    if runs and runs[-1].metrics.get("failed", 0) > 0:
        last = runs[-1]
        why = f"the server was lost during it ({lost})"
        runs[-1] = attrs.evolve(last, invalid=f"{last.invalid}; {why}" if last.invalid else why)
    return runs


def server_lost(ctx: StepContext, watch, prior: list, made, folder: Path, medians, settings=None) -> None:
    """Fail the step for a lost server (StepFailed), after recording what
    was measured: every run in the folder's result, and the valid ones as a
    completed result of their own when there are any."""
    lost = watch.lost
    made = mark_lost([attrs.evolve(r, index=len(prior) + i) for i, r in enumerate(made)] if prior else made, lost)
    runs = list(prior) + made
    if runs:
        doc = bench.BenchResult(runs=tuple(runs), settings=settings or {}).to_json()
        (folder / "result.json").write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    kept = valid(runs)
    note = ""
    if kept:
        record = ctx.writer.run_record(ctx.step, new_run_id(), folder, ctx.started, "completed", metrics=medians(kept))
        ctx.writer.step_done(ctx.step, attrs.evolve(record, runs=len(kept), invalid=invalid_of(runs)))
        note = f"; the {len(kept)} valid run{'s' if len(kept) != 1 else ''} before it {'are' if len(kept) != 1 else 'is'} recorded"
    if len(runs) > len(kept):
        with ctx.walk.mutex:
            ctx.walk.result.invalid_runs += len(runs) - len(kept)
    raise ServerLost(f"{lost}{note}; re-apply to make the missing runs (a server that is gone is launched again)"
                     + (f"\n{watch.log}" if watch.log else ""), str(folder))


def not_read(doc: dict | None) -> tuple[str, int]:
    """(what a verdict on this result document leaves out and why, how many
    runs or pairs it still reads): the invalid runs, or for a paired result
    the pairs with one ('' when nothing is left out)."""
    if doc is None:
        return "", 0
    paired = PairedResult.of(doc)
    if paired is not None and paired.pairs:
        out = excluded_pairs(doc)
        note = "; ".join(f"pair {i + 1} ({why})" for i, why in out)
        return (f"pairs left out, both arms' blocks: {note}" if note else ""), len(paired.pairs) - len(out)
    bad = invalid_runs(doc)
    return (f"invalid runs not read: {describe_invalid(bad)}" if bad else ""), len(doc.get("runs", ())) - len(bad)


def annotate(verdict: Verdict, note: str, valid_n: int, paired: bool) -> Verdict:
    """A verdict that says what it left out; one that could not be decided
    (ERROR) because of it says that there were too few valid runs."""
    if not note:
        return verdict
    if verdict.status is Status.ERROR:
        unit = "pairs" if paired else "runs"
        return attrs.evolve(verdict, detail=f"too few valid {unit}: {valid_n} valid ({note}); {verdict.detail}")
    return attrs.evolve(verdict, detail=f"{verdict.detail}; {note}")


class LaunchDropped(StepFailed):
    """A lone benchmark's launch did not settle: nothing was measured."""


def launch_dropped(ctx: StepContext, exc, log_path: str, folder) -> None:
    """Count a benchmark's dropped launch (bench.Unsettled `exc`) and fail
    the step with its reason and the compile lines its log gained."""
    with ctx.walk.mutex:
        ctx.walk.result.dropped_launches += 1
    lines = "".join(f"\n    {line}" for line in exc.log_lines[-5:])
    raise LaunchDropped(f"launch dropped, never measured: {exc.reason} (server log: {log_path}); a re-apply launches "
                        f"again (raise `warmup_time` or `warmup_tolerance` if the server is steady only later){lines}",
                        str(folder))


def stopped_verdict(verdict: Verdict, doc: dict | None) -> Verdict:
    """A verdict on a paired result whose measuring stopped (launches that
    did not settle: the result's `stopped`): one its pairs did not decide
    is INCONCLUSIVE with the reason; a decided one keeps its status and
    says it."""
    why = (doc or {}).get("stopped")
    if not why:
        return verdict
    if verdict.status in (Status.ERROR, Status.INCONCLUSIVE):
        return attrs.evolve(verdict, status=Status.INCONCLUSIVE, detail=f"stopped: {why}; {verdict.detail}")
    return attrs.evolve(verdict, detail=f"{verdict.detail}; measuring stopped after it: {why}")
