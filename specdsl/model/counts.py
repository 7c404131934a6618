"""Which assertions read a count (pure: the model's vocabulary only; the
verdict is specdsl.apply.counts).

A count metric is one whose unit is `count` in specdsl.model.metrics:
`completed`, `failed`, `total_input_tokens`, `total_output_tokens` and the
server's `server_prompt_tokens`, `server_generation_tokens`,
`server_cached_prompt_tokens`. A *count assertion* compares a bare count
with a constant (`failed == 0`, `completed >= 240`, `0 == failed`), or
bounds every run by an extreme (`max(failed) <= 2`, `min(completed) >= 240`).
"""

from __future__ import annotations

import operator

from specdsl.model import ast
from specdsl.model.metrics import METRICS

COUNTS = tuple(sorted(name for name, (_kind, unit) in METRICS.items() if unit == "count"))

OPS = {">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt, "==": operator.eq, "!=": operator.ne}
_FLIP = {">=": "<=", ">": "<", "<=": ">=", "<": ">", "==": "==", "!=": "!="}


# the extreme of a count that bounds every run: `min(completed) >= N` is `completed >= N` in every run
_EVERY_RUN = {"min": (">=", ">"), "max": ("<=", "<")}


def count_shape(expr) -> tuple[str, str, object] | None:
    """(metric, op, constant expression) of `COUNT op CONSTANT` (either
    side), and of `min(COUNT) >= CONSTANT` / `max(COUNT) <= CONSTANT` (the
    same claim of every run), None for anything else."""
    if not (isinstance(expr, ast.BinOp) and expr.op in OPS):
        return None
    for term, other, op in ((expr.left, expr.right, expr.op), (expr.right, expr.left, _FLIP[expr.op])):
        if not _constant(other):
            continue
        if isinstance(term, ast.Call) and op in _EVERY_RUN.get(term.func, ()) and len(term.args) == 1:
            term = term.args[0]
        if isinstance(term, ast.Ref) and len(term.parts) == 1 and term.parts[0] in COUNTS:
            return term.parts[0], op, other
    return None


def _constant(expr) -> bool:
    if isinstance(expr, (ast.Number, ast.Quantity)):
        return True
    if isinstance(expr, ast.Ref):
        return expr.parts[0] in ("var", "matrix")
    if isinstance(expr, ast.Neg):
        return _constant(expr.operand)
    if isinstance(expr, ast.BinOp) and expr.op in ("+", "-", "*", "/"):
        return _constant(expr.left) and _constant(expr.right)
    return False


def is_count(expr) -> bool:
    return count_shape(expr) is not None
