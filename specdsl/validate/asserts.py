"""Static checks of `assert` expressions.

Names an assertion may read: a metric (`output_throughput`, `itl`, or a
metric of the user's own script), `baseline.METRIC` (needs a `baseline`),
`effective.NAME` (the server's effective configuration), `matrix.KEY`,
`var.NAME`. Functions: p50 p90 p99 median mean min max stddev, one argument
each, applied to a metric. The whole expression must be a condition.
"""

from __future__ import annotations

from specdsl.diag import Diagnostic, did_you_mean
from specdsl.model import ast
from specdsl.model.metrics import FUNCTIONS, METRICS

_CONDITIONS = ("==", "!=", "<", "<=", ">", ">=", "and", "or")


def check_assert(
    item: ast.Assert,
    *,
    has_baseline: bool,
    matrix_keys: tuple[str, ...],
    variables: tuple[str, ...],
    user_metrics: tuple[str, ...],
    diags: list[Diagnostic],
) -> None:
    metrics = set(METRICS) | set(user_metrics)
    if not _is_condition(item.expr):
        diags.append(
            Diagnostic.error(
                "An assertion must be a condition",
                item.expr.span,
                "compare something: `output_throughput >= baseline.output_throughput * 1.03`",
            )
        )
    stack = [item.expr]
    while stack:
        e = stack.pop()
        if isinstance(e, ast.BinOp):
            stack.extend((e.left, e.right))
        elif isinstance(e, (ast.Not, ast.Neg)):
            stack.append(e.operand)
        elif isinstance(e, ast.Call):
            if e.func not in FUNCTIONS:
                hint = did_you_mean(e.func, FUNCTIONS) or "functions: " + ", ".join(FUNCTIONS)
                diags.append(Diagnostic.error(f"Unknown function `{e.func}`", _head_span(e), hint))
            elif len(e.args) != 1:
                diags.append(Diagnostic.error(f"`{e.func}` takes one metric, not {len(e.args)} arguments", e.span, f"write `{e.func}(itl)`"))
            elif not isinstance(e.args[0], ast.Ref):
                diags.append(Diagnostic.error(f"`{e.func}` applies to a metric", e.args[0].span, f"write `{e.func}(itl)` or `{e.func}(baseline.itl)`"))
            stack.extend(e.args)
        elif isinstance(e, ast.Ref):
            _check_ref(e, has_baseline, matrix_keys, variables, metrics, diags)
        elif isinstance(e, (ast.ListExpr, ast.MapExpr, ast.Override)):
            diags.append(Diagnostic.error("Lists, maps and overrides cannot be used in an assertion", e.span))


def _head_span(call: ast.Call):
    s = call.span
    if s is None:
        return None
    return type(s)(s.file, s.line, s.col, s.line, s.col + len(call.func))


def _is_condition(e: ast.Expr) -> bool:
    if isinstance(e, ast.BinOp):
        return e.op in _CONDITIONS
    return isinstance(e, (ast.Not, ast.Bool))


def _check_ref(e: ast.Ref, has_baseline, matrix_keys, variables, metrics, diags) -> None:
    parts = e.parts
    head = parts[0]
    if head == "baseline":
        if not has_baseline:
            diags.append(
                Diagnostic.error(
                    "`baseline` is used but this experiment has no baseline",
                    e.span,
                    "add `baseline = experiment.NAME` (or `track.NAME`) to the experiment",
                )
            )
            return
        if len(parts) != 2:
            diags.append(Diagnostic.error("Write `baseline.METRIC`", e.span, "for example `baseline.output_throughput`"))
            return
        _metric(parts[1], e, metrics, diags)
    elif head == "effective":
        if len(parts) != 2:
            diags.append(Diagnostic.error("Write `effective.NAME`", e.span, "for example `effective.attention_backend`"))
    elif head == "matrix":
        if len(parts) != 2 or parts[1] not in matrix_keys:
            key = parts[1] if len(parts) > 1 else ""
            hint = did_you_mean(key, matrix_keys) or ("matrix keys: " + ", ".join(matrix_keys) if matrix_keys else "this experiment has no matrix")
            diags.append(Diagnostic.error(f"Unknown matrix key `{key}`", e.span, hint))
    elif head == "var":
        if len(parts) != 2 or parts[1] not in variables:
            name = parts[1] if len(parts) > 1 else ""
            diags.append(Diagnostic.error(f"Unknown variable `{name}`", e.span, did_you_mean(name, variables)))
    elif len(parts) == 1:
        _metric(head, e, metrics, diags)
    else:
        hint = did_you_mean(head, ("baseline", "effective", "matrix", "var")) or "an assertion reads a metric, `baseline.METRIC`, `effective.NAME`, `matrix.KEY` or `var.NAME`"
        diags.append(Diagnostic.error(f"Unknown reference `{e.dotted}`", e.span, hint))


def _metric(name: str, e: ast.Ref, metrics, diags) -> None:
    if name not in metrics:
        hint = did_you_mean(name, metrics) or "metrics include output_throughput, request_throughput, ttft, itl, tpot, e2el"
        diags.append(Diagnostic.error(f"Unknown metric `{name}`", e.span, hint))
