"""Diagnose and bisect: why a candidate differs from its baseline.

`compare(state, baseline_run, candidate_run, ...)` reads what state and the
run folders recorded of two arms (effective configuration, server args,
stack and resolved versions, environment, host, workload, log warnings)
and returns a `Diagnosis`: the differences, ranked by the engine adapters'
rule (docs/diagnose.md). `bisect` finds, by experiment, the smallest set of
differences that reproduces a regression.

Above `apply` (bisect runs experiments through `apply_plan`), below `cli`:
it must not import `specdsl.cli`, and it prints nothing.
"""

from specdsl.diagnose.compare import compare, compare_arms
from specdsl.diagnose.locate import DiagnoseError, Sides, side_of, sides_from_state, sides_of
from specdsl.diagnose.model import CATEGORIES, Diagnosis, Difference

__all__ = [
    "CATEGORIES", "DiagnoseError", "Diagnosis", "Difference", "Sides", "compare", "compare_arms", "side_of",
    "sides_from_state", "sides_of",
]
