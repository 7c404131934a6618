"""Every gating assertion must be decidable at the runs its experiment makes.

A gating assertion (specdsl.validate.promotion.is_gating) is decided with an
interval, and an interval needs enough values: a t interval on the mean of
runs (`p99(ttft) <= 200ms`) or on paired log ratios needs 2, a bound on the
spread of runs (`stddev(output_throughput) <= 20`) 2, a percentile of
per-run values more (specdsl.verdict.per_run.fewest_runs: an upper bound on
p90 needs 29 runs). Where the most values an experiment can reach (its
`runs`; for a baseline measured beside it, `max_runs` pairs) cannot decide
the assertion, apply would only end ERROR after a whole launch, so it is an
error when the experiment promotes (a promotion would be planned on it) and
a warning otherwise, at the assertion, with the form that would decide it.

A statistic of per-run values compared with the baseline's
(`stddev(output_throughput) <= stddev(baseline.output_throughput) * 1.2`)
has no interval here: an error that gives the forms that do.
"""

from __future__ import annotations

from specdsl.diag import Diagnostic
from specdsl.model import config
from specdsl.model.assert_shape import shape_of
from specdsl.model.per_run import per_run_term
from specdsl.validate.promotion import is_gating


def _text(e) -> str:
    from specdsl.model.printer import expr_text

    return expr_text(e)


def paired(exp: config.Experiment, experiments) -> bool:
    """Whether `exp`'s baseline is measured beside it (pairs of blocks)."""
    base = exp.baseline
    if base is None:
        return False
    if base.kind == "track":
        return base.mode == "paired"
    other = next((e for e in experiments if e.group == base.name), None)
    return other is not None and config.measured_beside(exp, other)


def check_decidable(experiments, diags: list[Diagnostic]) -> None:
    """The diagnostics above, once per assertion and message (matrix cells share them)."""
    from specdsl.verdict.per_run import fewest_runs

    said: set[tuple] = set()

    def add(d: Diagnostic) -> None:
        key = (d.span, d.summary, d.severity)
        if key not in said:
            said.add(key)
            diags.append(d)

    for exp in experiments:
        is_paired = paired(exp, experiments)
        for a in exp.asserts:
            if not is_gating(a.expr) or _has_error(a.expr.span, diags):
                continue
            shape = shape_of(a.expr)
            span = a.expr.span
            if shape.kind in ("ratio", "difference"):
                term = next((t for t in (shape.candidate, shape.baseline) if per_run_term(t) is not None), None)
                if term is not None:
                    func, metric = per_run_term(term)
                    add(Diagnostic.error(
                        f"`{func}` of per-run values cannot be compared with the baseline's",
                        span,
                        f"`{_text(term)}` is one number over all runs, with no pairs to decide a {shape.kind} on: compare it with a "
                        f"constant (`{func}({metric}) {shape.op} ...`), or compare the runs' means "
                        f"(`{metric} {shape.op} baseline.{metric}{' * 1.03' if shape.kind == 'ratio' else ' + ...'}`)",
                    ))
                    continue
            found = per_run_term(shape.candidate) if shape.kind == "absolute" else None
            # measured beside its baseline, the candidate has up to max_runs pairs' blocks of runs
            have, unit = (_most_pairs(exp.workload), "pairs") if is_paired else (exp.workload.runs, "runs")
            if found is not None:
                func, metric = found
                need = fewest_runs(func, shape.op)
                why = _why(func, shape.op, need)
            elif is_paired:
                need, why = 2, f"a t interval needs 2 {'pairs' if shape.kind != 'absolute' else 'blocks'}"
            else:
                need, why = 2, "a t interval on the runs' values needs 2 runs"
            if have >= need:
                continue
            setting = "max_runs" if unit == "pairs" else "runs"
            detail = f"{why}; set `{setting} = {need}` (or more) in workload `{exp.workload.name}`"
            if found is not None and need > 2:
                func, metric = found
                detail += f", or assert what {have} run{'s' if have != 1 else ''} can decide: `mean({metric}) {shape.op} ...` or `{'max' if shape.op in ('<=', '<') else 'min'}({metric}) {shape.op} ...`"
            summary = f"`{_text(a.expr)}` cannot be decided at {setting} = {have}"
            if exp.promote:
                add(Diagnostic.error(summary, span, f"{detail}: `promote` would plan a promotion on an assertion that can only end ERROR"))
            elif found is not None:
                # a mean at runs = 1 says so itself at apply (`not enough runs`); a statistic of
                # per-run values is new to most readers: say it before the launch
                add(Diagnostic.warning(summary, span, f"{detail}: as it is, apply cannot decide it"))


def _most_pairs(workload) -> int:
    """The pairs a paired comparison may reach: `max_runs`, 3 x runs unset
    (specdsl.plan.looks.max_runs, which may allow more for a look grid)."""
    return workload.max_runs if workload.max_runs is not None else 3 * workload.runs


def _has_error(span, diags) -> bool:
    """Whether an error was reported inside `span` (an unknown metric, say): one problem at a time."""
    if span is None:
        return False
    for d in diags:
        s = d.span
        if d.severity == "error" and s is not None and s.file == span.file and span.line <= s.line <= (span.end_line or span.line):
            return True
    return False


def _why(func: str, op: str, need: int) -> str:
    if func == "stddev":
        return "a bound on the spread of runs needs 2 runs"
    if func in ("min", "max"):
        return f"a bound on how {'low' if func == 'min' else 'high'} one more run goes needs 2 runs"
    side = "an upper" if op in ("<=", "<") else "a lower"
    return f"{side} bound on the {func} of per-run values (order statistics) needs {need} runs"
