"""Assertions on counts: exact facts of each run, not noisy estimates.

A *count* metric (`completed`, `failed`, `total_input_tokens`,
`total_output_tokens`, and the server's `server_*_tokens` counters: every
metric whose unit is `count` in specdsl.model.metrics) is what happened in
a run. An assertion that compares a bare count with a constant
(`failed == 0`, `completed >= 240`) is decided exactly over every valid run:
it passes when each run satisfies it and fails naming the runs that do not.
No interval, so any number of runs decides it (one is enough), and it is
not gating (no Holm correction, it asks no statistical question).

The request counts `failed` and `completed` (EVERY_RUN) are read over
*every* run, valid or not: a run is invalid because its requests failed
(specdsl.bench.validity), so reading only valid runs would make `failed ==
0` unable to FAIL. A FAIL names each run that broke it, and says which of
them were invalid. Every other count reads only valid runs.
"""

from __future__ import annotations

from specdsl.apply import checks
from specdsl.model.counts import OPS, count_shape, is_count  # noqa: F401  (is_count: for judge)
from specdsl.paired_result import PairedResult
from specdsl.verdict.decision import Status
from specdsl.verdict.record import Verdict

EVERY_RUN = ("completed", "failed")


def reads_every_run(expr) -> bool:
    """Whether `expr` is a count assertion read over every run, invalid ones included."""
    found = count_shape(expr)
    return found is not None and found[0] in EVERY_RUN


def every_run(doc: dict | None) -> tuple[tuple[str, dict], ...]:
    """(label, metrics) of every run of the candidate in a result document,
    valid or not: its runs, or for a paired result the runs of arm B's
    blocks. An invalid run's label says so (`run 2 (invalid: 3 of 8
    requests failed (max_failed 0))`)."""
    if not doc:
        return ()
    runs = {int(r.get("index", -1)): r for r in doc.get("runs", ())}

    def label(base: str, run: dict) -> str:
        return f"{base} (invalid: {run['invalid']})" if run.get("invalid") else base

    out = []
    paired = PairedResult.of(doc)
    if paired is not None and paired.pairs:
        for i, p in enumerate(paired.pairs):
            for block in p.blocks:
                if block.arm != "B":
                    continue
                for index in block.runs:
                    if index in runs:
                        out.append((label(f"pair {i + 1} arm B", runs[index]), _metrics(runs[index])))
        return tuple(out)
    return tuple((label(f"run {index}", run), _metrics(run)) for index, run in sorted(runs.items()))


def _metrics(run: dict) -> dict:
    return {k: float(v) for k, v in run.get("metrics", {}).items() if isinstance(v, (int, float))}


def decide_count(name: str, expr, runs: list[tuple[str, dict]], env: dict,
                 every: tuple[tuple[str, dict], ...] = ()) -> Verdict | None:
    """The exact verdict of a count assertion over `runs` ((label, per-run
    metrics) of every valid run), or for `failed`/`completed` over `every`
    run when given; None when `expr` is not one."""
    found = count_shape(expr)  # specdsl.model.counts
    if found is None:
        return None
    metric, op, const = found
    if metric in EVERY_RUN and every:
        runs = list(every)
    try:
        threshold = float(checks.evaluate(const, None, None, env, []))
    except (checks.Missing, TypeError, ValueError, ZeroDivisionError) as exc:
        return Verdict(name, Status.ERROR, f"cannot compute: {exc}")
    if not runs:
        return Verdict(name, Status.ERROR, "no valid run to read")
    missing = [label for label, m in runs if metric not in m]
    if missing:
        return Verdict(name, Status.ERROR, f"{metric} missing from {', '.join(missing)}")
    bad = [f"{label}: {metric} = {m[metric]:g}" for label, m in runs if not OPS[op](float(m[metric]), threshold)]
    kind = "" if metric in EVERY_RUN and every else "valid "
    every = f"{metric} {op} {threshold:g} in every one of {len(runs)} {kind}run{'s' if len(runs) != 1 else ''} (a count: exact, no interval)"
    if bad:
        return Verdict(name, Status.FAIL, f"not {every}: {'; '.join(bad)}")
    values = sorted(float(m[metric]) for _, m in runs)
    seen = f"{values[0]:g}" if values[0] == values[-1] else f"{values[0]:g} to {values[-1]:g}"
    return Verdict(name, Status.PASS, f"{every}: {seen}")


def runs_of(measured) -> list[tuple[str, dict]]:
    """(label, metrics) of each valid run of the candidate a `judge.Measured`
    holds: its runs apart, or the runs of its blocks in the valid pairs."""
    if measured.pairs:
        return [(f"pair {i + 1} arm B", run) for i, (_a, b) in enumerate(measured.pairs) for run in b.runs]
    if measured.candidate_runs:
        return [(f"run {k}", run) for k, r in enumerate(measured.candidate_runs) for run in r.runs]
    return [(f"run {k}", run) for k, run in enumerate(measured.mine.runs)] if measured.mine is not None else []
