"""Assertion semantics on recorded results (no servers needed)."""

import pytest

from specdsl.apply.checks import Results, check
from specdsl.apply.outcome import union_length as _union_length
from specdsl.model.build import parse
from specdsl.verdict import Status

PASS, FAIL, INCONCLUSIVE = Status.PASS, Status.FAIL, Status.INCONCLUSIVE


def expr(text):
    file, diags = parse(f'experiment "x" {{\n  assert "a" {{ {text} }}\n}}\n', "t.spec")
    assert not diags, diags
    return file.statements[0].body[0].expr


MINE = Results(
    runs=({"output_throughput": 90.0}, {"output_throughput": 100.0}, {"output_throughput": 95.0}),
    samples={"itl": tuple(float(i) for i in range(1, 101)), "ttft": (100.0, 300.0)},
    effective={"attention_backend": "flashinfer", "continuous_batching": True},
)
BASE = Results(runs=({"output_throughput": 80.0}, {"output_throughput": 90.0}), samples={"itl": (50.0,) * 10}, effective={})


@pytest.mark.parametrize(
    "text, status",
    [
        ("output_throughput >= baseline.output_throughput * 1.03", PASS),  # median 95 vs 85 * 1.03
        ("output_throughput >= baseline.output_throughput * 1.2", FAIL),
        ("min(output_throughput) == 90", PASS),  # across runs
        ("max(output_throughput) == 100", PASS),
        ("p99(itl) <= 100ms", PASS),  # pooled per-request values, durations in ms
        ("p50(itl) > 50", PASS),
        ("p99(itl) <= p99(baseline.itl) * 1.10", FAIL),
        ("median(ttft) == 200", PASS),
        ("ttft < 0.1s", FAIL),
        ("effective.attention_backend == \"flashinfer\" and effective.continuous_batching", PASS),
        ("not effective.continuous_batching == true", FAIL),
        ("output_throughput > baseline.output_throughput + 10% ", PASS),
    ],
)
def test_verdicts(text, status):
    verdict = check("a", expr(text), MINE, BASE)
    assert verdict.status == status, verdict


def test_missing_data_is_never_a_pass():
    v = check("a", expr("output_throughput >= baseline.output_throughput"), MINE, None)
    assert v.status == INCONCLUSIVE and "baseline has no results" in v.detail
    v = check("a", expr("p99(tpot) < 5"), MINE, BASE)
    assert v.status == INCONCLUSIVE and "tpot" in v.detail
    v = check("a", expr("effective.kv_cache_dtype == \"fp8\""), MINE, BASE)
    assert v.status == INCONCLUSIVE and "kv_cache_dtype" in v.detail


def test_detail_shows_compared_values():
    v = check("a", expr("output_throughput >= baseline.output_throughput * 1.2"), MINE, BASE)
    assert "output_throughput = 95" in v.detail and "baseline.output_throughput = 85" in v.detail


def test_results_from_bench_json_pool_samples_and_runs():
    doc = {"runs": [{"metrics": {"output_throughput": 1.0}, "samples": {"itl": [1, 2]}},
                    {"metrics": {"output_throughput": 3.0}, "samples": {"itl": [3]}}]}
    r = Results.from_bench(doc, {"a": 1})
    assert r.samples["itl"] == (1.0, 2.0, 3.0) and [x["output_throughput"] for x in r.runs] == [1.0, 3.0]


def test_busy_time_is_the_union_of_step_intervals():
    assert _union_length([(0, 2), (1, 3), (5, 6)]) == 4
    assert _union_length([(0, 10), (2, 3)]) == 10
    assert _union_length([]) == 0
