"""Time `specdsl report` of a 1,000-cell sweep and measure the page, in a
fresh process each time (imports, state read, summary, plots, HTML: what a
user waits for).

    python benchmarks/bench_report.py [--reps 5] [--side 10] [--keep DIR]

The state is synthesized, as an apply of bench_plan.py's `grid` would leave
it: a matrix over attention backend x concurrency x output length (`--side`
values each), every cell a completed benchmark run (its medians in state; 2%
of the cells a failed run with a server log tail as the reason) and two
verdicts (`backend`, exact; `itl`, a t interval on five runs' p99 ITL, its
line written by specdsl.verdict), with the step records apply writes.
Throughput and latency follow the concurrency and output length with seeded
noise, so the plots have something to show. The state is written with
specdsl's own `write_state` (validated as any state is).

Prints the median wall time, its spread, the page's size and its number of
plots, and the machine. `--keep DIR` leaves the state and the last page there.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from specdsl import verdict as v  # noqa: E402
from specdsl.model import ast, config  # noqa: E402
from specdsl.state import FORMAT_VERSION, RunRecord, State, StepRecord, locked, write_state  # noqa: E402

BACKENDS = ["triton", "flashinfer", "fa3", "fa4", "torch_native", "flex_attention", "cutlass_mla", "flashmla", "trtllm_mla", "trtllm_mha"]
CONCURRENCY = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
OUTPUT_LEN = [32, 64, 128, 256, 512, 768, 1024, 1536, 2048, 4096]

BACKEND_ASSERT = ast.BinOp("==", ast.Ref(("effective", "attention_backend")), ast.Ref(("matrix", "backend")))
ITL_ASSERT = ast.BinOp("<=", ast.Call("p99", (ast.Ref(("itl",)),)), ast.Number(60))


def _stamp(i: int) -> str:
    return f"2026-03-01T{10 + i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z"


def synthesize(state_dir: Path, side: int, seed: int = 1) -> int:
    """Write the state of a side**3-cell sweep; returns the number of cells."""
    rng = random.Random(seed)
    runs, steps, results = [], [], {}
    speed = {b: 0.7 + 0.6 * rng.random() for b in BACKENDS}
    t = 0
    for b in BACKENDS[:side]:
        for c in CONCURRENCY[:side]:
            for o in OUTPUT_LEN[:side]:
                cell = f"grid[backend={b},concurrency={c},output_len={o}]"
                t += 60
                ident = f"bench-{b}-{c}-{o}"
                steps.append(StepRecord(f"benchmark.{cell}", "benchmark", ident, json.dumps({"launch": f"launch-{b}"})))
                rid = f"20260301T{t:06d}Z-{len(runs):08x}"
                if rng.random() < 0.02:
                    reason = (f"run 2: every request failed: http 500: CUDA out of memory x{c} "
                              f"(server log: runs/{rid}/server.log)\n  last lines:\n  torch.OutOfMemoryError: CUDA out of memory")
                    runs.append(RunRecord(id=rid, step=f"benchmark.{cell}", identity=ident, experiment=cell, status="failed",
                                          started=_stamp(t), finished=_stamp(t + 30), folder=f"runs/{rid}", reason=reason))
                    continue
                tps = speed[b] * 40 * c ** 0.8 * (256 / o) ** 0.1 * (1 + 0.03 * rng.gauss(0, 1))
                itl = 8 + 0.05 * c * (o / 1024) ** 0.5 + rng.random()
                metrics = {"output_throughput": tps, "request_throughput": tps / o, "median_ttft_ms": 40 + c * 0.8,
                           "p99_ttft_ms": 90 + c * 2.1 * rng.uniform(0.9, 1.1), "p99_itl_ms": itl * 1.8, "failed": 0.0,
                           "median_itl_ms": itl}
                runs.append(RunRecord(id=rid, step=f"benchmark.{cell}", identity=ident, experiment=cell, status="completed",
                                      started=_stamp(t), finished=_stamp(t + 40), folder=f"runs/{rid}", metrics=metrics,
                                      effective={"attention_backend": b}, runs=5))
                results[ident] = rid
                for name, expr in (("backend", BACKEND_ASSERT), ("itl", ITL_ASSERT)):
                    cid = f"check-{name}-{b}-{c}-{o}"
                    addr = f"check.{cell}.{name}"
                    content = json.dumps({"assert": config.canonical(expr), "benchmark": ident, "baseline": None})
                    steps.append(StepRecord(addr, "check", cid, content))
                    if name == "backend":
                        verdict = v.Verdict(name, v.Status.PASS,
                                            f'effective.attention_backend = "{b}", matrix.backend = "{b}"')
                    else:
                        d = v.absolute_decision([itl * 1.8 * (1 + 0.04 * rng.gauss(0, 1)) for _ in range(5)], "<=", 60.0)
                        verdict = v.Verdict(name, d.verdict, d.line(), gating=True, decision=d)
                    vid = f"20260301T{t:06d}Z-c{len(runs):07x}"
                    runs.append(RunRecord(id=vid, step=addr, identity=cid, experiment=cell, status="completed",
                                          started=_stamp(t + 41), finished=_stamp(t + 41), verdict=verdict))
    state = State(format_version=FORMAT_VERSION, lineage="bench-report", serial=0, runs=tuple(runs), results=results,
                  steps=tuple(sorted(steps, key=lambda s: s.addr)))
    with locked(state_dir, "bench") as lock:
        fresh = State.new()
        write_state(state_dir, fresh, lock=lock)
        import attrs

        write_state(state_dir, attrs.evolve(state, lineage=fresh.lineage, serial=1), lock=lock)
    return side ** 3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--side", type=int, default=10)
    parser.add_argument("--keep", metavar="DIR")
    args = parser.parse_args()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-report-"))
    state_dir = work / ".specdsl"
    started = time.perf_counter()
    cells = synthesize(state_dir, args.side)
    print(f"synthesized {cells} cells ({(state_dir / 'state.toml').stat().st_size / 1e6:.1f} MB state.toml) "
          f"in {time.perf_counter() - started:.1f} s")
    out = work / "grid.html"
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    walls = []
    for _ in range(args.reps):
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "specdsl.cli.main", "report", "grid", "--state", str(state_dir), "-o", str(out)],
                              capture_output=True, text=True, env=env, timeout=600)
        walls.append(time.perf_counter() - t0)
        if proc.returncode != 0:
            print(proc.stdout + proc.stderr)
            return 1
    page = out.read_text()
    plots = page.count('class="plot"')
    print(proc.stdout.strip())
    print(f"machine: {os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}, "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"specdsl report grid ({cells} cells), {args.reps} runs: median {statistics.median(walls):.2f} s "
          f"(min {min(walls):.2f}, max {max(walls):.2f}); page {len(page.encode()) / 1024:.0f} KiB, "
          f"{plots} plots, {page.count('<tr')} table rows")
    if not args.keep:
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
