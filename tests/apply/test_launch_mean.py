"""A paired verdict reads an arm's launch as the mean of its runs
(docs/verdicts.md, "What `runs` means in a paired comparison"), as the
simulations of its error rates model it; a median of a block's runs reads
one run of a launch whose runs trend (issue 33: the story's fix was left
INCONCLUSIVE on a quiet machine by exactly that)."""

from __future__ import annotations

import math
import statistics

from specdsl.apply import checks
from specdsl.apply.judge import Measured, decide, launch_mean
from specdsl.model import ast
from specdsl.model.build import parse

# The story's fix against its baseline as a replay through apply measured them
# (2026-12-04, tok/s, 5 runs of each arm on one launch a pair, side by side):
# every launch's runs rise with the double's drift.
PAIRS = (
    ((54.36, 55.46, 55.82, 57.20, 57.42), (57.21, 58.28, 59.06, 59.54, 60.76)),
    ((59.07, 59.41, 60.86, 61.03, 62.06), (62.16, 62.39, 63.12, 63.90, 64.73)),
    ((63.48, 63.37, 64.80, 64.86, 66.09), (66.48, 66.72, 67.40, 68.54, 69.08)),
)


def _expr(text: str):
    file, diags = parse(f'experiment "e" {{\n  baseline = experiment.b\n  assert "a" {{ {text} }}\n}}\n', "x.spec")
    assert not diags, diags
    return next(item for item in file.statements[0].body if isinstance(item, ast.Assert)).expr


def _block(values):
    return checks.Results(tuple({"output_throughput": v} for v in values), {}, {})


def test_a_launch_reads_as_the_mean_of_its_runs():
    pairs = tuple((_block(a), _block(b)) for a, b in PAIRS)
    got = decide("fix", _expr("output_throughput >= baseline.output_throughput * 1.03"),
                 Measured(None, None, pairs), {}, alpha=0.05)
    by_mean = math.exp(statistics.fmean(math.log(statistics.fmean(b) / statistics.fmean(a)) for a, b in PAIRS))
    by_median = math.exp(statistics.fmean(math.log(statistics.median(b) / statistics.median(a)) for a, b in PAIRS))
    assert abs(by_mean - by_median) > 0.003  # the data tell the two rules apart
    assert math.isclose(got.decision.estimate, by_mean, rel_tol=1e-9)
    # pair log ratios 0.0507, 0.0448, 0.0473 (sd 0.3%): 3.0% is far below the interval
    assert got.status == "pass", got.detail


def test_one_run_blocks_and_samples_are_as_they_were():
    one = _block((50.0,))
    assert launch_mean(one) is one
    pooled = checks.Results(({"x": 1.0, "y": 4.0}, {"x": 3.0}), {"ttft": (1.0, 2.0, 3.0)}, {"k": "v"})
    got = launch_mean(pooled)
    assert got.runs == ({"x": 2.0, "y": 4.0},) and got.samples == pooled.samples and got.effective == pooled.effective


def test_a_difference_and_an_absolute_bound_read_the_mean_too():
    """The one rule for every paired assertion: a difference and an
    absolute bound read each launch as the mean of its runs, as a ratio
    does (a trending launch's median is its middle run)."""
    pairs = tuple((_block(a), _block(b)) for a, b in PAIRS)
    diff = decide("more", _expr("output_throughput >= baseline.output_throughput + 1"),
                  Measured(None, None, pairs), {}, alpha=0.05)
    by_mean = statistics.fmean(statistics.fmean(b) - statistics.fmean(a) for a, b in PAIRS)
    by_median = statistics.fmean(statistics.median(b) - statistics.median(a) for a, b in PAIRS)
    assert abs(by_mean - by_median) > 0.05  # the data tell the two rules apart
    assert math.isclose(diff.decision.estimate, by_mean, rel_tol=1e-9), diff.detail
    floor = decide("floor", _expr("output_throughput >= 50"), Measured(None, None, pairs), {}, alpha=0.05)
    assert math.isclose(floor.decision.estimate, statistics.fmean(statistics.fmean(b) for _, b in PAIRS), rel_tol=1e-9)
