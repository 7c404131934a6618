"""The report shows a paired verdict's pairs as the verdict read them: each
arm's launch as the mean of its runs (judge.launch_mean, docs/verdicts.md),
not the median of its block. The blocks here trend within each launch, so
a block's median (its middle run) and its mean differ: a report that read
medians would show other values, and an estimate the interval was not
computed from."""

from __future__ import annotations

import math
import statistics

from specdsl.apply import checks
from specdsl.apply.judge import Measured, decide
from specdsl.model import ast
from specdsl.model.build import parse
from specdsl.report.gather import _pair_values, _points
from specdsl.state import RunRecord

# (baseline runs, candidate runs) of each pair, tok/s: every launch's runs
# rise, the last one most (a median reads the middle run alone)
PAIRS = (
    ((50.0, 51.0, 58.0), (52.0, 53.0, 61.0)),
    ((55.0, 56.0, 49.0), (57.0, 58.5, 66.0)),
    ((53.0, 54.0, 60.0), (55.0, 56.0, 50.0)),
)


def _expr(text: str):
    file, diags = parse(f'experiment "e" {{\n  baseline = experiment.b\n  assert "a" {{ {text} }}\n}}\n', "x.spec")
    assert not diags, diags
    return next(item for item in file.statements[0].body if isinstance(item, ast.Assert)).expr


def _document() -> dict:
    """A paired result.json: every run, and each pair's blocks naming them."""
    runs, pairs, index = [], [], 0
    for p, (a, b) in enumerate(PAIRS):
        blocks = []
        for arm, values in (("A", a), ("B", b)):
            mine = []
            for v in values:
                runs.append({"index": index, "metrics": {"output_throughput": v}})
                mine.append(index)
                index += 1
            blocks.append({"arm": arm, "runs": mine, "launch": 2 * p + (arm == "B")})
        pairs.append({"pair": p, "blocks": blocks})
    return {"runs": runs, "pairs": pairs, "arms": {"A": "b", "B": "e"}}


RUN = RunRecord(id="r1", step="benchmark.e", identity="i", experiment="e", status="completed", started="t")


def test_each_pair_reads_as_the_verdict_does():
    expr = _expr("output_throughput >= baseline.output_throughput * 1.03")
    doc = _document()
    shown = _pair_values(expr, doc, RUN)
    means = [(statistics.fmean(a), statistics.fmean(b)) for a, b in PAIRS]
    medians = [(statistics.median(a), statistics.median(b)) for a, b in PAIRS]
    assert all(abs(m[0] - d[0]) > 1 or abs(m[1] - d[1]) > 1 for m, d in zip(means, medians))  # the data tell them apart
    assert [(v.baseline, v.candidate) for v in shown] == means
    assert [v.value for v in shown] == [b / a for a, b in means]
    assert [(v.pair, v.launch_a, v.launch_b) for v in shown] == [(0, 0, 1), (1, 2, 3), (2, 4, 5)]
    # the interval's points, and the verdict's estimate from the same blocks
    points = _points(expr, doc, RUN, None, None)
    assert points == tuple(v.value for v in shown)
    blocks = tuple((checks.Results(tuple({"output_throughput": x} for x in a), {}, {}),
                    checks.Results(tuple({"output_throughput": x} for x in b), {}, {})) for a, b in PAIRS)
    verdict = decide("faster", expr, Measured(None, None, blocks), {}, alpha=0.05)
    assert math.isclose(verdict.decision.estimate, math.exp(statistics.fmean(math.log(p) for p in points)), rel_tol=1e-12)


def test_an_absolute_bound_reads_each_block_as_the_verdict_does():
    expr = _expr("output_throughput >= 50")
    doc = _document()
    blocks = tuple((checks.Results(tuple({"output_throughput": x} for x in a), {}, {}),
                    checks.Results(tuple({"output_throughput": x} for x in b), {}, {})) for a, b in PAIRS)
    verdict = decide("floor", expr, Measured(None, None, blocks), {}, alpha=0.05)
    points = _points(expr, doc, RUN, None, None)
    assert [v.value for v in _pair_values(expr, doc, RUN)] == list(points)
    assert math.isclose(verdict.decision.estimate, statistics.fmean(points), rel_tol=1e-12)
