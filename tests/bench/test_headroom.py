"""The client's own headroom per run (specdsl.bench.monitor): the
concurrency its streams achieved against the asked, the rate an open loop
achieved, and which signs make a run invalid (its CPU, its concurrency,
its schedule) or only warn (its timers late)."""

from __future__ import annotations

from specdsl.bench.monitor import achieved_concurrency, achieved_rate, client_limits, lag_warnings

IDLE = {"cpu_s": 0.1, "wall_s": 1.0, "busy": 0.1, "loop_lag_p50_ms": 0.5, "loop_lag_p90_ms": 1.0}


def closed(streams: int, requests_each: int, length: float, gap: float) -> list[tuple[float, float]]:
    """(send, end) of `streams` streams, each sending its next request
    `gap` s after its previous one ended."""
    out = []
    for _ in range(streams):
        t = 0.0
        for _ in range(requests_each):
            out.append((t, t + length))
            t += length + gap
    return out


def test_streams_without_gaps_hold_the_asked_concurrency():
    got = achieved_concurrency(closed(4, 10, 0.2, 0.0), 4)
    assert got == {"achieved_concurrency": 4.0, "asked_concurrency": 4, "window_s": 1.8}


def test_gaps_between_a_streams_requests_lower_it():
    got = achieved_concurrency(closed(4, 10, 0.18, 0.02), 4)  # 10% of each stream's time between requests
    assert abs(got["achieved_concurrency"] - 3.6) < 0.05
    assert client_limits(IDLE | got, {}) == []  # 90%: at the limit
    slow = achieved_concurrency(closed(4, 10, 0.16, 0.04), 4)
    [why] = client_limits(IDLE | slow, {})
    assert why.startswith("client-bound: 3.2") and "of the 4 streams asked (limit 90%, over 1.80 s" in why
    short = achieved_concurrency(closed(4, 10, 0.04, 0.01), 4)  # the same share over 0.45 s: recorded, not judged
    assert short["achieved_concurrency"] < 3.6 and client_limits(IDLE | short, {}) == []


def test_a_run_by_time_is_read_to_its_end_and_a_single_wave_gives_nothing():
    # one stream, busy until 0.5 s, the run lasting 1 s: half
    got = achieved_concurrency([(0.0, 0.25), (0.25, 0.5)], 1, until_s=1.0)
    assert got["achieved_concurrency"] == 0.5 and got["window_s"] == 1.0
    assert achieved_concurrency([(0.0, 0.1)] * 4, 4) == {}  # one wave: all sent at once
    assert achieved_concurrency([(0.0, 0.0)] * 8, 4) == {}  # records without ends (written before they were kept)


def test_an_open_loops_rate_and_its_lateness():
    assert achieved_rate([0.0, 0.1, 0.2, 0.4], 10.0) == {"achieved_rate": 10.0, "asked_rate": 10.0}
    assert achieved_rate([0.0], 10.0) == {}
    late = IDLE | {"late_p90_ms": 12.0, "late_max_ms": 30.0}
    [why] = client_limits(late, {})
    assert "after their scheduled time" in why


def test_cpu_invalidates_timer_lag_only_warns():
    busy = IDLE | {"cpu_s": 0.9, "busy": 0.9}
    assert client_limits(busy, {})[0].startswith("client-bound: the client's event loop was busy 90% of the run")
    lagging = IDLE | {"loop_lag_p50_ms": 2.5}
    assert client_limits(lagging, {"median_itl_ms": 10.0}) == []
    [warning] = lag_warnings(lagging, {"median_itl_ms": 10.0})
    assert warning.startswith("client-bound: the client's event loop ran timers 2.50 ms late")
    assert lag_warnings(lagging, {"median_itl_ms": 40.0}) == []  # under a tenth of a 40 ms ITL


def test_worker_processes_each_and_their_concurrency_together():
    calm, busy = IDLE | {"pid": 1}, IDLE | {"pid": 2, "busy": 0.95, "cpu_s": 0.95, "loop_lag_p50_ms": 3.0}
    client = {"workers": [calm, busy], "achieved_concurrency": 5.0, "asked_concurrency": 8, "window_s": 1.0}
    signs = client_limits(client, {"median_itl_ms": 10.0})
    assert signs[0].startswith("client-bound: client process 2 of 2 (pid 2): the client's event loop was busy 95%")
    assert signs[1].startswith("client-bound: 5.00 requests were in flight on average of the 8 streams asked")
    assert len(signs) == 2
    [lag] = lag_warnings(client, {"median_itl_ms": 10.0})
    assert lag.startswith("client-bound: client process 2 of 2 (pid 2): the client's event loop ran timers 3.00 ms late")
