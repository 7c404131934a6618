"""Time `specdsl plan` of a spec whose matrix expands to 1,000 cells, in a
fresh process each time (parse, resolve, validate, graph, plan, render: what
a user waits for), against an empty state and without refresh.

    python benchmarks/bench_plan.py [--reps 7] [--side 10] [--snakemake EXE] [--snakemake-reps 3]

The spec: a matrix over three keys (attention backend x concurrency x
output length, `--side` values each), the backend driving a server argument
and the other two a workload override, with two assertions per cell, plus a
baseline experiment and a candidate that asserts against it and promotes: every
step kind appears (preflight, provision, launch, benchmark, check, promote,
teardown).

With `--snakemake` (or `snakemake` on PATH) it also writes the same DAG as a
Snakefile (one rule per step kind, wildcards for the cells) and times
`snakemake -n` on it, for scale. Install snakemake in a throwaway venv, not
in the project's environment.

Prints median wall time, spread (min..max) and the median CPU time of the
child (user + sys, steadier on a busy machine), and the machine. Goal:
median <= 0.5 s on a 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from grid_common import COMMON

BACKENDS = ["triton", "flashinfer", "fa3", "fa4", "torch_native", "flex_attention", "cutlass_mla", "flashmla", "trtllm_mla", "trtllm_mha"]
CONCURRENCY = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
OUTPUT_LEN = [32, 64, 128, 256, 512, 768, 1024, 1536, 2048, 4096]
GRID_ASSERTS = ["backend", "no-failures"]
CAND_ASSERTS = ["faster", "latency"]


def axes(side: int) -> tuple[list[str], list[int], list[int]]:
    if not 1 <= side <= 10:
        raise SystemExit("--side is between 1 and 10")
    return BACKENDS[:side], CONCURRENCY[:side], OUTPUT_LEN[:side]


def make_spec(side: int) -> str:
    backends, concurrency, output_len = axes(side)
    return COMMON + f"""experiment "cand" {{
  host     = host.gpu8
  stack    = stack.cu130
  server   = server.kimi {{ args = {{ attention-backend = "flashinfer" }} }}
  workload = workload.decode
  baseline = experiment.base
  assert "faster"  {{ output_throughput >= baseline.output_throughput * 1.03 }}
  assert "latency" {{ p99(itl) <= p99(baseline.itl) * 1.10 }}
  promote  = "kimi-prod"
}}

experiment "grid" {{
  matrix = {{
    backend     = [{", ".join(f'"{b}"' for b in backends)}],
    concurrency = [{", ".join(map(str, concurrency))}],
    output_len  = [{", ".join(map(str, output_len))}],
  }}
  host     = host.gpu8
  stack    = stack.cu130
  server   = server.kimi {{ args = {{ attention-backend = matrix.backend }} }}
  workload = workload.decode {{
    concurrency = matrix.concurrency
    output_len  = matrix.output_len
    requests    = matrix.concurrency * 4
  }}
  assert "backend"     {{ effective.attention_backend == matrix.backend }}
  assert "no-failures" {{ failed == 0 }}
}}
"""


def make_snakefile(side: int) -> str:
    """The plan's DAG as Snakemake rules: one rule per step kind, the cells
    as wildcards; `touch` stands for the work (a dry run never runs it)."""
    backends, concurrency, output_len = axes(side)
    return f"""BACKENDS = {backends!r}
CONCURRENCY = {concurrency!r}
OUTPUT_LEN = {output_len!r}
GRID_ASSERTS = {GRID_ASSERTS!r}
CAND_ASSERTS = {CAND_ASSERTS!r}
SINGLES = ["base", "cand"]

wildcard_constraints:
    b="[^/]+", c="[^/]+", o="[^/]+", a="[^/]+", exp="[^/]+", server="[^/]+"

rule all:
    input:
        expand("check/{{b}}/{{c}}/{{o}}/{{a}}.ok", b=BACKENDS, c=CONCURRENCY, o=OUTPUT_LEN, a=GRID_ASSERTS),
        "promote/cand.done",
        expand("teardown/{{server}}.done", server=BACKENDS + SINGLES)

rule preflight:
    output: "preflight/gpu8.done"
    shell: "touch {{output}}"

rule provision:
    input: "preflight/gpu8.done"
    output: "provision/cu130.done"
    shell: "touch {{output}}"

rule launch:
    input: "provision/cu130.done"
    output: "launch/{{server}}.done"
    shell: "touch {{output}}"

rule benchmark:
    input: "launch/{{b}}.done"
    output: "bench/{{b}}/{{c}}/{{o}}.json"
    shell: "touch {{output}}"

rule benchmark_single:
    input: "launch/{{exp}}.done"
    output: "single/bench/{{exp}}.json"
    shell: "touch {{output}}"

rule check:
    input: "bench/{{b}}/{{c}}/{{o}}.json"
    output: "check/{{b}}/{{c}}/{{o}}/{{a}}.ok"
    shell: "touch {{output}}"

rule check_cand:
    input: "single/bench/cand.json", "single/bench/base.json"
    output: "single/check/cand/{{a}}.ok"
    shell: "touch {{output}}"

rule promote:
    input: expand("single/check/cand/{{a}}.ok", a=CAND_ASSERTS)
    output: "promote/cand.done"
    shell: "touch {{output}}"

def benches_of(wildcards):
    if wildcards.server in SINGLES:
        return ["single/bench/" + wildcards.server + ".json"]
    return expand("bench/{{b}}/{{c}}/{{o}}.json", b=[wildcards.server], c=CONCURRENCY, o=OUTPUT_LEN)

rule teardown:
    input: benches_of
    output: "teardown/{{server}}.done"
    shell: "touch {{output}}"
"""


def timed(argv: list[str], reps: int, cwd: str | None = None) -> tuple[list[float], list[float], str]:
    """Wall and CPU (user + sys of the child) seconds of each run, and the
    last run's stdout."""
    wall, cpu, out = [], [], ""
    for _ in range(reps):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.run(argv, capture_output=True, text=True, cwd=cwd)
        wall.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if proc.returncode != 0:
            sys.exit(f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
        out = proc.stdout
    return wall, cpu, out


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def figures(name: str, wall: list[float], cpu: list[float]) -> str:
    return (f"{name}: median wall {statistics.median(wall):.3f} s (min {min(wall):.3f}, max {max(wall):.3f}), "
            f"median cpu {statistics.median(cpu):.3f} s, {len(wall)} runs")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--side", type=int, default=10, help="values per matrix key (cells = side**3)")
    ap.add_argument("--snakemake", metavar="EXE", default=shutil.which("snakemake"), help="snakemake executable (default: on PATH)")
    ap.add_argument("--snakemake-reps", type=int, default=3)
    args = ap.parse_args()
    cells = args.side ** 3
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "grid.spec"
        spec.write_text(make_spec(args.side))
        state = Path(tmp) / "empty-state"
        plan = [sys.executable, "-m", "specdsl.cli.main", "plan", "--no-refresh", str(spec), "--state", str(state)]

        # what the timed command plans: every cell, every step kind
        _, _, out = timed(plan + ["--json"], 1)
        doc = json.loads(out)
        grid = {e for c in doc["changes"] for e in c["experiments"] if e.startswith("grid[")}
        kinds = sorted({c["kind"] for c in doc["changes"]})
        assert len(grid) == cells, len(grid)
        assert kinds == sorted(["preflight", "provision", "launch", "benchmark", "check", "promote", "teardown"]), kinds
        assert not state.exists(), "plan must not create the state folder"
        steps = len(doc["changes"])

        floor, floor_cpu, _ = timed([sys.executable, "-c", "pass"], args.reps)
        wall, cpu, out = timed(plan, args.reps)
        summary = out.rstrip().splitlines()[-1]

        smk = None
        if args.snakemake:
            work = Path(tmp) / "smk"
            work.mkdir()
            (work / "Snakefile").write_text(make_snakefile(args.side))
            argv = [args.snakemake, "-n", "--cores", "1", "--snakefile", "Snakefile"]
            s_wall, s_cpu, s_out = timed(argv, args.snakemake_reps, cwd=str(work))
            total = next((ln.split()[-1] for ln in s_out.splitlines() if ln.strip().startswith("total")), "?")
            version = subprocess.run([args.snakemake, "--version"], capture_output=True, text=True).stdout.strip()
            smk = (s_wall, s_cpu, total, version)

    print(f"machine: {os.cpu_count()} cores (nproc {len(os.sched_getaffinity(0))}), {cpu_model()}, "
          f"Python {platform.python_version()}, load average {os.getloadavg()[0]:.1f} at the end")
    print(f"spec: {cells} matrix cells + 2 experiments, {steps} steps planned")
    print("command: python -m specdsl.cli.main plan --no-refresh grid.spec --state EMPTY_DIR")
    print(f"plan says: {summary}")
    print(figures("python -c pass", floor, floor_cpu))
    print(figures("specdsl plan  ", wall, cpu))
    goal = statistics.median(wall) <= 0.5
    print(f"goal (median wall <= 0.5 s): {'met' if goal else 'NOT met'}")
    if smk:
        s_wall, s_cpu, total, version = smk
        print(f"command: snakemake -n --cores 1 --snakefile Snakefile  (snakemake {version}, {total} jobs)")
        print(figures("snakemake -n  ", s_wall, s_cpu))
        print(f"ratio snakemake -n / specdsl plan (median wall): {statistics.median(s_wall) / statistics.median(wall):.1f}x")


if __name__ == "__main__":
    main()
