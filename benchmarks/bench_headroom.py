"""Headroom of specdsl's benchmark client: how fast can it drive streams
before the client, not the server, is what gets measured?

    python benchmarks/bench_headroom.py [--requests 5000] [--output-len 16]

Starts the instant-server test double (tests/bench/instant_server.py, which
answers every chunk at once) in its own process group on loopback, then
measures with specdsl.bench.run_benchmark:
  1. closed loop, 64 streams: completed requests/s (goal >= 500 on 2 cores)
     and the client's CPU time per request;
  2. open loop at 500 requests/s: TTFT p50 (goal < 2 ms) at the target rate;
  3. one stream: TTFT p50, the client's floor.
Client and server share the machine's cores. Prints a JSON summary.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "bench"))

from conftest import start_instant_server, stop_group  # noqa: E402  (the test double's launcher)

from specdsl.bench import run_benchmark  # noqa: E402
from specdsl.model.config import Workload  # noqa: E402
from specdsl.servers import adapter_for


def measure(base_url: str, out: Path, **kw) -> dict:
    w = Workload(name="headroom", input_len=16, timeout=10.0, **kw)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    result = run_benchmark(w, base_url, "instant", out, quirks=adapter_for("vllm").quirks)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    m = result.runs[0].metrics
    sent = w.requests + w.warmup
    return {
        "workload": {k: kw[k] for k in sorted(kw)},
        "request_throughput": round(m["request_throughput"], 1),
        "failed": int(m["failed"]),
        "p50_ttft_ms": round(m["p50_ttft_ms"], 3),
        "p99_ttft_ms": round(m["p99_ttft_ms"], 3),
        "client_cpu_ms_per_request": round(cpu / sent * 1000, 3),
        # the run's own headroom record (specdsl.bench.monitor) and whether it was a measurement
        "client": {k: v for k, v in result.runs[0].client.items() if k in (
            "busy", "achieved_concurrency", "asked_concurrency", "achieved_rate", "asked_rate", "late_p90_ms", "loop_lag_p50_ms")},
        "invalid": result.runs[0].invalid,
        "wall_s": round(wall, 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=5000)
    parser.add_argument("--output-len", type=int, default=16)
    args = parser.parse_args()
    proc, port = start_instant_server()
    base = f"http://127.0.0.1:{port}"
    try:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp)
            n, k = args.requests, args.output_len
            summary = {
                "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
                "closed_c64": measure(base, out / "a", requests=n, concurrency=64, warmup=64, output_len=k),
                "open_500rps": measure(base, out / "b", requests=n // 2, rate=500.0, warmup=64, concurrency=64, output_len=k),
                "closed_c1": measure(base, out / "c", requests=n // 10, concurrency=1, warmup=8, output_len=k),
            }
    finally:
        stop_group(proc)
    print(json.dumps(summary, indent=2))
    ok = summary["closed_c64"]["request_throughput"] >= 500 and summary["open_500rps"]["p50_ttft_ms"] < 2.0
    print("goals met" if ok else "GOALS NOT MET", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
