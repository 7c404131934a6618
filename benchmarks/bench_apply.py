"""Apply's own cost, measured on real servers (issue: apply on this machine).

1. The quickstart, from an empty state (environment cached): wall time,
   time inside steps, and the engine overhead (wall minus the union of step
   intervals, as apply prints it).
2. A no-change re-apply: the whole command's wall time.
3. A 3 x 2 sweep (3 server configurations x 2 workloads): the number of
   server launches (goal: exactly 3).

Writes the figures to docs/benchmarks.md (section "Apply") with the machine
and command.

    python benchmarks/bench_apply.py
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FINISHED = re.compile(r"Apply finished in ([\d.]+)s \(steps busy ([\d.]+)s, engine overhead ([\d.]+)s\).*?(\d+) server launch")

SWEEP = '''
stack "serve" {
  python   = "3.11"
  packages = ["transformers[serving]==5.19.0", "torch==2.13.0", "requests"]
}
server "tiny" {
  engine = "transformers"
  model  = "./tiny-llama"
}
workload "w" {
  input_len  = 16
  output_len = 8
  requests   = 8
  runs       = 1
  warmup     = 0
}
experiment "sweep" {
  matrix   = { seed = [1, 2, 3], c = [1, 4] }
  stack    = stack.serve
  server   = server.tiny { args = { default-seed = matrix.seed } }
  workload = workload.w { concurrency = matrix.c }
}
'''


def apply(folder: Path, spec: str, env: dict) -> tuple[float, str]:
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "specdsl.cli.main", "apply", spec, "--yes"], cwd=folder,
                          capture_output=True, text=True, env=env, timeout=1800)
    wall = time.monotonic() - t0
    if proc.returncode != 0:
        sys.exit(f"apply {spec} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return wall, proc.stdout


def main() -> None:
    env = dict(os.environ)
    env.setdefault("SPECDSL_ENV_ROOT", str(Path.home() / ".cache" / "specdsl" / "bench-envs"))
    with tempfile.TemporaryDirectory() as tmp:
        qs = Path(tmp) / "quickstart"
        shutil.copytree(REPO / "examples" / "quickstart", qs, ignore=shutil.ignore_patterns(".specdsl", "stacks"))
        # warm the environment cache so the figure is apply, not the installer
        wall, out = apply(qs, "quickstart.spec", env)
        shutil.rmtree(qs / ".specdsl")
        shutil.rmtree(qs / "stacks", ignore_errors=True)
        wall, out = apply(qs, "quickstart.spec", env)
        m = FINISHED.search(out)
        qs_wall, qs_busy, qs_over, qs_launches = float(m[1]), float(m[2]), float(m[3]), int(m[4])
        noop_walls = sorted(apply(qs, "quickstart.spec", env)[0] for _ in range(3))
        sweep = Path(tmp) / "sweep"
        sweep.mkdir()
        shutil.copytree(REPO / "examples" / "quickstart" / "tiny-llama", sweep / "tiny-llama")
        (sweep / "sweep.spec").write_text(SWEEP)
        _, out = apply(sweep, "sweep.spec", env)
        sweep_launches = int(FINISHED.search(out)[4])
    machine = f"{os.cpu_count()} cores, {platform.processor() or platform.machine()}, Python {platform.python_version()}"
    lines = [
        "## Apply",
        "",
        f"Machine: {machine}. Command: `python benchmarks/bench_apply.py`.",
        "",
        "| figure | value |",
        "|---|---|",
        f"| quickstart apply (environment cached), wall | {qs_wall:.1f} s |",
        f"| time inside steps (union of step intervals) | {qs_busy:.1f} s |",
        f"| engine overhead (wall - inside steps) | {qs_over:.2f} s |",
        f"| quickstart server launches | {qs_launches} |",
        f"| no-change re-apply, whole command (median of 3) | {noop_walls[1]:.2f} s |",
        f"| 3 x 2 sweep (3 server configurations x 2 workloads): launches | {sweep_launches} |",
        "",
    ]
    print("\n".join(lines))
    _write_section(REPO / "docs" / "benchmarks.md", "## Apply", "\n".join(lines))


def _write_section(path: Path, heading: str, text: str) -> None:
    doc = path.read_text() if path.exists() else "# Benchmarks\n\n"
    start = doc.find(heading + "\n")
    if start == -1:
        doc = doc.rstrip("\n") + "\n\n" + text
    else:
        end = doc.find("\n## ", start + len(heading))
        doc = doc[:start] + text + (doc[end + 1:] if end != -1 else "")
    path.write_text(doc.rstrip("\n") + "\n")


if __name__ == "__main__":
    main()
