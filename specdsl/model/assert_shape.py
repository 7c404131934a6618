"""The shape of an assertion: what kind of statistical question it asks.

- `ratio`: a candidate term against a baseline term times a constant
  (`output_throughput >= baseline.output_throughput * 1.03`);
- `absolute`: a candidate term against a constant (`p99(itl) <= 50ms`);
- `exact`: anything else (`effective.*`, `var.*`, boolean logic).
Ratio and absolute assertions are *gating*: they are decided with an
interval (specdsl.apply.judge) and a promotion needs one that passed.
"""

from __future__ import annotations

from typing import Any

import attrs

from specdsl.model import ast

_FLIP = {">=": "<=", ">": "<", "<=": ">=", "<": ">"}
_CANDIDATE, _BASELINE, _CONST, _MIXED = "candidate", "baseline", "constant", "mixed"


@attrs.frozen
class Shape:
    kind: str  # "ratio", "absolute" or "exact"
    op: str = ""
    candidate: Any = None  # the candidate's term
    baseline: Any = None  # the baseline's term (ratio)
    k: Any = None  # the constant: a factor (ratio) or the threshold (absolute), an expression


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
    if not (isinstance(expr, ast.BinOp) and expr.op in _FLIP):
        return Shape("exact")
    left, right, op = expr.left, expr.right, expr.op
    if _side(left) != _CANDIDATE:
        left, right, op = right, left, _FLIP[op]
    if _side(left) != _CANDIDATE:
        return Shape("exact")
    if _side(right) == _CONST:
        return Shape("absolute", op, left, None, right)
    factor, base = _split_factor(right)
    if base is not None and _side(base) == _BASELINE:
        return Shape("ratio", op, left, base, factor)
    return Shape("exact")


def _split_factor(expr):
    """(factor expression or None, baseline term) of `B`, `B * k`, `k * B`, `B / d`."""
    if _side(expr) == _BASELINE and not (isinstance(expr, ast.BinOp) and expr.op in ("*", "/")):
        return None, expr
    if isinstance(expr, ast.BinOp) and expr.op == "*":
        if _side(expr.right) == _CONST and _side(expr.left) == _BASELINE:
            return expr.right, expr.left
        if _side(expr.left) == _CONST and _side(expr.right) == _BASELINE:
            return expr.left, expr.right
    if isinstance(expr, ast.BinOp) and expr.op == "/" and _side(expr.right) == _CONST and _side(expr.left) == _BASELINE:
        return ast.BinOp("/", ast.Number(1.0), expr.right), expr.left
    return None, None


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
        if inner in _DISTRIBUTIONS and term.func in ("p50", "p90", "p99", "median", "mean"):
            func = "median" if term.func == "p50" else term.func
            return f"{func}_{inner}_ms"
        return inner
    name = metric_of(term)
    return f"median_{name}_ms" if name in _DISTRIBUTIONS else name
