"""The shape of an assertion: what kind of statistical question it asks.

- `ratio`: a candidate term against a baseline term times a constant
  (`output_throughput >= baseline.output_throughput * 1.03`);
- `difference`: a candidate term against a baseline term plus a constant
  (`p99(ttft) <= p99(baseline.ttft) + 20ms`);
- `absolute`: a candidate term against a constant (`p99(itl) <= 50ms`);
- `exact`: anything else (`effective.*`, `var.*`, boolean logic).
Ratio, difference and absolute assertions are *gating*: they are decided
with an interval (specdsl.apply.judge) and a promotion needs one that passed.

Every algebraic spelling of a ratio or a difference reads as the same shape
(metrics are positive, so dividing both sides keeps the comparison):
`a / baseline.a >= 1.03`, `baseline.a * 1.03 <= a`, `baseline.a / a <= 0.97`
are ratios; `a - baseline.a <= 20ms`, `a <= baseline.a + 20ms`,
`baseline.a - a >= 5` are differences.
"""

from __future__ import annotations

from typing import Any

import attrs

from specdsl.model import ast

_FLIP = {">=": "<=", ">": "<", "<=": ">=", "<": ">"}
_CANDIDATE, _BASELINE, _CONST, _MIXED = "candidate", "baseline", "constant", "mixed"


@attrs.frozen
class Shape:
    kind: str  # "ratio", "difference", "absolute" or "exact"
    op: str = ""
    candidate: Any = None  # the candidate's term
    baseline: Any = None  # the baseline's term (ratio, difference)
    k: Any = None  # the constant, an expression: a factor (ratio), an offset (difference), the threshold (absolute)


def _side(expr) -> str:
    """Which measurements an expression reads."""
    if isinstance(expr, (ast.Number, ast.Quantity, ast.String, ast.Bool)):
        return _CONST
    if isinstance(expr, ast.Ref):
        head = expr.parts[0]
        if head in ("var", "matrix"):
            return _CONST
        if head == "effective":
            return _MIXED
        return _BASELINE if head == "baseline" else _CANDIDATE
    if isinstance(expr, ast.Call):
        return _side(expr.args[0]) if expr.args else _MIXED
    if isinstance(expr, ast.Neg):
        return _side(expr.operand)
    if isinstance(expr, ast.BinOp) and expr.op in ("+", "-", "*", "/"):
        a, b = _side(expr.left), _side(expr.right)
        if a == b or b == _CONST:
            return a
        return b if a == _CONST else _MIXED
    return _MIXED


def shape_of(expr) -> Shape:
    shape = _shape_of(expr)
    if shape.kind in ("absolute", "difference") and time_unit(shape.candidate) == "s":
        return attrs.evolve(shape, k=in_seconds(shape.k))
    return shape


def _shape_of(expr) -> Shape:
    if not (isinstance(expr, ast.BinOp) and expr.op in _FLIP):
        return Shape("exact")
    left, right, op = expr.left, expr.right, expr.op
    if _side(left) == _CONST and _side(right) != _CONST:
        left, right, op = right, left, _FLIP[op]
    if _side(right) == _CONST:
        # `a OP k`, `a / B OP k`, `B / a OP k`, `a - B OP d`, `B - a OP d`
        moved = _move_baseline(left, op, right)
        if moved is not None:
            return moved
    if _side(left) != _CANDIDATE:
        left, right, op = right, left, _FLIP[op]
    if _side(left) != _CANDIDATE:
        return Shape("exact")
    if _side(right) == _CONST:
        return Shape("absolute", op, left, None, right)
    factor, base = _split_factor(right)
    if base is not None and _side(base) == _BASELINE:
        return Shape("ratio", op, left, base, factor)
    offset, base = _split_offset(right)
    if base is not None and _side(base) == _BASELINE:
        return Shape("difference", op, left, base, offset)
    return Shape("exact")


def _is_term(expr, side: str) -> bool:
    """A single term of one side (`itl`, `p99(baseline.itl)`), not arithmetic."""
    return _side(expr) == side and not (isinstance(expr, ast.BinOp) and expr.op in ("+", "-", "*", "/"))


def _move_baseline(left, op: str, k):
    """The shape of `left OP k` (k constant) when `left` combines one
    candidate term and one baseline term by `/` or `-`, or None."""
    if not (isinstance(left, ast.BinOp) and left.op in ("/", "-")):
        return None
    a, b = left.left, left.right
    if left.op == "/":
        if _is_term(a, _CANDIDATE) and _is_term(b, _BASELINE):  # a / B OP k  <=>  a OP B * k
            return Shape("ratio", op, a, b, k)
        if _is_term(a, _BASELINE) and _is_term(b, _CANDIDATE):  # B / a OP k  <=>  a FLIP(OP) B * (1 / k)
            return Shape("ratio", _FLIP[op], b, a, ast.BinOp("/", ast.Number(1.0), k, span=k.span))
        return None
    if _is_term(a, _CANDIDATE) and _is_term(b, _BASELINE):  # a - B OP d  <=>  a OP B + d
        return Shape("difference", op, a, b, k)
    if _is_term(a, _BASELINE) and _is_term(b, _CANDIDATE):  # B - a OP d  <=>  a FLIP(OP) B - d
        return Shape("difference", _FLIP[op], b, a, ast.Neg(k, span=k.span))
    return None


def _split_offset(expr):
    """(offset expression, baseline term) of `B + d`, `d + B`, `B - d`."""
    if isinstance(expr, ast.BinOp) and expr.op == "+":
        if _side(expr.right) == _CONST and _is_term(expr.left, _BASELINE):
            return expr.right, expr.left
        if _side(expr.left) == _CONST and _is_term(expr.right, _BASELINE):
            return expr.left, expr.right
    if isinstance(expr, ast.BinOp) and expr.op == "-" and _side(expr.right) == _CONST and _is_term(expr.left, _BASELINE):
        return ast.Neg(expr.right, span=expr.right.span), expr.left
    return None, None


def _split_factor(expr):
    """(factor expression or None, baseline term) of `B`, `B * k`, `k * B`, `B / d`."""
    if _is_term(expr, _BASELINE):
        return None, expr
    if isinstance(expr, ast.BinOp) and expr.op == "*":
        if _side(expr.right) == _CONST and _is_term(expr.left, _BASELINE):
            return expr.right, expr.left
        if _side(expr.left) == _CONST and _is_term(expr.right, _BASELINE):
            return expr.left, expr.right
    if isinstance(expr, ast.BinOp) and expr.op == "/" and _side(expr.right) == _CONST and _is_term(expr.left, _BASELINE):
        return ast.BinOp("/", ast.Number(1.0), expr.right), expr.left
    return None, None


def time_unit(e) -> str | None:
    """The time unit (`ms`, `s`) of a measured term (`p99(ttft)`: ms,
    `duration`: s, `itl - baseline.itl`: ms), or None: not a time, or not
    known (a metric of the user's own script)."""
    from specdsl.model.metrics import METRICS, is_function

    if isinstance(e, ast.Call) and e.args:
        return time_unit(e.args[0]) if is_function(e.func) else None
    if isinstance(e, ast.Ref):
        name = e.parts[-1] if e.parts[0] == "baseline" or len(e.parts) == 1 else None
        unit = METRICS.get(name, ("", ""))[1] if name else ""
        return unit if unit in ("ms", "s") else None
    if isinstance(e, ast.Neg):
        return time_unit(e.operand)
    if isinstance(e, ast.BinOp) and e.op in ("+", "-"):
        return time_unit(e.left) or time_unit(e.right)
    if isinstance(e, ast.BinOp) and e.op in ("*", "/"):
        # a time scaled by a plain factor stays a time; a time over a time does not
        left, right = time_unit(e.left), time_unit(e.right)
        if (left and right) or (e.op == "/" and right):
            return None
        return left or right
    return None


def in_seconds(expr):
    """`expr` with each duration (`20s`, `500ms`) as a plain number of
    seconds: what it reads as beside a metric counted in seconds
    (`duration`). Elsewhere durations read in milliseconds."""
    if isinstance(expr, ast.Quantity) and expr.unit in ast.DURATION_UNITS:
        return ast.Number(expr.seconds(), span=expr.span)
    if isinstance(expr, ast.Neg):
        return ast.Neg(in_seconds(expr.operand), span=expr.span)
    if isinstance(expr, ast.BinOp) and expr.op in ("+", "-", "*", "/"):
        return ast.BinOp(expr.op, in_seconds(expr.left), in_seconds(expr.right), span=expr.span)
    return expr


def reads_baseline(expr) -> bool:
    """Whether `expr` reads a `baseline.*` measurement anywhere."""
    return reads_root(expr, "baseline")


def reads_root(expr, root: str) -> bool:
    """Whether `expr` reads a reference `ROOT.*` anywhere (`baseline`, `search`)."""
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, ast.Ref) and e.parts[0] == root:
            return True
        if isinstance(e, ast.BinOp):
            stack.extend((e.left, e.right))
        elif isinstance(e, (ast.Not, ast.Neg)):
            stack.append(e.operand)
        elif isinstance(e, ast.Call):
            stack.extend(e.args)
    return False


def metric_of(term) -> str | None:
    """The metric a candidate term reads (`output_throughput`, `itl` in `p99(itl)`)."""
    if isinstance(term, ast.Call) and term.args:
        return metric_of(term.args[0])
    if isinstance(term, ast.Ref):
        return term.parts[-1]
    return None


_DISTRIBUTIONS = ("ttft", "tpot", "itl", "e2el")


def noise_key(term) -> str | None:
    """The scalar metric whose per-run value tracks `term`, as the client
    names it (`p99(itl)` -> `p99_itl_ms`, bare `itl` -> `median_itl_ms`)."""
    if isinstance(term, ast.Call) and term.args:
        inner = metric_of(term.args[0])
        from specdsl.model.metrics import percentile_of, stat_name

        q = percentile_of(term.func)
        if inner in _DISTRIBUTIONS and (q is not None or term.func in ("median", "mean")):
            func = "median" if q == 50 else stat_name(q) if q is not None else term.func
            return f"{func}_{inner}_ms"
        return inner
    name = metric_of(term)
    return f"median_{name}_ms" if name in _DISTRIBUTIONS else name
