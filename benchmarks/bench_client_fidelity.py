"""Fidelity of specdsl's benchmark client against the truth: a server of
known timing and a minimal reference reader, interleaved in one run.

    python benchmarks/bench_client_fidelity.py [--reps 5] [--requests 64] [--output-len 64] \
        [--ttft-ms 40] [--itl-ms 8] [--concurrency 1,8] [--client-processes 1]

Starts the known-timing test double (tests/bench/timed_server.py: first
token TTFT ms after it has read the request, then one every ITL ms, OpenAI
SSE chunks over HTTP/1.1 chunked encoding) in its own process group on
loopback. Then, `--reps` times and for each concurrency, runs the same
requests (the same bodies: token-id prompts, vLLM's request fields) with
specdsl.bench.run_benchmark (closed loop, `warmup` = concurrency so every
stream has its keep-alive connection) and with the reference reader
(tests/bench/reference_client.py: http.client, one thread and one
connection per stream, perf_counter before the request is written and when
each chunk's bytes are returned), alternating which goes first.

Reported per concurrency: each client's median over reps of its median
TTFT, median ITL and output throughput, and the difference ours - reference
taken pair by pair (same rep), as the median over reps with its range.
Goal: TTFT and ITL within 0.5 ms of the reference, output throughput within
1%. `--client-processes 1,4` measures specdsl at each count of worker
processes (`client_processes`) beside the same reference; a run that
specdsl itself marked client-bound is counted in the summary. Exit status 0
when met. Set PYTHONPATH to another tree's root to measure
its client (the double and the reference come from this script's tree).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "bench"))

from reference_client import run_reference, summary  # noqa: E402  (the test helper)

import aiohttp  # noqa: E402

import specdsl  # noqa: E402
from specdsl.bench import run_benchmark  # noqa: E402
from specdsl.bench.datasets import build_prompts  # noqa: E402
from specdsl.bench.loadgen import request_body  # noqa: E402
from specdsl.model.config import Workload  # noqa: E402
from specdsl.servers import adapter_for  # noqa: E402

KEYS = ("median_ttft_ms", "median_itl_ms", "output_throughput")


def start_double(ttft_ms: float, itl_ms: float) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "bench" / "timed_server.py"), "--port", "0",
         "--ttft-ms", str(ttft_ms), "--itl-ms", str(itl_ms)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True, text=True,
    )
    line = proc.stdout.readline()
    if not line.startswith("PORT "):
        os.killpg(proc.pid, signal.SIGKILL)
        raise RuntimeError(f"timed double did not start: {line!r}")
    return proc, int(line.split()[1])


def ours(base: str, w: Workload, out: Path) -> dict:
    run = run_benchmark(w, base, "timed", out, quirks=adapter_for("vllm").quirks).runs[0]
    m = run.metrics
    if m["completed"] != w.requests:
        raise RuntimeError(f"specdsl: {m['failed']} requests failed")
    return {k: m[k] for k in KEYS} | {"client_bound": any(x.startswith("client-bound") for x in run.warnings)}


def reference(base: str, bodies: list[bytes], w: Workload, burst: bool = False) -> dict:
    s = summary(*run_reference(base + "/v1/completions", bodies, requests=w.requests, concurrency=w.concurrency,
                               burst=burst))
    if s["completed"] != w.requests:
        raise RuntimeError("reference: requests failed")
    return {k: s[k] for k in KEYS}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--requests", type=int, default=64)
    p.add_argument("--output-len", type=int, default=64)
    p.add_argument("--ttft-ms", type=float, default=40.0)
    p.add_argument("--itl-ms", type=float, default=8.0)
    p.add_argument("--concurrency", default="1,8")
    p.add_argument("--client-processes", default="1", help="specdsl's worker processes, e.g. 1,4")
    p.add_argument("--reference-burst", action="store_true",
                   help="the reference's threads send their first requests together (a barrier)")
    p.add_argument("--json", type=Path, default=None, help="also write the summary here")
    a = p.parse_args()
    levels = [(int(c), int(n)) for c in a.concurrency.split(",") for n in a.client_processes.split(",")]
    proc, port = start_double(a.ttft_ms, a.itl_ms)
    base = f"http://127.0.0.1:{port}"
    load = [os.getloadavg()[0]]
    pairs: dict[tuple[int, int], list[dict]] = {level: [] for level in levels}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for rep in range(a.reps):
                for c, n in levels:
                    w = Workload(name="fidelity", input_len=16, output_len=a.output_len, requests=a.requests,
                                 concurrency=c, warmup=c, timeout=60.0, client_processes=n)
                    prompts = build_prompts(w, a.requests, chat=False, token_ids=True, tokenizer=None)
                    bodies = [request_body(pr, "timed", adapter_for("vllm").quirks, None) for pr in prompts]
                    pair = {}
                    for who in (("ours", "ref") if rep % 2 == 0 else ("ref", "ours")):
                        pair[who] = ours(base, w, Path(tmp) / f"{rep}-{c}-{n}") if who == "ours" else reference(base, bodies, w, a.reference_burst)
                    pairs[(c, n)].append(pair)
                    print(f"rep {rep} c={c} processes={n}: " + "  ".join(
                        f"{k} {pair['ours'][k]:.3f}/{pair['ref'][k]:.3f}" for k in KEYS)
                          + ("  (specdsl: client-bound)" if pair["ours"]["client_bound"] else ""), flush=True)
                load.append(os.getloadavg()[0])
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    med = statistics.median
    result: dict = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()},"
                   f" aiohttp {aiohttp.__version__}, load average {min(load):.1f}-{max(load):.1f}",
        "client_tree": str(Path(specdsl.__file__).resolve().parents[1]),
        "args": vars(a) | {"json": str(a.json) if a.json else None},
        "levels": {},
    }
    ok = True
    for (c, n), rows in pairs.items():
        level: dict = {"client_bound_runs": sum(r["ours"]["client_bound"] for r in rows)}
        for k in KEYS:
            o = [r["ours"][k] for r in rows]
            f = [r["ref"][k] for r in rows]
            if k == "output_throughput":
                d = [(x / y - 1) * 100 for x, y in zip(o, f)]
                good = abs(med(d)) <= 1.0
            else:
                d = [x - y for x, y in zip(o, f)]
                good = abs(med(d)) <= 0.5
            ok &= good
            level[k] = {"ours": med(o), "reference": med(f), "diff": med(d), "diff_min": min(d), "diff_max": max(d),
                        "diff_unit": "%" if k == "output_throughput" else "ms", "goal_met": good}
        result["levels"][f"{c}" if n == 1 else f"{c} x{n}"] = level
    print(json.dumps(result, indent=1))
    print("\n| concurrency (x client processes) | metric | specdsl | reference | difference (median, range over reps) |")
    print("|---|---|---|---|---|")
    for c, level in result["levels"].items():
        for k in KEYS:
            v = level[k]
            u = v["diff_unit"]
            print(f"| {c} | {k} | {v['ours']:.2f} | {v['reference']:.2f} | {v['diff']:+.2f} {u}"
                  f" ({v['diff_min']:+.2f} to {v['diff_max']:+.2f}) |")
        if level["client_bound_runs"]:
            print(f"| {c} | runs specdsl marked client-bound | {level['client_bound_runs']} of {a.reps} | | |")
    if a.json:
        a.json.write_text(json.dumps(result, indent=1))
    print("goals met" if ok else "GOALS NOT MET", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
