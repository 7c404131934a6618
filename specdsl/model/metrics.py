"""The metrics a workload produces and the functions assertions may apply.

Names and definitions follow `vllm bench serve`. Latencies are in
milliseconds, throughputs in tokens or requests per second.

Scalar metrics have one value per run; an assertion reading one bare gets the
median across runs, and a function applied to it works across runs
(`min(output_throughput)`). Distribution metrics have one value per request
(per streamed chunk for `itl`), pooled over all runs; read bare they give
their median, and a function gives that statistic of the pooled values
(`p99(itl)`).
"""

from __future__ import annotations

SCALAR = "scalar"
DISTRIBUTION = "distribution"

DISTRIBUTIONS = {"ttft": "ms", "tpot": "ms", "itl": "ms", "e2el": "ms"}
STATS = ("mean", "median", "std", "p50", "p90", "p99")

_SCALARS = {
    "request_throughput": "req/s",
    "output_throughput": "tok/s",
    "total_token_throughput": "tok/s",
    "completed": "count",
    "failed": "count",
    "total_input_tokens": "count",
    "total_output_tokens": "count",
    "duration": "s",
}

# Read from the server's own Prometheus /metrics before and after each run
# (specdsl/bench/serverside.py); absent from a run whose server does not
# report them. spec_accept_length counts the bonus token (vLLM's definition).
SERVER_METRICS = {
    "spec_accept_length": "tokens",
    "spec_accept_rate": "fraction",
    "prefix_cache_hit_rate": "fraction",
    "server_prompt_tokens": "count",
    "server_generation_tokens": "count",
    "server_cached_prompt_tokens": "count",
}

# name -> (kind, unit)
METRICS: dict[str, tuple[str, str]] = {name: (SCALAR, unit) for name, unit in _SCALARS.items()}
METRICS.update({name: (SCALAR, unit) for name, unit in SERVER_METRICS.items()})
METRICS.update({name: (DISTRIBUTION, unit) for name, unit in DISTRIBUTIONS.items()})
for _d in DISTRIBUTIONS:
    for _s in STATS:
        METRICS[f"{_s}_{_d}_ms"] = (SCALAR, "ms")

FUNCTIONS = ("p50", "p90", "p99", "median", "mean", "min", "max", "stddev")

