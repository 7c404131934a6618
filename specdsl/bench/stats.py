"""Metrics from request records, defined as `vllm bench serve` defines them
(vllm/benchmarks/serve.py, `calculate_metrics`):

- request_throughput = completed / duration; output_throughput = sum of
  output tokens of completed requests / duration; total_token_throughput =
  (input + output tokens) / duration. `duration` runs from the start of the
  run to the end of its last request.
- A run of `duration` (a closed loop for a time, `window_s`) is read over
  its window instead, the first `window_s` seconds: each completed request
  counts by the share of its chunks that arrived inside it (output tokens,
  the request itself, a good request), its input tokens when its first
  chunk did, all over `window_s`. What is in flight when the window closes
  still ends and its latencies count, but the drain after it does not
  divide the throughput: with requests of one length a closed loop moves in
  waves, and on the H200 a run whose last wave began just before the window
  closed waited 1.3 s for two requests alone, reading 12% below the runs
  of the same launch whose window closed between waves (docs/gpu-run.md).
- ttft: send -> first chunk with non-empty `choices`; e2el: send -> last such
  chunk; itl: gaps between consecutive such chunks, pooled over requests;
  tpot: (e2el - ttft) / (output_tokens - 1), only for requests with more
  than one output token.
- mean, median, std (population, ddof=0) and percentiles with linear
  interpolation between closest ranks (numpy's default method), as defined
  in `specdsl.stats`.

One deliberate difference: a distribution with no samples (every request
produced a single token, so no tpot) gives no statistics at all, where vLLM
reports 0. Missing data must not pass an assertion.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from specdsl import stats
from specdsl.bench.timings import RequestTiming
from specdsl.bench.results import DISTRIBUTIONS
from specdsl.model.metrics import STATS, percentile_of, stat_name


def summarize(values: Sequence[float]) -> dict[str, float]:
    """mean, median, std (population) and the percentiles of STATS (p50, p90,
    p95, p99, p99.9) of the values, as vLLM's np.mean, np.median, np.std and
    np.percentile (specdsl.stats)."""
    if not values:
        return {}
    qs = [percentile_of(s) for s in STATS if percentile_of(s) is not None]
    out = {"mean": stats.mean(values), "median": stats.median(values), "std": stats.pstdev(values)}
    out.update({stat_name(q): v for q, v in zip(qs, stats.percentiles(values, qs))})
    return out


def request_samples(records: Sequence[RequestTiming]) -> dict[str, list[float]]:
    """Per-request ttft, tpot, e2el and pooled per-chunk itl, in ms, of the
    completed requests, in request order."""
    out: dict[str, list[float]] = {d: [] for d in DISTRIBUTIONS}
    for rec in sorted(records, key=lambda r: r.i):
        if not rec.ok or not rec.chunks_s:
            continue
        ttft = rec.chunks_s[0]
        e2el = rec.chunks_s[-1]
        out["ttft"].append(ttft * 1000.0)
        out["e2el"].append(e2el * 1000.0)
        if rec.output_tokens > 1:
            out["tpot"].append((e2el - ttft) / (rec.output_tokens - 1) * 1000.0)
        chunks = rec.chunks_s
        out["itl"].extend((chunks[k] - chunks[k - 1]) * 1000.0 for k in range(1, len(chunks)))
    return out


def good_requests(records: Sequence[RequestTiming], slo: Sequence[tuple[str, float]]) -> int:
    """How many requests meet every bound of `slo` ((metric, ms) of ttft,
    tpot, e2el), vLLM's goodput: a completed request is good when each of
    its SLO metrics is at most its bound. A request of one output token has
    no tpot and counts as meeting a tpot bound (vLLM reads its tpot as 0);
    a failed request is never good."""
    good = 0
    for rec in records:
        if not rec.ok or not rec.chunks_s:
            continue
        ttft, e2el = rec.chunks_s[0] * 1000.0, rec.chunks_s[-1] * 1000.0
        tpot = (e2el - ttft) / (rec.output_tokens - 1) if rec.output_tokens > 1 else 0.0
        value = {"ttft": ttft, "tpot": tpot, "e2el": e2el}
        if all(value[name] <= bound for name, bound in slo):
            good += 1
    return good


def window_shares(records: Sequence[RequestTiming], window_s: float) -> list[float]:
    """Per record, the share of its chunks that arrived within `window_s`
    of the run's start (0 for a failed request or one without chunks)."""
    shares = []
    for rec in records:
        if not rec.ok or not rec.chunks_s:
            shares.append(0.0)
            continue
        inside = sum(1 for c in rec.chunks_s if rec.start_s + c <= window_s)
        shares.append(inside / len(rec.chunks_s))
    return shares


def compute_metrics(
    records: Sequence[RequestTiming], duration_s: float, slo: Sequence[tuple[str, float]] | None = None,
    window_s: float | None = None,
) -> tuple[dict[str, float], dict[str, list[float]], dict[str, int]]:
    """(metrics, samples in ms, failure reason -> count) of one run; with
    `slo`, its goodput too (`request_goodput`, `goodput_ratio`); with
    `window_s` (a run of `duration`), its throughputs over that window."""
    completed = [r for r in records if r.ok]
    failures = Counter(r.reason or "unknown" for r in records if not r.ok)
    total_in = sum(r.prompt_tokens for r in completed)
    total_out = sum(r.output_tokens for r in completed)
    metrics: dict[str, float] = {
        "completed": float(len(completed)),
        "failed": float(len(records) - len(completed)),
        "duration": duration_s,
        "total_input_tokens": float(total_in),
        "total_output_tokens": float(total_out),
    }
    if window_s:
        shares = window_shares(records, window_s)
        out_in = sum(r.output_tokens * k for r, k in zip(records, shares))
        in_in = sum(r.prompt_tokens for r in records if r.ok and r.chunks_s and r.start_s + r.chunks_s[0] <= window_s)
        metrics["request_throughput"] = sum(shares) / window_s
        metrics["output_throughput"] = out_in / window_s
        metrics["total_token_throughput"] = (in_in + out_in) / window_s
    elif duration_s > 0:
        metrics["request_throughput"] = len(completed) / duration_s
        metrics["output_throughput"] = total_out / duration_s
        metrics["total_token_throughput"] = (total_in + total_out) / duration_s
    if slo and records:
        good = good_requests(records, slo)
        metrics["goodput_ratio"] = good / len(records)
        if window_s:
            metrics["request_goodput"] = sum(k for r, k in zip(records, window_shares(records, window_s))
                                             if good_requests([r], slo)) / window_s
        elif duration_s > 0:
            metrics["request_goodput"] = good / duration_s
    samples = request_samples(records)
    for dist, values in samples.items():
        for stat, value in summarize(values).items():
            metrics[f"{stat}_{dist}_ms"] = value
    return metrics, samples, dict(failures)
