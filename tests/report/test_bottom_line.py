"""The report's first words and apply's warnings on the page, from
recorded values: both arms' figures, the ratio with its interval, every
verdict and the promotion; each run's warnings named as apply named them,
a message of many runs said once."""

from __future__ import annotations

import math

from specdsl.report.bottom_line import bottom_line
from specdsl.report.gather import CheckView, ExperimentView, RunPoint, run_warnings
from specdsl.report.plots import unit_of
from specdsl.report.release import ReleaseFacts
from specdsl.state import RunRecord
from specdsl.verdict import Decision, Status, Verdict


def _view(**kw) -> ExperimentView:
    run = RunRecord(id="r2", step="benchmark.batched", identity="b", experiment="batched", status="completed",
                    started="t0", finished="t1", metrics={"output_throughput": 1291.0}, runs=4)
    decision = Decision(Status.PASS, 3.527, 3.104, math.inf, 0.95, 4, 1.03, ">=", None, "paired t", "",
                        statistic="ratio", unit="pairs")
    checks = (CheckView("faster", "output_throughput >= baseline.output_throughput * 1.03",
                        Verdict("faster", Status.PASS, "ratio 3.527 [3.104, inf) >= 1.03", gating=True, decision=decision)),
              CheckView("no failures", "failed == 0", Verdict("no failures", Status.PASS, "0 == 0")))
    points = tuple(RunPoint(i, arm, value) for i, (arm, value) in enumerate(
        [("A", 360.0), ("B", 1290.0), ("B", 1292.0), ("A", 372.0), ("A", 366.0), ("B", 1291.0)]))
    base = dict(name="batched", run=run, paired=True, baseline="serial", base_run=None, metric="output_throughput",
                runs=points, arms=(), verdicts=checks, differences=(), failures=())
    base.update(kw)
    return ExperimentView(**base)


def test_the_bottom_line_says_the_figures_the_ratio_the_verdicts_and_the_promotion():
    import attrs

    promo = attrs.evolve(ReleaseFacts(), promotion=("promoted: run r2 became the baseline of track quickstart (t1)", "..."))
    line = bottom_line(_view(release=promo), unit_of)
    assert line == ("batched 1291 tok/s against serial 366 tok/s (output_throughput, the median of each arm's runs, 4 pairs, "
                    "paired); ratio x3.527, 95% interval [3.104, ∞) over 4 pairs, against faster's threshold >= 1.03; "
                    "verdicts: faster PASS, no failures PASS; promoted: run r2 became the baseline of track quickstart (t1).")
    assert bottom_line(_view(run=None), unit_of) == ""
    # measured apart: each benchmark's own median
    base_run = RunRecord(id="r1", step="benchmark.serial", identity="a", experiment="serial", status="completed",
                         started="t0", finished="t1", metrics={"output_throughput": 366.0})
    apart = bottom_line(_view(paired=False, base_run=base_run, verdicts=()), unit_of)
    assert apart == "batched 1291 tok/s against serial 366 tok/s (output_throughput, the median of each benchmark's runs, measured apart)."


def test_run_warnings_are_named_as_apply_names_them_and_said_once():
    doc = {"arms": {"A": "serial", "B": "batched"},
           "pairs": [{"pair": p, "blocks": [{"arm": "A", "runs": [4 * p, 4 * p + 1]}, {"arm": "B", "runs": [4 * p + 2, 4 * p + 3]}]}
                     for p in range(4)],
           "runs": [{"index": i, "warnings": ["no server metrics: unavailable: GET /metrics answered http 404"]
                     + (["cold start: its first run's output_throughput (300) was 20% below the later runs'"] if i == 0 else [])}
                    for i in range(16)]}
    assert run_warnings("batched", doc) == (
        "benchmark.batched: no server metrics: unavailable: GET /metrics answered http 404 "
        "(said by 16 runs: pairs 1-4, arms A (serial) and B (batched))",
        "benchmark.batched pair 1 arm A (serial): run 0: cold start: its first run's output_throughput (300) was 20% below the later runs'",
    )
    alone = {"runs": [{"index": 0, "warnings": ["client-bound: x"]}]}
    assert run_warnings("solo", alone) == ("benchmark.solo: run 0: client-bound: x",)
    assert run_warnings("solo", None) == ()
