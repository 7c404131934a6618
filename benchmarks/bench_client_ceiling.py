"""Ceiling of specdsl's benchmark client in one process and in several
(`client_processes`): the most requests/s and streamed tokens/s it drives
when the server answers at once.

    python benchmarks/bench_client_ceiling.py [--processes 1,2] [--repeats 2] [--pin]

Starts the instant-server test double (tests/bench/instant_server.py, which
sends every chunk at once; a benchmark may use the tests' doubles, as
bench_headroom.py does) in its own process group on loopback, then for
each process count, alternating, `--repeats` times:
  1. requests/s: closed loop, 64 streams, 16 output tokens per request;
  2. streamed tokens/s: closed loop, 64 streams, 256 output tokens each.
The server takes CPU too: on a 2-core machine client and server share the
cores, so the ceiling measured is the pair's. Beside each figure the CPU
time per request of the client (every client process, from their own
monitors) and of the server (from /proc) is printed, and what the client
alone could drive per core (1 / its CPU per request). `--pin` puts the
server on the last core (the client processes may use every core).
Prints a JSON summary.
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
from specdsl.servers import adapter_for  # noqa: E402

_TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid: int) -> float:
    """utime + stime of a process (s)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def measure(base_url: str, server_pid: int, out: Path, processes: int, **kw) -> dict:
    w = Workload(name="ceiling", input_len=16, timeout=30.0, client_processes=processes, **kw)
    server0 = cpu_s(server_pid)
    result = run_benchmark(w, base_url, "instant", out, quirks=adapter_for("vllm").quirks)
    server = cpu_s(server_pid) - server0
    run = result.runs[0]
    m = run.metrics
    client = run.client
    workers = client.get("workers", [client])
    client_cpu = sum(x["cpu_s"] for x in workers)
    sent = w.requests + w.warmup
    return {
        "processes": processes,
        "request_throughput": round(m["request_throughput"], 1),
        "output_throughput": round(m["output_throughput"], 1),
        "failed": int(m["failed"]),
        "client_cpu_ms_per_request": round(client_cpu / m["completed"] * 1000, 3),
        "server_cpu_ms_per_request": round(server / sent * 1000, 3),  # warmup included: its CPU is read around the whole call
        "client_alone_requests_per_core_s": round(m["completed"] / client_cpu, 1) if client_cpu else None,
        "client_busy_max": max(x.get("busy", 0.0) for x in workers),
        "client_bound": [x for x in run.warnings if x.startswith("client-bound")][:2],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", default="1,2")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--requests", type=int, default=6000)
    parser.add_argument("--pin", action="store_true", help="pin the server to the last core")
    args = parser.parse_args()
    counts = [int(p) for p in args.processes.split(",")]
    proc, port = start_instant_server()
    if args.pin:
        os.sched_setaffinity(proc.pid, {os.cpu_count() - 1})
    base = f"http://127.0.0.1:{port}"
    rows: dict[str, list[dict]] = {"requests_per_s": [], "tokens_per_s": []}
    load0 = os.getloadavg()
    t = time.time()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp)
            for rep in range(args.repeats):
                for p in counts:
                    rows["requests_per_s"].append(measure(base, proc.pid, out / f"r{rep}-{p}", p, requests=args.requests,
                                                          concurrency=64, warmup=64, output_len=16))
                    rows["tokens_per_s"].append(measure(base, proc.pid, out / f"t{rep}-{p}", p, requests=args.requests // 8,
                                                        concurrency=64, warmup=64, output_len=256))
    finally:
        stop_group(proc)
    summary = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(t)),
        "load_average_before": [round(x, 2) for x in load0],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "server_pinned": args.pin,
        "wall_s": round(time.time() - t, 1),
        **rows,
    }
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
