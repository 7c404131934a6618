"""Metric definitions: the statistics and the per-request derivations of
`vllm bench serve`."""

from __future__ import annotations

import random

import pytest

from specdsl.bench.timings import RequestTiming
from specdsl.bench.stats import compute_metrics, summarize
from specdsl.stats import percentile


def test_percentile_interpolates_linearly_between_closest_ranks():
    values = [1.0, 2.0, 3.0, 4.0]
    assert percentile(values, 0) == 1.0
    assert percentile(values, 100) == 4.0
    assert percentile(values, 50) == 2.5
    assert percentile(values, 90) == pytest.approx(3.7)


def test_summary_matches_numpy_on_random_samples():
    np = pytest.importorskip("numpy")
    rng = random.Random(7)
    for n in (1, 2, 5, 101, 1000):
        values = [rng.expovariate(0.1) for _ in range(n)]
        got = summarize(values)
        assert got["mean"] == pytest.approx(np.mean(values))
        assert got["std"] == pytest.approx(np.std(values))  # population std, as vLLM
        assert got["median"] == pytest.approx(np.median(values))
        for q in (50, 90, 99):
            assert got[f"p{q}"] == pytest.approx(np.percentile(values, q))


def test_empty_distribution_gives_no_statistics_instead_of_zeros():
    assert summarize([]) == {}


def _rec(i, chunks, out, ok=True, reason=None, prompt=10):
    return RequestTiming(i=i, ok=ok, reason=reason, chunks_s=chunks, output_tokens=out, tokens_from="usage", prompt_tokens=prompt)


def test_metrics_follow_vllm_definitions():
    records = [
        _rec(0, [0.1, 0.2, 0.4], 3),  # ttft 100, e2el 400, tpot (0.4-0.1)/2 = 150, itl 100, 200
        _rec(1, [0.2, 0.3], 5),  # more tokens than chunks (usage wins): tpot (0.1)/4 = 25
        _rec(2, [0.05], 1),  # one token: no tpot, no itl
        _rec(3, [], 0, ok=False, reason="http 503"),
    ]
    metrics, samples, failures = compute_metrics(records, duration_s=2.0)
    assert metrics["completed"] == 3 and metrics["failed"] == 1
    assert failures == {"http 503": 1}
    assert metrics["request_throughput"] == pytest.approx(1.5)
    assert metrics["output_throughput"] == pytest.approx((3 + 5 + 1) / 2.0)
    assert metrics["total_token_throughput"] == pytest.approx((30 + 9) / 2.0)
    assert samples["ttft"] == pytest.approx([100.0, 200.0, 50.0])
    assert samples["e2el"] == pytest.approx([400.0, 300.0, 50.0])
    assert samples["tpot"] == pytest.approx([150.0, 25.0])
    assert samples["itl"] == pytest.approx([100.0, 200.0, 100.0])
    assert metrics["median_ttft_ms"] == pytest.approx(100.0)
    assert metrics["mean_tpot_ms"] == pytest.approx(87.5)
    assert metrics["p99_itl_ms"] == pytest.approx(percentile([100.0, 100.0, 200.0], 99))


def test_no_tpot_metrics_when_every_request_had_one_token():
    metrics, _, _ = compute_metrics([_rec(0, [0.01], 1), _rec(1, [0.02], 1)], duration_s=1.0)
    assert "mean_tpot_ms" not in metrics and "p99_itl_ms" not in metrics
    assert metrics["median_ttft_ms"] == pytest.approx(15.0)


def _wave(i, start, chunks, out=4):
    return RequestTiming(i=i, ok=True, start_s=start, chunks_s=chunks, output_tokens=out, tokens_from="usage", prompt_tokens=10)


def test_a_timed_run_reads_its_window_not_its_drain():
    """Two streams in waves of 1 s (4 tokens, 0.25 s apart) over a 2 s
    window: the windowed run whose last wave began just before the window
    closed reads the same as the one whose window closed between waves,
    where reading to the last end (the drain alone) reads it 33% lower, as
    the H200's FLASHINFER runs did (5 waves and 2 stragglers: x0.88)."""
    chunks = [0.25, 0.5, 0.75, 1.0]
    between = [_wave(k, w * 1.0, chunks) for w in range(2) for k in range(2)]  # waves at 0, 1: all inside
    straggling = between + [_wave(4, 1.99, chunks), _wave(5, 1.99, chunks)]  # a third wave begun at 1.99 s
    even, _, _ = compute_metrics(between, duration_s=2.0, window_s=2.0)
    late, _, _ = compute_metrics(straggling, duration_s=2.99, window_s=2.0)
    assert even["output_throughput"] == pytest.approx(16 / 2.0)
    assert late["output_throughput"] == pytest.approx(16 / 2.0)  # the third wave's chunks all came after 2 s
    assert late["request_throughput"] == pytest.approx(4 / 2.0) and late["total_token_throughput"] == pytest.approx(56 / 2.0)
    drained, _, _ = compute_metrics(straggling, duration_s=2.99)
    assert drained["output_throughput"] == pytest.approx(24 / 2.99)  # what the drain reading gave
    assert late["completed"] == 6 and late["median_e2el_ms"] == pytest.approx(1000.0)  # latencies of all that ended
    # a request half inside counts by half: its tokens, itself, and as a good request
    half = [_wave(0, 1.5, chunks, out=8)]
    m, _, _ = compute_metrics(half, duration_s=2.5, slo=[("e2el", 2000.0)], window_s=2.0)
    assert m["output_throughput"] == pytest.approx(4 / 2.0) and m["request_throughput"] == pytest.approx(0.25)
    assert m["request_goodput"] == pytest.approx(0.25) and m["goodput_ratio"] == 1.0
