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

from specdsl.bench.command import run_command_workload
from specdsl.bench.loadgen import run_benchmark, warm_up, warmup_requests
from specdsl.bench.results import METRICS, BenchError, BenchResult, RunResult, stamped

__all__ = ["METRICS", "BenchError", "BenchResult", "RunResult", "run_benchmark", "run_command_workload", "stamped", "warm_up",
           "warmup_requests"]
