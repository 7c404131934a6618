"""The load generator against the instant-server test double (a real
process, real HTTP): timing, load shapes, records, token counts.

Times have a floor, the double's own schedule, and no fixed ceiling: on a
shared 2-core machine a ceiling of a few ms would fail on load alone. What
may come on top of the schedule is bounded by what the client measured of
its own lateness in the same run (`loop_lag_max_ms`, specdsl.bench.monitor:
a loaded machine stamps late, and says so), plus a few ms."""

from __future__ import annotations

import asyncio
import json
import statistics

import pytest

from specdsl.bench import BenchError, run_benchmark
from specdsl.bench.loadgen import arrival_offsets, endpoint_url
from specdsl.bench.timings import read_records
from specdsl.bench.stats import compute_metrics
from specdsl.model.config import Workload


def lag_ms(client: dict) -> float:
    """How late the client's event loop ran timers at worst in the run (its own figure)."""
    return max(w.get("loop_lag_max_ms", 0.0) for w in client.get("workers", [client]))


def wl(**kw) -> Workload:
    base = dict(name="t", input_len=8, output_len=8, requests=20, concurrency=4, warmup=0, timeout=10.0)
    base.update(kw)
    return Workload(**base)


def test_closed_loop_completes_every_request_and_keeps_records(instant_server, tmp_path):
    result = run_benchmark(wl(runs=2, warmup=2), instant_server, "instant", tmp_path)
    assert [r.index for r in result.runs] == [0, 1]
    for run in result.runs:
        m = run.metrics
        assert m["completed"] == 20 and m["failed"] == 0
        assert m["total_output_tokens"] == 20 * 8  # from the server's usage
        header, records = read_records(run.records_file)
        assert header["run"] == run.index and len(records) == 20
        assert all(r.tokens_from == "usage" and len(r.chunks_s) == 8 for r in records)
        again, samples, _ = compute_metrics(records, header["duration_s"])
        assert again == pytest.approx(m, rel=1e-6)
        assert len(run.samples["ttft"]) == 20 and len(run.samples["itl"]) == 20 * 7
    saved = json.loads((tmp_path / "result.json").read_text())
    assert saved["format_version"] == 1 and len(saved["runs"]) == 2


def test_measured_latencies_match_a_server_with_known_timing(instant_server, tmp_path):
    result = run_benchmark(wl(requests=6, concurrency=3, output_len=6), instant_server, "timed:60:15", tmp_path)
    m = result.runs[0].metrics
    slack = 5 + lag_ms(result.runs[0].client)  # ms: what the run's own lag allows on top of the schedule
    assert 60 <= m["median_ttft_ms"] < 60 + 2 * slack, slack
    assert 14.5 <= m["median_itl_ms"] < 15 + slack, slack
    assert 14.5 <= m["median_tpot_ms"] < 15 + slack, slack
    assert 60 + 5 * 15 <= m["median_e2el_ms"] < 60 + 5 * 15 + 6 * slack, slack
    # closed loop, 3 streams, 6 requests of ~135 ms: two waves
    assert 0.26 <= m["duration"] < 0.27 + 12 * slack / 1000, slack


def test_concurrency_bounds_streams_in_flight(instant_server, tmp_path):
    result = run_benchmark(wl(requests=8, concurrency=2, output_len=3), instant_server, "timed:50:1", tmp_path)
    _, records = read_records(result.runs[0].records_file)
    starts = sorted(r.start_s for r in records)
    # with 2 streams of ~52 ms each, requests leave in 4 waves of 2: the two
    # of a wave within what the loop's lateness allows, the waves 50 ms apart
    waves = [starts[k + 1] - starts[k] for k in range(0, 8, 2)]
    assert max(waves) < (5 + 2 * lag_ms(result.runs[0].client)) / 1000, (waves, result.runs[0].client)
    assert starts[2] - starts[0] >= 0.05 and starts[6] - starts[0] >= 0.15


def test_arrival_offsets_are_seeded_and_end_at_n_over_rate():
    a = arrival_offsets(100, rate=50.0, burstiness=1.0, seed=3)
    assert a == arrival_offsets(100, rate=50.0, burstiness=1.0, seed=3)
    assert a != arrival_offsets(100, rate=50.0, burstiness=1.0, seed=4)
    assert a[-1] == pytest.approx(2.0)
    assert all(x < y for x, y in zip(a, a[1:]))
    gaps = [y - x for x, y in zip(a, a[1:])]
    smooth = arrival_offsets(100, rate=50.0, burstiness=50.0, seed=3)
    smooth_gaps = [y - x for x, y in zip(smooth, smooth[1:])]
    # higher burstiness factor: more regular arrivals
    assert statistics.pstdev(smooth_gaps) < statistics.pstdev(gaps) / 3
    with pytest.raises(BenchError):
        arrival_offsets(3, rate=0.0, burstiness=1.0, seed=0)


def test_open_loop_sends_on_the_seeded_schedule(instant_server, tmp_path):
    w = wl(requests=40, rate=100.0, seed=5)
    result = run_benchmark(w, instant_server, "instant", tmp_path)
    _, records = read_records(result.runs[0].records_file)
    planned = arrival_offsets(40, 100.0, 1.0, 5)
    client = result.runs[0].client
    # a stall of the loop delays the requests due during it, and the backlog
    # it leaves delays them by about as much again: twice the worst lag
    slack_s = (5 + 2 * lag_ms(client)) / 1000
    late = [rec.start_s - planned[rec.i] for rec in records]
    assert min(late) >= -0.001  # never early
    assert max(late) < slack_s, (max(late), slack_s, client)
    assert client["late_max_ms"] == pytest.approx(max(0.0, max(late)) * 1000, abs=0.01)  # and the run says how late
    assert planned[-1] <= result.runs[0].metrics["duration"] < planned[-1] + 0.05 + slack_s


def test_open_loop_does_not_wait_for_slow_requests(instant_server, tmp_path):
    # 20 requests at 100/s against 300 ms requests: all in flight together
    w = wl(requests=20, rate=100.0, concurrency=1, output_len=2)
    result = run_benchmark(w, instant_server, "timed:300:1", tmp_path)
    # the last leaves at 0.2 s and takes 0.3 s; waiting for each would take 20 x 0.3 s
    slack_s = (5 + lag_ms(result.runs[0].client)) / 1000
    assert 0.3 + 0.19 <= result.runs[0].metrics["duration"] < 0.3 + 0.2 + 10 * slack_s


def test_endpoint_url_accepts_base_with_or_without_v1():
    assert endpoint_url("http://h:1", "completions") == "http://h:1/v1/completions"
    assert endpoint_url("http://h:1/v1/", "chat") == "http://h:1/v1/chat/completions"
    with pytest.raises(BenchError):
        endpoint_url("http://h:1", "embeddings")


def test_invalid_workload_is_an_error_before_any_request(tmp_path):
    with pytest.raises(BenchError, match="requests must be at least 1.*concurrency"):
        run_benchmark(wl(requests=0, concurrency=0), "http://127.0.0.1:9", "m", tmp_path)


def test_stop_event_ends_a_benchmark_promptly(instant_server, tmp_path):
    import threading
    import time

    stop = threading.Event()
    threading.Timer(0.2, stop.set).start()
    t = time.monotonic()
    with pytest.raises(BenchError, match="stopped"):
        run_benchmark(wl(requests=4, timeout=30), instant_server, "hang", tmp_path, stop=stop)
    assert time.monotonic() - t < 2.0


def test_callable_from_inside_a_running_event_loop(instant_server, tmp_path):
    async def inside():
        return run_benchmark(wl(requests=3), instant_server, "instant", tmp_path)

    result = asyncio.run(inside())
    assert result.runs[0].metrics["completed"] == 3


def test_progress_reports_each_run(instant_server, tmp_path):
    seen: list[str] = []
    run_benchmark(wl(requests=2, runs=2, warmup=1, cooldown=0.05), instant_server, "instant", tmp_path, progress=seen.append)
    assert seen[0].startswith("warmup") and sum("completed" in s for s in seen) == 2
