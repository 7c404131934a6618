"""Verdicts: the statistics that turn repeated, noisy measurements into
PASS, FAIL, INCONCLUSIVE or ERROR, with the interval, level, sample size
and detectable effect behind each.

- `Verdict`: one assertion's verdict (its `Status`, its line, and the
  `Decision` behind a gating one), the one type apply decides, state
  records and plan, history and report read (verdict/record.py);
- `ratio_decision`: `cand OP base * k` from pairs of adjacent A/B blocks
  (a one-sided paired t interval on the log ratios);
- `absolute_decision`: `STAT OP threshold` from one value per run;
- `LookSchedule`, `sequential_decision`: looks at the pairs as they come
  (adaptive runs) with the false-pass budget spent across the looks;
- `holm`: Holm's step-down over several assertions;
- `mde_ratio`, `pairs_needed`, `noise_of`: how many pairs a noise level
  needs, what n pairs can detect;
- `outliers`, `describe_outliers`: runs far from the others of their arm
  (a robust rule on the log scale, see verdict/outliers.py);
- `variance_components`, `runs_per_launch`: launch and run noise apart
  (one-way random-effects ANOVA), and the runs per launch that buy the most
  precision for the time (verdict/components.py).

docs/verdicts.md gives the method, its formulas and why; the measured
error rates are in docs/benchmarks.md (benchmarks/bench_verdicts.py).

Pure: no I/O, no clock, no randomness. It imports nothing of specdsl but
`specdsl.stats` and `specdsl.diag` (a layer of its own at the bottom of the
planning side: apply calls it, it never calls apply, state or anything that
runs), and outside the standard library only attrs and scipy (with its
numpy), which are imported on first use so that `validate` and `plan` never
pay for them.
"""

from specdsl.verdict.components import VarianceComponents, runs_per_launch, variance_components
from specdsl.verdict.decision import (
    OPS,
    Decision,
    Status,
    absolute_decision,
    mde_ratio,
    noise_of,
    pairs_needed,
    ratio_decision,
)
from specdsl.verdict.holm import HolmResult, holm, holm_adjusted, holm_alphas
from specdsl.verdict.looks import (
    SPENDINGS,
    LookSchedule,
    group_sequential_bounds,
    sequential_decision,
    spent,
    t_sequential_levels,
)
from specdsl.verdict.outliers import describe as describe_outliers
from specdsl.verdict.outliers import outliers
from specdsl.verdict.record import Verdict

__all__ = [
    "OPS",
    "SPENDINGS",
    "Decision",
    "HolmResult",
    "LookSchedule",
    "VarianceComponents",
    "Status",
    "absolute_decision",
    "describe_outliers",
    "group_sequential_bounds",
    "holm",
    "holm_adjusted",
    "holm_alphas",
    "mde_ratio",
    "noise_of",
    "outliers",
    "pairs_needed",
    "ratio_decision",
    "runs_per_launch",
    "sequential_decision",
    "spent",
    "t_sequential_levels",
    "variance_components",
]
