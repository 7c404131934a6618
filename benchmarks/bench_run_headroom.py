"""The client's headroom per run, as each run's record says it
(specdsl.bench.monitor): busy, achieved against asked concurrency, timer
lag, and whether the run is invalid for it, against the paced double
(tests/bench/timed_server.py: 20 ms to the first token, then ITL 2 ms or
25 ms, 8 tokens) at 4 and 16 streams, and the instant double at 64.

    python benchmarks/bench_run_headroom.py

Client and servers share the machine's cores. Prints one line per run.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "bench"))

from conftest import start_double, start_instant_server, stop_group  # noqa: E402  (the test doubles' launchers)

from specdsl.bench import run_benchmark  # noqa: E402
from specdsl.model.config import Workload  # noqa: E402
from specdsl.servers import adapter_for  # noqa: E402


def line(what: str, run) -> str:
    c = run.client
    return (f"{what}: busy {c.get('busy')}, achieved {c.get('achieved_concurrency')} of {c.get('asked_concurrency')}"
            f" over {c.get('window_s')} s, lag p50 {c.get('loop_lag_p50_ms')} ms; invalid: {run.invalid[:70] or '-'}")


def main() -> int:
    for itl, per_stream in (("2", 40), ("25", 10)):
        proc, port = start_double("timed_server.py", "--ttft-ms", "20", "--itl-ms", itl)
        try:
            for streams in (4, 16):
                with tempfile.TemporaryDirectory() as tmp:
                    w = Workload(name="h", input_len=8, output_len=8, requests=streams * per_stream, concurrency=streams,
                                 warmup=4, runs=2, timeout=10.0)
                    for run in run_benchmark(w, f"http://127.0.0.1:{port}", "m", tmp).runs:
                        print(line(f"ITL {itl} ms, {streams} streams", run))
        finally:
            stop_group(proc)
    proc, port = start_instant_server()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            w = Workload(name="h", input_len=8, output_len=16, requests=2000, concurrency=64, warmup=64, timeout=10.0)
            print(line("instant, 64 streams", run_benchmark(w, f"http://127.0.0.1:{port}", "instant", tmp,
                                                            quirks=adapter_for("vllm").quirks).runs[0]))
    finally:
        stop_group(proc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
