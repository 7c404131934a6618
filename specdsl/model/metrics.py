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

import re

from specdsl.stats import percentile_of  # noqa: F401  (re-exported: `p99.9` -> 99.9)

SCALAR = "scalar"
DISTRIBUTION = "distribution"

DISTRIBUTIONS = {"ttft": "ms", "tpot": "ms", "itl": "ms", "e2el": "ms"}
# recorded in every run's metrics (`p99.9_itl_ms`, vLLM's naming); any other
# percentile an assertion names (`p97.5(ttft)`) is computed from the samples
STATS = ("mean", "median", "std", "p50", "p90", "p95", "p99", "p99.9")

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

# Goodput (vLLM's `--goodput`): with the workload's `slo = { ttft = 200ms,
# tpot = 50ms }` a completed request is *good* when every metric the SLO
# names is within its bound (<=); request_goodput = good requests / duration
# (req/s, vLLM's `request_goodput`), goodput_ratio = good / requests sent
# (failed ones are never good). Recorded only for a workload with an `slo`.
SLO_METRICS = ("ttft", "tpot", "e2el")
GOODPUT_METRICS = {"request_goodput": "req/s", "goodput_ratio": "fraction"}

# name -> (kind, unit)
METRICS: dict[str, tuple[str, str]] = {name: (SCALAR, unit) for name, unit in _SCALARS.items()}
METRICS.update({name: (SCALAR, unit) for name, unit in SERVER_METRICS.items()})
METRICS.update({name: (SCALAR, unit) for name, unit in GOODPUT_METRICS.items()})
METRICS.update({name: (DISTRIBUTION, unit) for name, unit in DISTRIBUTIONS.items()})
for _d in DISTRIBUTIONS:
    for _s in STATS:
        METRICS[f"{_s}_{_d}_ms"] = (SCALAR, "ms")

FUNCTIONS = ("p50", "p90", "p99", "median", "mean", "min", "max", "stddev")


def percentile_problem(func: str) -> tuple[str, str] | None:
    """(message, hint) for a `pNN` name out of range (`p0`, `p100.5`), else None."""
    m = re.fullmatch(r"p(\d+(?:\.\d+)?)", func)
    if not m or percentile_of(func) is not None:
        return None
    q = float(m.group(1))
    hint = "use `min(...)`" if q == 0 else "use `max(...)`" if q == 100 else "write one such as p95 or p99.9"
    return (f"`{func}` is not a percentile: a percentile is above 0 and below 100", hint)


def is_function(func: str) -> bool:
    """A name assertions may call: FUNCTIONS, or any percentile `pNN`."""
    return func in FUNCTIONS or percentile_of(func) is not None


def stat_name(q: float) -> str:
    """The statistic's name in results, as vLLM writes it (`p99`, `p99.9`)."""
    return f"p{int(q)}" if q == int(q) else f"p{q:g}"
