"""Which assertion terms are a statistic *of per-run values* (pure: the
model's vocabulary only; the verdict is specdsl.verdict.per_run).

A scalar metric has one value per run (`output_throughput`, `duration`,
`spec_accept_rate`, a metric of the workload's own script). `stddev`,
`min`, `max`, `p50`/`median`, `p90` and `p99` applied to one name that
quantity of the run-to-run distribution (`stddev(output_throughput)`: how
much the throughput varies from run to run) and are decided with their own
interval; `mean(x)` and a bare `x` are the mean of runs (a t interval). A
function of a distribution metric (`p99(itl)`) is that statistic of each
run's requests, and the verdict the mean of it over runs.
"""

from __future__ import annotations

from specdsl.model import ast
from specdsl.model.metrics import DISTRIBUTIONS, percentile_of

FUNCTIONS = ("stddev", "min", "max", "p50", "median", "p90", "p99")


def per_run_term(term) -> tuple[str, str] | None:
    """(function, metric) when `term` is a FUNCTIONS call on a scalar
    metric (the candidate's or the baseline's), else None."""
    if not (isinstance(term, ast.Call) and (term.func in FUNCTIONS or percentile_of(term.func)) and len(term.args) == 1):
        return None
    ref = term.args[0]
    if not isinstance(ref, ast.Ref):
        return None
    parts = ref.parts
    if parts[0] == "baseline" and len(parts) == 2:
        name = parts[1]
    elif len(parts) == 1 and parts[0] not in ("var", "matrix", "effective"):
        name = parts[0]
    else:
        return None
    if name in DISTRIBUTIONS:
        return None
    return term.func, name
