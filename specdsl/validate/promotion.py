"""Promotion needs a gating assertion.

An experiment that names a track (`promote = "prod"`) moves the track's
baseline only on verdicts about measurements: at least one of its
assertions must be *gating*, that is read a measured metric (a metric such
as `output_throughput`, `p99(itl)`, `failed`, a metric of the workload's
own `metric` blocks, or `baseline.METRIC`). An assertion that reads only
the server's effective configuration (`effective.NAME`), `matrix.KEY` or
`var.NAME` says how the server ran, not how well: it can stop a promotion
but never justify one.
"""

from __future__ import annotations

from typing import Sequence

from specdsl.diag import Diagnostic, Span
from specdsl.model import ast

# Reference heads that read something other than a measurement.
NOT_MEASURED = ("effective", "matrix", "var")

EXAMPLE = 'assert "faster" { output_throughput >= baseline.output_throughput * 1.03 }'
EXAMPLE_NO_BASELINE = 'assert "fast" { output_throughput >= 1000 }'


def is_gating(expr: ast.Expr) -> bool:
    """Whether an assertion expression reads a measured metric (of this
    experiment or of its baseline)."""
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, ast.Ref):
            if e.parts and e.parts[0] not in NOT_MEASURED:
                return True
        elif isinstance(e, ast.BinOp):
            stack.extend((e.left, e.right))
        elif isinstance(e, (ast.Not, ast.Neg)):
            stack.append(e.operand)
        elif isinstance(e, ast.Call):
            stack.extend(e.args)
    return False


def check_promotion(experiment: str, span: Span | None, asserts: Sequence, diags: list[Diagnostic],
                    *, has_baseline: bool = True) -> None:
    """An error at `promote = ...` (`span`) when none of `asserts` (items
    with `name` and `expr`) is gating."""
    if any(is_gating(a.expr) for a in asserts):
        return
    example = EXAMPLE if has_baseline else EXAMPLE_NO_BASELINE
    if not asserts:
        diags.append(Diagnostic.error(
            f"Experiment `{experiment}` promotes without any assertion",
            span,
            f"a track moves only on a passed check of a measured metric: add e.g. `{example}`",
        ))
        return
    names = ", ".join(f"`{a.name}`" for a in asserts)
    diags.append(Diagnostic.error(
        f"Experiment `{experiment}` promotes without a gating assertion",
        span,
        f"{names} read{'s' if len(asserts) == 1 else ''} no measured metric (only `effective.*`, `matrix.*` or `var.*`); "
        f"add an assertion on a measurement, e.g. `{example}`",
    ))
