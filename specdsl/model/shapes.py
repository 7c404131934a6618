"""The shape of an assertion: how its verdict is decided, read from the
expression alone (pure; validate and apply both ask).

- **ratio**: a candidate term against a baseline term times a constant
  (`output_throughput >= baseline.output_throughput * 1.03`,
  `p99(itl) <= p99(baseline.itl) * 1.10`);
- **absolute**: a candidate term against a constant (`p99(itl) <= 50ms`);
- **exact**: anything else (`effective.*`, `var.*`, `failed == 0`, boolean
  logic).

Ratio and absolute assertions are *gating*: decided from measurements with
an interval, corrected together (Holm) per experiment, and the only ones a
promotion can rest on.

The same rule as `specdsl.apply.judge.shape_of` (which decides the
verdicts); `tests/language/test_promotion_rule.py` holds the two to the
same answers.
"""

from __future__ import annotations

from typing import Any

import attrs

from specdsl.model import ast

FLIP = {">=": "<=", ">": "<", "<=": ">=", "<": ">"}
CANDIDATE, BASELINE, CONST, MIXED = "candidate", "baseline", "constant", "mixed"


@attrs.frozen
class Shape:
    kind: str  # "ratio", "absolute" or "exact"
    op: str = ""
    candidate: Any = None  # the candidate's term
    baseline: Any = None  # the baseline's term (ratio)
    k: Any = None  # the constant: a factor (ratio) or the threshold (absolute), an expression


def side(expr) -> str:
    """Which measurements an expression reads."""
    if isinstance(expr, (ast.Number, ast.Quantity, ast.String, ast.Bool)):
        return CONST
    if isinstance(expr, ast.Ref):
        head = expr.parts[0]
        if head in ("var", "matrix"):
            return CONST
        if head == "effective":
            return MIXED
        return BASELINE if head == "baseline" else CANDIDATE
    if isinstance(expr, ast.Call):
        return side(expr.args[0]) if expr.args else MIXED
    if isinstance(expr, ast.Neg):
        return side(expr.operand)
    if isinstance(expr, ast.BinOp) and expr.op in ("+", "-", "*", "/"):
        a, b = side(expr.left), side(expr.right)
        if a == b or b == CONST:
            return a
        return b if a == CONST else MIXED
    return MIXED


def shape_of(expr) -> Shape:
    if not (isinstance(expr, ast.BinOp) and expr.op in FLIP):
        return Shape("exact")
    left, right, op = expr.left, expr.right, expr.op
    if side(left) != CANDIDATE:
        left, right, op = right, left, FLIP[op]
    if side(left) != CANDIDATE:
        return Shape("exact")
    if side(right) == CONST:
        return Shape("absolute", op, left, None, right)
    factor, base = _split_factor(right)
    if base is not None and side(base) == BASELINE:
        return Shape("ratio", op, left, base, factor)
    return Shape("exact")


def is_gating(expr) -> bool:
    """Whether an assertion is gating: its shape is ratio or absolute."""
    return shape_of(expr).kind != "exact"


def _split_factor(expr):
    """(factor expression or None, baseline term) of `B`, `B * k`, `k * B`, `B / d`."""
    if side(expr) == BASELINE and not (isinstance(expr, ast.BinOp) and expr.op in ("*", "/")):
        return None, expr
    if isinstance(expr, ast.BinOp) and expr.op == "*":
        if side(expr.right) == CONST and side(expr.left) == BASELINE:
            return expr.right, expr.left
        if side(expr.left) == CONST and side(expr.right) == BASELINE:
            return expr.left, expr.right
    if isinstance(expr, ast.BinOp) and expr.op == "/" and side(expr.right) == CONST and side(expr.left) == BASELINE:
        return ast.BinOp("/", ast.Number(1.0), expr.right), expr.left
    return None, None
