"""Result values: serialisation round trip, versioning, metric vocabulary."""

from __future__ import annotations

import json

import pytest

from specdsl.bench import METRICS, BenchResult, RunResult


def test_metric_vocabulary_has_scalars_and_distributions():
    for name in ("request_throughput", "output_throughput", "total_token_throughput", "completed", "failed", "duration"):
        assert METRICS[name][0] == "scalar"
    for dist in ("ttft", "tpot", "itl", "e2el"):
        assert METRICS[dist] == ("distribution", "ms")
        for stat in ("mean", "median", "std", "p50", "p90", "p99"):
            assert METRICS[f"{stat}_{dist}_ms"] == ("scalar", "ms")
    assert METRICS["output_throughput"][1] == "tok/s"
    assert METRICS["request_throughput"][1] == "req/s"


def test_bench_result_round_trips_through_json():
    result = BenchResult(
        runs=(
            RunResult(index=0, metrics={"output_throughput": 12.5, "completed": 3}, samples={"ttft": (1.0, 2.0)}, failures={"http 503": 1}, records_file="r.jsonl"),
            RunResult(index=1, metrics={"output_throughput": 13}, prompts={"fresh": True, "seed": 0, "run": 1},
                      cache_reset="not offered", server={"metrics": "read", "counters": {"spec_drafts": 4.0}},
                      client={"busy": 0.2}, warnings=("client-bound: x",)),
        ),
        settings={"endpoint": "completions", "temperature": None},
    )
    data = json.loads(json.dumps(result.to_json()))
    assert data["format_version"] == 1
    assert BenchResult.from_json(data) == result


def test_unknown_format_version_is_refused():
    with pytest.raises(ValueError, match="format_version"):
        BenchResult.from_json({"format_version": 99, "runs": []})


def test_results_written_before_the_run_records_still_read():
    old = {"format_version": 1, "runs": [{"index": 0, "metrics": {"completed": 1}, "samples": {}, "failures": {}, "records_file": ""}]}
    result = BenchResult.from_json(old)
    assert result.settings == {} and result.runs[0].prompts == {} and result.runs[0].warnings == ()
    assert result.to_json() == old  # nothing added that was not recorded
