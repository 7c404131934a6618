"""Time `specdsl plan` of two specs whose matrix expands to 1,000 cells, in a
fresh process each time (parse, resolve, validate, graph, plan, render: what
a user waits for), against an empty state and without refresh.

    python benchmarks/bench_plan.py [--reps 7] [--side 10] [--snakemake EXE] [--snakemake-reps 3]
                                    [--terraform EXE] [--no-bytecode] [--write]

The spec: a matrix over three keys (attention backend x concurrency x
output length, `--side` values each), the backend driving a server argument
and the other two a workload override, with two assertions per cell, plus a
baseline experiment and a candidate that asserts against it and promotes: every
step kind appears (preflight, provision, launch, benchmark, check, promote,
teardown). The second, `flags` (issue 36), is the spec users write: the
README's two stacks, host and TP-8 SGLang server (examples/kimi-k25/upgrade.spec
whole, its baseline and upgrade included) and a matrix over three server
flags (`cuda-graph-max-bs`, `max-running-requests`, `chunked-prefill-size`,
`--side` values each): every cell its own server, so 1,000 launches and
teardowns where the first spec has 10.

With `--snakemake` (or `snakemake` on PATH) it also writes the same DAG as a
Snakefile (one rule per step kind, wildcards for the cells) and times
`snakemake -n` on it, for scale. Install snakemake in a throwaway venv, not
in the project's environment.

With `--terraform` (or `terraform` on PATH; without it the script says so
and measures the rest) it also writes one Terraform configuration of the
same cells, one `terraform_data` resource per cell (1,000 resources, each
with the cell's backend, concurrency, output length and requests: no
provider to download, nothing to refresh), and times `terraform plan
-refresh=false` on it interleaved with both `specdsl plan`s (one of each
per repetition, the order rotating: grid, terraform, flags; terraform,
flags, grid; ...), so all see the same load. The figure of each spec is
the ratio of its CPU time (user + sys of the child) to terraform's of the
same repetition: the median of those ratios. Goal: <= 0.25 on both.

specdsl runs as an installed package does, its bytecode cached (a
warm-up run writes it; PYTHONDONTWRITEBYTECODE is dropped from the child's
environment); `--no-bytecode` times it compiling every module from source
(its own and its dependencies': an empty PYTHONPYCACHEPREFIX), a worst case
no installed package meets.

Prints median wall time, spread (min..max) and the median CPU time of the
child (user + sys, steadier on a busy machine), and the machine; `--write`
replaces the section "Plan against terraform plan, measured" of
docs/benchmarks.md.
Goal: median <= 0.5 s on a 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from grid_common import COMMON

ROOT = Path(__file__).resolve().parents[1]
SECTION = "### Plan against terraform plan, measured"  # under "## Plan against terraform plan"
RATIO_GOAL = 0.25

BACKENDS = ["triton", "flashinfer", "fa3", "fa4", "torch_native", "flex_attention", "cutlass_mla", "flashmla", "trtllm_mla", "trtllm_mha"]
CONCURRENCY = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
OUTPUT_LEN = [32, 64, 128, 256, 512, 768, 1024, 1536, 2048, 4096]
FLAGS = {  # the flags spec's matrix: SGLang server flags, 10 values each
    "cuda_graph_max_bs": [8, 16, 24, 32, 48, 64, 96, 128, 160, 256],
    "max_running_requests": [8, 16, 32, 48, 64, 96, 128, 192, 256, 512],
    "chunked_prefill_size": [1024, 2048, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 65536],
}
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


def make_flags_spec(side: int) -> str:
    """examples/kimi-k25/upgrade.spec (the README's spec: an SSH host, two
    stacks, a TP-8 SGLang server, a baseline and an upgrade) and a sweep of
    three server flags over `side` values each, one server a cell."""
    if not 1 <= side <= 10:
        raise SystemExit("--side is between 1 and 10")
    matrix = ",\n".join(f"    {k} = [{', '.join(map(str, v[:side]))}]" for k, v in FLAGS.items())
    return (ROOT / "examples" / "kimi-k25" / "upgrade.spec").read_text() + f"""
experiment "flags" {{
  matrix = {{
{matrix},
  }}
  host     = host.gpu8
  stack    = stack.cu130
  server   = server.kimi {{ args = {{
    cuda-graph-max-bs    = matrix.cuda_graph_max_bs,
    max-running-requests = matrix.max_running_requests,
    chunked-prefill-size = matrix.chunked_prefill_size,
  }} }}
  workload = workload.decode
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


def make_terraform(side: int) -> str:
    """The grid's cells as Terraform resources: one `terraform_data` per
    cell, its input what the cell sets (the builtin provider: no download)."""
    backends, concurrency, output_len = axes(side)
    out = []
    for b in backends:
        for c in concurrency:
            for o in output_len:
                out.append(f"""resource "terraform_data" "grid_{b}_{c}_{o}" {{
  input = {{
    attention_backend = "{b}"
    concurrency       = {c}
    output_len        = {o}
    requests          = {c * 4}
  }}
}}
""")
    return "\n".join(out)


def run_once(argv: list[str], cwd: str | None = None, env: dict | None = None) -> tuple[float, float, str]:
    """Wall and CPU (user + sys of the child) seconds of one run, and its stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, proc.stdout


def timed(argv: list[str], reps: int, cwd: str | None = None, env: dict | None = None) -> tuple[list[float], list[float], str]:
    """Wall and CPU (user + sys of the child) seconds of each run, and the
    last run's stdout."""
    wall, cpu, out = [], [], ""
    for _ in range(reps):
        w, c, out = run_once(argv, cwd, env)
        wall.append(w)
        cpu.append(c)
    return wall, cpu, out


def interleaved(commands: list[tuple[list[str], str | None, dict]], reps: int) -> list[tuple[list[float], list[float]]]:
    """`reps` rounds of one run of each (argv, cwd, env), the order rotating
    by one each round (abc, bca, cab, ...): each command's (walls, CPUs),
    index i of each from round i."""
    out = [([], []) for _ in commands]
    for i in range(reps):
        for k in range(len(commands)):
            j = (i + k) % len(commands)
            argv, cwd, env = commands[j]
            w, c, _ = run_once(argv, cwd=cwd, env=env)
            out[j][0].append(w)
            out[j][1].append(c)
    return out


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
    ap.add_argument("--terraform", metavar="EXE", default=shutil.which("terraform"), help="terraform executable (default: on PATH)")
    ap.add_argument("--no-bytecode", action="store_true", help="compile every module from source (no bytecode cache, of any package)")
    ap.add_argument("--write", action="store_true", help="write the figures to docs/benchmarks.md")
    args = ap.parse_args()
    cells = args.side ** 3
    env = dict(os.environ)
    with tempfile.TemporaryDirectory() as tmp:
        if args.no_bytecode:  # an empty bytecode cache that stays empty: every module compiled from source
            env.update(PYTHONDONTWRITEBYTECODE="1", PYTHONPYCACHEPREFIX=str(Path(tmp) / "no-pycache"))
        else:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
        spec = Path(tmp) / "grid.spec"
        spec.write_text(make_spec(args.side))
        flags_spec = Path(tmp) / "flags.spec"
        flags_spec.write_text(make_flags_spec(args.side))
        state = Path(tmp) / "empty-state"
        plan = [sys.executable, "-m", "specdsl.cli.main", "plan", "--no-refresh", str(spec), "--state", str(state)]
        flags_plan = [sys.executable, "-m", "specdsl.cli.main", "plan", "--no-refresh", str(flags_spec), "--state", str(state)]

        # what the timed commands plan: every cell, every step kind (and, unless
        # --no-bytecode, the run that writes the bytecode cache)
        steps = {}
        for name, argv, launches in (("grid", plan, args.side), ("flags", flags_plan, cells)):
            _, _, out = timed(argv + ["--json"], 1, env=env)
            doc = json.loads(out)
            found = {e for c in doc["changes"] for e in c["experiments"] if e.startswith(f"{name}[")}
            kinds = sorted({c["kind"] for c in doc["changes"]})
            assert len(found) == cells, (name, len(found))
            assert kinds == sorted(["preflight", "provision", "launch", "benchmark", "check", "promote", "teardown"]), kinds
            assert sum(c["kind"] == "launch" for c in doc["changes"]) >= launches, name  # one server a backend, or a cell
            assert not state.exists(), "plan must not create the state folder"
            steps[name] = len(doc["changes"])

        floor, floor_cpu, _ = timed([sys.executable, "-c", "pass"], args.reps, env=env)

        tf = None
        if args.terraform:
            work = Path(tmp) / "tf"
            work.mkdir()
            (work / "main.tf").write_text(make_terraform(args.side))
            # no call home for version news; no CLI configuration of this machine's user
            tf_env = dict(os.environ, CHECKPOINT_DISABLE="1", TF_IN_AUTOMATION="1", TF_CLI_CONFIG_FILE=os.devnull)
            run_once([args.terraform, "init", "-input=false", "-no-color"], cwd=str(work), env=tf_env)
            tf_plan = [args.terraform, "plan", "-input=false", "-refresh=false", "-lock=false", "-no-color"]
            _, _, tf_out = run_once(tf_plan, cwd=str(work), env=tf_env)  # warm-up; what it plans
            tf_summary = next((ln for ln in tf_out.splitlines() if ln.startswith("Plan:")), "?")
            version = subprocess.run([args.terraform, "version"], capture_output=True, text=True, env=tf_env).stdout.splitlines()[0]
            (wall, cpu), (t_wall, t_cpu), (f_wall, f_cpu) = interleaved(
                [(plan, None, env), (tf_plan, str(work), tf_env), (flags_plan, None, env)], args.reps)
            tf = (t_wall, t_cpu, tf_summary, version, [c / t for c, t in zip(cpu, t_cpu)],
                  [c / t for c, t in zip(f_cpu, t_cpu)])
        else:
            (wall, cpu), (f_wall, f_cpu) = interleaved([(plan, None, env), (flags_plan, None, env)], args.reps)
        _, _, out = run_once(plan, env=env)
        summary = out.rstrip().splitlines()[-1]
        _, _, out = run_once(flags_plan, env=env)
        flags_summary = out.rstrip().splitlines()[-1]

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

    lines = [
        f"machine: {os.cpu_count()} cores (nproc {len(os.sched_getaffinity(0))}), {cpu_model()}, "
        f"Python {platform.python_version()}, load average {os.getloadavg()[0]:.1f} at the end",
        f"spec grid: {cells} matrix cells ({args.side} attention backends, a server each) + 2 experiments, {steps['grid']} steps planned",
        f"spec flags: examples/kimi-k25/upgrade.spec + {cells} matrix cells over 3 SGLang flags (one server a cell), "
        f"{steps['flags']} steps planned",
        "command: python -m specdsl.cli.main plan --no-refresh SPEC --state EMPTY_DIR"
        + ("  (no bytecode cache: every module compiled from source)" if args.no_bytecode else "  (bytecode cached)"),
        f"plan of grid says: {summary}",
        f"plan of flags says: {flags_summary}",
        figures("python -c pass      ", floor, floor_cpu),
        figures("specdsl plan (grid) ", wall, cpu),
        figures("specdsl plan (flags)", f_wall, f_cpu),
        f"goal (median wall <= 0.5 s): grid {'met' if statistics.median(wall) <= 0.5 else 'NOT met'}, "
        f"flags {'met' if statistics.median(f_wall) <= 0.5 else 'NOT met'}",
    ]
    if tf:
        t_wall, t_cpu, tf_summary, version, ratios, f_ratios = tf
        lines += [
            f"command: terraform plan -input=false -refresh=false -lock=false -no-color  ({version}, "
            f"{cells} terraform_data resources; says: {tf_summary})",
            figures("terraform plan      ", t_wall, t_cpu),
        ]
        for name, rs in (("grid", ratios), ("flags", f_ratios)):
            ratio = statistics.median(rs)
            lines.append(
                f"ratio specdsl plan ({name}) / terraform plan, CPU, median of {len(rs)} interleaved rounds: {ratio:.3f} "
                f"(min {min(rs):.3f}, max {max(rs):.3f}); goal <= {RATIO_GOAL}: {'met' if ratio <= RATIO_GOAL else 'NOT met'}")
    else:
        lines.append("terraform: not on PATH (nor given with --terraform): the ratio to terraform plan is not measured")
    if smk:
        s_wall, s_cpu, total, version = smk
        lines += [
            f"command: snakemake -n --cores 1 --snakefile Snakefile  (snakemake {version}, {total} jobs)",
            figures("snakemake -n  ", s_wall, s_cpu),
            f"ratio snakemake -n / specdsl plan (median wall): {statistics.median(s_wall) / statistics.median(wall):.1f}x",
        ]
    print("\n".join(lines))
    if args.write:
        write_section(lines, args)


def write_section(lines: list[str], args) -> None:
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                           text=True).stdout.strip()
    flags = shlex.join(a for a in sys.argv[1:] if a != "--write")
    text = "\n".join([
        SECTION, "",
        f"Written by `python benchmarks/bench_plan.py{' ' + flags if flags else ''} --write` at {head}"
        f"{' with uncommitted changes' if dirty else ''}. `specdsl plan` of the two 1,000-cell specs above "
        "(grid: 10 servers; flags: the README's spec and a sweep of three SGLang flags, 1,000 servers) and "
        "`terraform plan` of 1,000 `terraform_data` resources, run in turn (one of each per "
        "repetition, the order rotating) so all see the same load; each ratio is of CPU time (user + sys), "
        f"the median of the rounds' ratios. Goal: <= {RATIO_GOAL} on both.", "",
        "```", *lines, "```", "",
    ])
    path = ROOT / "docs" / "benchmarks.md"
    doc = path.read_text()
    if SECTION in doc:
        start = doc.index(SECTION)
        ends = [i for i in (doc.find("\n## ", start + len(SECTION)), doc.find("\n### ", start + len(SECTION))) if i != -1]
        nxt = min(ends) if ends else -1
        doc = doc[:start] + text + ("\n" + doc[nxt + 1:] if nxt != -1 else "")  # a blank line before the next heading
    else:
        doc = doc.rstrip("\n") + "\n\n" + text
    path.write_text(doc if doc.endswith("\n") else doc + "\n")


if __name__ == "__main__":
    main()
