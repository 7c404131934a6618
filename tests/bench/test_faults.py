"""Bad servers: every fault is a failed request with a reason, never a
crash; a run where everything failed is a BenchError listing the reasons."""

from __future__ import annotations

import time

import pytest

from specdsl.bench import BenchError, run_benchmark
from specdsl.model.config import Workload


def wl(**kw) -> Workload:
    base = dict(name="t", input_len=4, output_len=4, requests=3, concurrency=3, warmup=0, timeout=10.0)
    base.update(kw)
    return Workload(**base)


@pytest.mark.parametrize(
    "model, reason",
    [
        ("status:429", "http 429: "),
        ("status:503", "http 503: "),
        ("status:422", "test double says no"),
        ("truncated", "truncated stream"),
        ("nonjson", "non-JSON chunk"),
        ("empty", "empty stream"),
        ("error", "error in stream: test double failed"),
        ("close", "server disconnected"),
    ],
)
def test_all_failed_run_raises_with_reason_and_count(instant_server, tmp_path, model, reason):
    with pytest.raises(BenchError) as info:
        run_benchmark(wl(), instant_server, model, tmp_path)
    message = str(info.value)
    assert "all 3 requests" in message and reason in message and "x3" in message
    # the records of the failed run are kept for a post-mortem
    assert (tmp_path / "run-0.requests.jsonl").exists()


def test_hanging_server_times_out_per_request(instant_server, tmp_path):
    t = time.monotonic()
    with pytest.raises(BenchError, match=r"timeout after 0.5s x3"):
        run_benchmark(wl(timeout=0.5), instant_server, "hang", tmp_path)
    assert time.monotonic() - t < 3


def test_unreachable_server_is_a_bench_error(tmp_path):
    with pytest.raises(BenchError, match="cannot connect"):
        run_benchmark(wl(), "http://127.0.0.1:9", "m", tmp_path)


def test_warmup_failing_stops_before_the_runs(instant_server, tmp_path):
    # (warmup 2 below the concurrency 3: raised to one full wave of 3)
    with pytest.raises(BenchError, match=r"warmup: all 3 requests .* failed: http 503"):
        run_benchmark(wl(warmup=2, concurrency=3), instant_server, "status:503", tmp_path)
    assert not (tmp_path / "run-0.requests.jsonl").exists()


def test_some_failures_are_counted_not_fatal(instant_server, tmp_path):
    result = run_benchmark(wl(requests=10, concurrency=1), instant_server, "flaky", tmp_path)
    run = result.runs[0]
    assert run.metrics["completed"] == 5 and run.metrics["failed"] == 5
    assert list(run.failures) == [next(iter(run.failures))] and next(iter(run.failures)).startswith("http 503")
    assert sum(run.failures.values()) == 5
    assert run.metrics["request_throughput"] > 0
