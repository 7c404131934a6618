"""Promotion needs a gating assertion.

An experiment that names a track (`promote = "prod"`) moves the track's
baseline only on verdicts decided from measurements: at least one of its
assertions must be *gating* (`specdsl.model.assert_shape`): a measured term of
the candidate compared with a constant (*absolute*: `p99(itl) <= 50ms`) or
with the baseline's term times a constant (*ratio*:
`output_throughput >= baseline.output_throughput * 1.03`). Those are
decided with an interval over runs or pairs. Anything else (`effective.*`,
`var.*`, `failed == 0`, `and`/`or`/`not` logic) is decided exactly: it can
stop a promotion but never justify one.
"""

from __future__ import annotations

from typing import Sequence

from specdsl.diag import Diagnostic, Span
from specdsl.model.assert_shape import shape_of
from specdsl.model.counts import is_count

EXAMPLE = 'assert "faster" { output_throughput >= baseline.output_throughput * 1.03 }'
EXAMPLE_NO_BASELINE = 'assert "fast" { output_throughput >= 1000 }'


def is_gating(expr) -> bool:
    """Whether an assertion is gating: its shape is ratio or absolute (the
    verdicts' own rule, `specdsl.apply.judge`), and it does not read a count
    (a count is decided exactly, specdsl.model.counts)."""
    return shape_of(expr).kind != "exact" and not is_count(expr)


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
            f"a track moves only on a passed gating assertion (a measured metric against a constant or the baseline): add e.g. `{example}`",
        ))
        return
    names = ", ".join(f"`{a.name}`" for a in asserts)
    diags.append(Diagnostic.error(
        f"Experiment `{experiment}` promotes without a gating assertion",
        span,
        f"{names} {'is' if len(asserts) == 1 else 'are'} decided exactly, not from measurements with an interval; "
        f"add a gating assertion (a measured metric against a constant or the baseline), e.g. `{example}`",
    ))
