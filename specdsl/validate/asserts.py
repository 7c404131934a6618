"""Static checks of `assert` expressions.

Names an assertion may read: a metric (`output_throughput`, `itl`, or a
metric of the user's own script), `baseline.METRIC` (needs a `baseline`),
`effective.NAME` (the server's effective configuration), `matrix.KEY`,
`var.NAME`, and in a search experiment `search.OVER` (its answer: the
highest `concurrency` or `rate` that meets the SLO; such an assertion reads
nothing measured). Functions: p50 p90 p99 median mean min max stddev, one argument
each, applied to a metric. The whole expression must be a condition.

An assertion must mean what it reads:
- a percentage added to or subtracted from a measurement is an error
  (`baseline.x + 3%` adds 0.03, not 3%): the fix is `baseline.x * 1.03`;
- a bare number compared with, added to or subtracted from a latency or a
  duration is an error that shows both readings (`0.5` is 0.5 ms; 0.5 s is
  `0.5s`);
- a comparison with the baseline must be a ratio or a difference
  (specdsl.model.assert_shape), the only forms decided with an interval.
"""

from __future__ import annotations

from specdsl.diag import Diagnostic, did_you_mean
from specdsl.model import ast
from specdsl.model.assert_shape import reads_baseline, shape_of, time_unit as _time_unit
from specdsl.model.metrics import FUNCTIONS, GOODPUT_METRICS, METRICS, is_function, percentile_problem

_CONDITIONS = ("==", "!=", "<", "<=", ">", ">=", "and", "or")


def check_assert(
    item: ast.Assert,
    *,
    has_baseline: bool,
    matrix_keys: tuple[str, ...],
    variables: tuple[str, ...],
    user_metrics: tuple[str, ...],
    diags: list[Diagnostic],
    has_slo: bool = True,
    search_over: str | None = None,
) -> None:
    metrics = set(METRICS) | set(user_metrics)
    if not has_slo:
        metrics -= set(GOODPUT_METRICS)
    if not _is_condition(item.expr):
        diags.append(
            Diagnostic.error(
                "An assertion must be a condition",
                item.expr.span,
                "compare something: `output_throughput >= baseline.output_throughput * 1.03`",
            )
        )
    _check_meaning(item.expr, diags)
    from specdsl.model.search import reads_search

    if search_over is not None and reads_search(item.expr) and (mixed := _answer_mixed(item.expr)) is not None:
        diags.append(Diagnostic.error(
            f"An assertion over the search's answer reads `search.{search_over}`, numbers and `var.NAME`, not `{_text(mixed)}`",
            mixed.span, f"it is decided once, on the answer; write the SLO each probe meets as an assertion of its own"))
    stack = [item.expr]
    while stack:
        e = stack.pop()
        if isinstance(e, ast.BinOp):
            stack.extend((e.left, e.right))
        elif isinstance(e, (ast.Not, ast.Neg)):
            stack.append(e.operand)
        elif isinstance(e, ast.Call):
            if percentile_problem(e.func):
                message, hint = percentile_problem(e.func)
                diags.append(Diagnostic.error(message, _head_span(e), hint))
            elif not is_function(e.func):
                hint = did_you_mean(e.func, FUNCTIONS) or "functions: " + ", ".join(FUNCTIONS)
                diags.append(Diagnostic.error(f"Unknown function `{e.func}`", _head_span(e), hint))
            elif len(e.args) != 1:
                diags.append(Diagnostic.error(f"`{e.func}` takes one metric, not {len(e.args)} arguments", e.span, f"write `{e.func}(itl)`"))
            elif not isinstance(e.args[0], ast.Ref):
                diags.append(Diagnostic.error(f"`{e.func}` applies to a metric", e.args[0].span, f"write `{e.func}(itl)` or `{e.func}(baseline.itl)`"))
            stack.extend(e.args)
        elif isinstance(e, ast.Ref) and e.parts[0] == "search":
            _check_search_ref(e, search_over, diags)
        elif isinstance(e, ast.Ref):
            _check_ref(e, has_baseline, matrix_keys, variables, metrics, diags)
        elif isinstance(e, (ast.ListExpr, ast.MapExpr, ast.Override)):
            diags.append(Diagnostic.error("Lists, maps and overrides cannot be used in an assertion", e.span))


_COMBINE = ("+", "-", "==", "!=", "<", "<=", ">", ">=")


def _bare_numbers(e: ast.Expr):
    """The bare (unitless, non-zero) numbers a sum adds: `5` in `x + 5`, `-5`."""
    if isinstance(e, ast.Number) and e.value != 0:
        yield e
    elif isinstance(e, ast.Neg):
        yield from _bare_numbers(e.operand)
    elif isinstance(e, ast.BinOp) and e.op in ("+", "-"):
        yield from _bare_numbers(e.left)
        yield from _bare_numbers(e.right)


def _text(e: ast.Expr) -> str:
    from specdsl.model.printer import expr_text

    return expr_text(e)


def _check_meaning(expr: ast.Expr, diags: list[Diagnostic]) -> None:
    said: set[int] = set()  # a bare number is reported once, beside the first time it meets
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, (ast.Not, ast.Neg)):
            stack.append(e.operand)
            continue
        if not isinstance(e, ast.BinOp):
            continue
        stack.extend((e.left, e.right))
        if e.op in ("+", "-"):
            for pct, other in ((e.right, e.left), (e.left, e.right)):
                if isinstance(pct, ast.Quantity) and pct.unit == "%" and not isinstance(other, (ast.Number, ast.Quantity)):
                    factor = 1 + pct.fraction() if e.op == "+" or pct is e.left else 1 - pct.fraction()
                    diags.append(Diagnostic.error(
                        f"`{e.op} {_fmt_num(pct.value)}%` {'adds' if e.op == '+' else 'subtracts'} {_fmt_num(pct.fraction())}, not {_fmt_num(pct.value)}% of `{_text(other)}`",
                        pct.span,
                        f"a percentage of a measurement is a factor: write `{_text(other)} * {_fmt_num(factor)}`"
                        f" (for {_fmt_num(pct.value)} percentage points of a fraction, write `{e.op} {_fmt_num(pct.fraction())}`)",
                    ))
        if e.op in ("==", "!=", "<", "<=", ">", ">="):
            for side, other in ((e.left, e.right), (e.right, e.left)):
                name = _fraction_metric(other)
                if name and isinstance(side, ast.Number) and side.value > 1:
                    v = _fmt_num(side.value)
                    diags.append(Diagnostic.error(
                        f"`{name}` is a fraction (0 to 1), not a percentage: `{v}` is never reached",
                        side.span,
                        f"for {v} percent write `{v}%` or `{_fmt_num(side.value / 100)}`",
                    ))
        if e.op in _COMBINE:
            for side, other in ((e.left, e.right), (e.right, e.left)):
                unit = _time_unit(other)
                if not unit:
                    continue
                for num in _bare_numbers(side):
                    if id(num) in said:
                        continue
                    said.add(id(num))
                    v = _fmt_num(num.value)
                    if unit == "ms":
                        readings = (f"`{_text(other)}` is a time in milliseconds: a bare `{v}` reads as {v}ms;"
                                    f" if you meant seconds, write `{v}s` (= {_fmt_num(num.value * 1000)}ms)")
                    else:
                        readings = (f"`{_text(other)}` is a time in seconds: a bare `{v}` reads as {v}s;"
                                    f" if you meant milliseconds, write `{v}ms`")
                    diags.append(Diagnostic.error(
                        f"A time needs a unit: `{v}` against `{_text(other)}`",
                        num.span,
                        readings,
                    ))
    if isinstance(expr, ast.BinOp) and shape_of(expr).kind == "exact" and reads_baseline(expr) and _reads_candidate(expr):
        if expr.op in ("and", "or"):
            summary = "A comparison with the baseline cannot be combined with `and`/`or`"
            detail = "write each comparison as its own assertion, so each is decided with its interval"
        else:
            summary = "This comparison with the baseline is not a ratio or a difference"
            detail = ("compare one measurement with its baseline as a ratio, `output_throughput >= baseline.output_throughput * 1.03`,"
                      " or a difference, `p99(ttft) <= p99(baseline.ttft) + 20ms`: those are decided with an interval")
        diags.append(Diagnostic.error(summary, expr.span, detail))
    elif isinstance(expr, ast.Not) and reads_baseline(expr):
        diags.append(Diagnostic.error("A comparison with the baseline cannot be negated with `not`", expr.span,
                                      "flip the comparison instead (`not a >= b` is `a < b`)"))


def _fraction_metric(e: ast.Expr) -> str | None:
    """The metric a term reads when its unit is a fraction (`spec_accept_rate`,
    `mean(prefix_cache_hit_rate)`, `baseline.spec_accept_rate`), else None."""
    if isinstance(e, ast.Call) and len(e.args) == 1:
        e = e.args[0]
    if isinstance(e, ast.Ref):
        name = e.parts[-1] if (len(e.parts) == 1 or (e.parts[0] == "baseline" and len(e.parts) == 2)) else None
        if name and METRICS.get(name, ("", ""))[1] == "fraction":
            return name
    return None


def _reads_candidate(e: ast.Expr) -> bool:
    if isinstance(e, ast.Ref):
        return e.parts[0] not in ("baseline", "var", "matrix", "effective")
    if isinstance(e, ast.BinOp):
        return _reads_candidate(e.left) or _reads_candidate(e.right)
    if isinstance(e, (ast.Not, ast.Neg)):
        return _reads_candidate(e.operand)
    if isinstance(e, ast.Call):
        return any(_reads_candidate(a) for a in e.args)
    return False


def _fmt_num(x: float) -> str:
    return f"{x:.10g}"


def _head_span(call: ast.Call):
    s = call.span
    if s is None:
        return None
    return type(s)(s.file, s.line, s.col, s.line, s.col + len(call.func))


def _is_condition(e: ast.Expr) -> bool:
    if isinstance(e, ast.BinOp):
        return e.op in _CONDITIONS
    return isinstance(e, (ast.Not, ast.Bool))


def _check_search_ref(e: ast.Ref, over: str | None, diags) -> None:
    if over is None:
        diags.append(Diagnostic.error(f"`{e.dotted}` is the answer of a search", e.span,
                                      'only an experiment with `search = { over = "concurrency", ... }` has one'))
    elif e.parts != ("search", over):
        diags.append(Diagnostic.error(f"Unknown reference `{e.dotted}`", e.span,
                                      f"this search's answer is `search.{over}`, the highest {over} that meets the SLO"))


def _answer_mixed(expr: ast.Expr) -> ast.Expr | None:
    """In an assertion over a search's answer, the first part that reads a
    measurement (a metric, `baseline.`, `effective.`, `matrix.`, a function)."""
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, ast.Call):
            return e
        if isinstance(e, ast.Ref) and e.parts[0] not in ("search", "var"):
            return e
        if isinstance(e, ast.BinOp):
            stack.extend((e.right, e.left))
        elif isinstance(e, (ast.Not, ast.Neg)):
            stack.append(e.operand)
    return None


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
        if name in GOODPUT_METRICS:
            diags.append(Diagnostic.error(
                f"`{name}` needs the workload's `slo`", e.span,
                "goodput counts the requests that meet per-request SLOs: give the workload "
                "`slo = { ttft = 200ms, tpot = 50ms }` (docs/language.md#goodput-and-slos)"))
            return
        if name in ("errors", "errored", "error_count"):
            hint = "a request that errored is counted in `failed`: write `failed == 0` (it reads every run, valid or not)"
        diags.append(Diagnostic.error(f"Unknown metric `{name}`", e.span, hint))
