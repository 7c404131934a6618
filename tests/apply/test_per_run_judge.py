"""judge reads a statistic of per-run values with its own interval
(specdsl.apply.per_run) and reads `failed`/`completed` over every run, the
invalid ones included (specdsl.apply.counts.every_run); issue 34."""

from __future__ import annotations

from specdsl.apply import checks, counts
from specdsl.apply.judge import Measured, decide
from specdsl.model import ast
from specdsl.model.build import parse


def _expr(text: str):
    file, diags = parse(f'experiment "e" {{\n  assert "a" {{ {text} }}\n}}\n', "x.spec")
    assert not diags, diags
    return next(item for item in file.statements[0].body if isinstance(item, ast.Assert)).expr


def _runs(*values, metric="output_throughput"):
    return Measured(None, None, candidate_runs=tuple(checks.Results(({metric: float(v)},), {}, {}) for v in values))


def test_stddev_of_runs_reads_the_spread_across_runs():
    wide = decide("steady", _expr("stddev(output_throughput) <= 5"), _runs(100, 150, 60, 120, 80), {}, alpha=0.05)
    assert wide.status == "fail" and wide.gating and wide.decision.statistic == "stddev"
    assert wide.decision.estimate > 30 and "sd of runs" in wide.detail and "chi-square" in wide.detail
    steady = decide("steady", _expr("stddev(output_throughput) <= 20"), _runs(1000, 1010, 990, 1005, 995), {}, alpha=0.05)
    assert steady.status == "pass"


def test_min_of_runs_is_not_the_mean_and_names_the_run():
    d = decide("floor", _expr("min(output_throughput) >= 50"), _runs(100, 100, 10), {}, alpha=0.05)
    assert d.status == "fail" and "run 2: 10" in d.detail  # labels as counts name runs: from 0


def test_mean_stays_a_t_interval_and_a_distribution_function_stays_per_run():
    d = decide("m", _expr("mean(output_throughput) >= 50"), _runs(100, 100, 10), {}, alpha=0.05)
    assert d.decision.statistic == "mean" and "t on the mean of runs" in d.detail


def test_failed_reads_every_run_when_given_them_and_says_which_were_invalid():
    valid_only = _runs(0, 0, metric="failed")  # the valid runs: no failure there
    every = (("run 0 (invalid: 2 of 20 requests failed (max_failed 0))", {"failed": 2.0}), ("run 1", {"failed": 0.0}))
    measured = Measured(valid_only.mine, None, candidate_runs=valid_only.candidate_runs, every_run=every)
    d = decide("none-failed", _expr("failed == 0"), measured, {}, alpha=0.05)
    assert d.status == "fail"
    assert d.detail == ("not failed == 0 in every one of 2 runs (a count: exact, no interval): "
                        "run 0 (invalid: 2 of 20 requests failed (max_failed 0)): failed = 2")
    # a count other than failed/completed still reads valid runs only
    tokens = decide("t", _expr("total_output_tokens > 0"), _runs(5, 5, metric="total_output_tokens"), {}, alpha=0.05)
    assert "valid runs" in tokens.detail


def test_every_run_of_a_document_paired_or_not():
    doc = {"runs": [{"index": 0, "metrics": {"failed": 2}, "invalid": "2 of 20 requests failed (max_failed 0)"},
                    {"index": 1, "metrics": {"failed": 0}}]}
    assert counts.every_run(doc) == (("run 0 (invalid: 2 of 20 requests failed (max_failed 0))", {"failed": 2.0}),
                                     ("run 1", {"failed": 0.0}))
    paired = dict(doc, pairs=[{"blocks": [{"arm": "A", "runs": [0]}, {"arm": "B", "runs": [1]}]}])
    assert counts.every_run(paired) == (("pair 1 arm B", {"failed": 0.0}),)
    assert counts.every_run(None) == ()


def test_a_per_run_verdict_reads_back_from_state_as_written():
    from pathlib import Path

    import attrs

    from specdsl.state.codec import decode_state, encode_state
    from specdsl.state.model import RunRecord, State
    from specdsl.verdict.per_run import per_run_decision
    from specdsl.verdict.record import Verdict

    for func, values, op, k in (("stddev", [1, 2, 3, 4, 5], "<=", 5), ("min", [100, 100, 10], ">=", 50),
                                ("p90", [1, 2, 3], "<=", 5), ("max", [1, 2, 3], "<=", 10)):
        d = per_run_decision(func, values, op, k)
        v = Verdict("a", d.verdict, d.line(), gating=True, decision=d)
        rec = RunRecord(id="r1", step="check.e.a", identity="x", experiment="e", status="completed",
                        started="2026-01-01T00:00:00Z", finished="2026-01-01T00:00:01Z", verdict=v)
        back = decode_state(encode_state(attrs.evolve(State.new(), runs=(rec,))), Path("state.toml"))
        assert back.runs[0].verdict == v, func
