"""bench: the benchmark client. Sends a workload's requests to an
OpenAI-compatible server (or runs the user's own benchmark script), times
every streamed chunk, and computes the metrics of `vllm bench serve`.
Around each run it resets the server's prefix cache and reads its
Prometheus counters where the engine offers them (`serverside`), measures
its own load to mark a run it may have limited (`monitor`), and records the
request settings with the result (`settings`). Where one process cannot
keep up, the streams are spread over worker processes (`workers`, started
through specdsl.hosts.children).

I/O lives here (HTTP, subprocesses, files under the run folder). It may
import `specdsl.model` (the workload type, the metric names) and diag; never
syntax, resolve, validate, graph, plan, state, provision, servers, apply or
cli. It sits above hosts on the I/O side (tests/test_layers.py).
"""

from __future__ import annotations

import importlib

from specdsl.bench.results import METRICS, BenchError, BenchResult, RunResult, Unsettled, stamped

# The package face is lazy: the load generator (aiohttp, an SSL context built
# at import: ~0.6 s) and the command runner load on first use, so a module
# that only reads datasets or results (`specdsl plan` checks a workload's
# dataset through bench.datasets) never pays for them; tests/bench/
# test_plan_imports.py fails when plan imports them.
_LAZY = {
    "run_command_workload": "specdsl.bench.command",
    "run_benchmark": "specdsl.bench.loadgen",
    "warm_up": "specdsl.bench.loadgen",
    "warmup_requests": "specdsl.bench.loadgen",
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = ["METRICS", "BenchError", "BenchResult", "RunResult", "Unsettled", "run_benchmark", "run_command_workload", "stamped",
           "warm_up", "warmup_requests"]
