"""Time parse + resolve + validate of a spec whose matrix expands to 1,000
cells, in a fresh process each time (what a user waits for).

    python benchmarks/bench_language.py [--reps 7] [--cells-per-backend 100]

Prints the median wall time (and CPU time, steadier on a busy machine) of
`python -m specdsl.cli.main validate FILE`, and of `python -c pass`, the
interpreter's own floor. Goal: median <= 0.3 s.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from grid_common import COMMON

BACKENDS = ["triton", "flashinfer", "fa3", "fa4", "torch_native", "flex_attention", "cutlass_mla", "flashmla", "trtllm_mla", "trtllm_mha"]


def make_spec(per_backend: int) -> str:
    concurrency = ", ".join(str(c) for c in range(1, per_backend + 1))
    backends = ", ".join(f'"{b}"' for b in BACKENDS)
    return COMMON + f"""experiment "grid" {{
  matrix   = {{ backend = [{backends}], concurrency = [{concurrency}] }}
  host     = host.gpu8
  stack    = stack.cu130
  server   = server.kimi {{ args = {{ attention-backend = matrix.backend }} }}
  workload = workload.decode {{ concurrency = matrix.concurrency }}
  baseline = experiment.base
  assert "faster"  {{ output_throughput >= baseline.output_throughput * 1.03 }}
  assert "latency" {{ p99(itl) <= p99(baseline.itl) * 1.10 }}
  assert "backend" {{ effective.attention_backend == matrix.backend }}
}}
"""


def timed(argv: list[str], reps: int) -> tuple[list[float], list[float]]:
    """Wall and CPU (user + sys of the child) seconds of each run."""
    wall, cpu = [], []
    for _ in range(reps):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.run(argv, capture_output=True, text=True)
        wall.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if proc.returncode != 0:
            sys.exit(f"{' '.join(argv)} failed:\n{proc.stderr}")
    return wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--cells-per-backend", type=int, default=100)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "grid.spec"
        path.write_text(make_spec(args.cells_per_backend))
        cells = len(BACKENDS) * args.cells_per_backend
        check = subprocess.run([sys.executable, "-m", "specdsl.cli.main", "validate", str(path)], capture_output=True, text=True)
        assert check.returncode == 0 and f"valid ({cells + 1} experiments)" in check.stderr, check.stderr
        floor, floor_cpu = timed([sys.executable, "-c", "pass"], args.reps)
        times, cpu = timed([sys.executable, "-m", "specdsl.cli.main", "validate", str(path)], args.reps)
    print(f"cells: {cells} (+1 baseline experiment), reps: {args.reps}, load average: {os.getloadavg()[0]:.1f}")
    print(f"python -c pass:  median wall {statistics.median(floor):.3f} s, cpu {statistics.median(floor_cpu):.3f} s")
    print(f"validate:        median wall {statistics.median(times):.3f} s (min {min(times):.3f}), cpu {statistics.median(cpu):.3f} s")


if __name__ == "__main__":
    main()
