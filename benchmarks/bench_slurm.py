"""The 3-cell matrix through Slurm against the same matrix on this machine,
and Slurm's overhead per job.

    python benchmarks/bench_slurm.py            # as root: starts its own one-node cluster

1. `transformers serve` of the tiny model, 3 cells (one server each),
   through the test cluster (tests/slurm/cluster.py: 2 CPUs, gpu:8 as a
   gres count, max_parallel 3) and then locally (no host block): wall of
   each `specdsl apply`.
2. Overhead per job: the same 3 cells with the streaming double of known
   timing as the server (seconds of work), jobs one at a time
   (max_parallel = 1), against the same cells locally:
   (slurm wall - local wall) / 3.
3. The same through a login node over SSH (a loopback sshd,
   tests/hosts/ssh/sshd.py, as the login node of the same cluster):
   (ssh wall - local sbatch wall) / 3 is what the login node adds per job.
   `--no-serve` skips 1.
Environments come from the test cache (SPECDSL_TEST_ENV_CACHE), as the tests'.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests" / "slurm"), str(REPO / "tests" / "apply"), str(REPO / "tests" / "hosts" / "ssh"),
                str(REPO)]

from apply_helpers import cli_env  # noqa: E402
from cluster import Cluster  # noqa: E402
from slurm_helpers import serve_matrix_spec, spec_text, through_login  # noqa: E402
from sshd import Sshd  # noqa: E402


def apply(folder: Path, env: dict) -> float:
    started = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "specdsl.cli.main", "apply", "m.spec", "--yes"], cwd=folder,
                         capture_output=True, text=True, timeout=1200, env=env)
    wall = time.monotonic() - started
    if out.returncode != 0:
        raise SystemExit(f"apply failed in {folder}:\n{out.stdout[-4000:]}\n{out.stderr[-2000:]}")
    return wall


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="bench-slurm-"))
    cluster = Cluster(work / "cluster")
    t0 = time.monotonic()
    cluster.start()
    up = time.monotonic() - t0
    figures = {"cluster_up_s": round(up, 2)}
    (work / "sshd").mkdir()
    login = Sshd(work / "sshd").start()
    try:
        env = cli_env(**cluster.env())
        for slurm in (() if "--no-serve" in sys.argv else (True, False)):
            folder = work / ("serve-slurm" if slurm else "serve-local")
            shutil.copytree(REPO / "examples" / "quickstart", folder, ignore=shutil.ignore_patterns(".specdsl", "stacks", "*.spec"))
            (folder / "m.spec").write_text(serve_matrix_spec(slurm))
            figures["serve_" + ("slurm" if slurm else "local") + "_s"] = round(apply(folder, env), 1)
        for slurm in (True, False):
            folder = work / ("double-slurm" if slurm else "double-local")
            (folder / "gates").mkdir(parents=True)
            text = spec_text(folder / "gates").replace("max_parallel = 3", "max_parallel = 1")
            if not slurm:
                text = text.replace("host     = host.cluster\n", "")
            (folder / "m.spec").write_text(text)
            figures["double_" + ("slurm" if slurm else "local") + "_s"] = round(apply(folder, env), 2)
        figures["overhead_per_job_s"] = round((figures["double_slurm_s"] - figures["double_local_s"]) / 3, 2)
        folder = work / "double-ssh"
        (folder / "gates").mkdir(parents=True)
        text = spec_text(folder / "gates").replace("max_parallel = 3", "max_parallel = 1")
        (folder / "m.spec").write_text(through_login(text, cluster, work / "login-share"))
        ssh_env = cli_env(SPECDSL_SSH_CONFIG=str(login.config))
        ssh_env.pop("SLURM_CONF", None)
        figures["double_ssh_s"] = round(apply(folder, ssh_env), 2)
        figures["login_node_overhead_per_job_s"] = round((figures["double_ssh_s"] - figures["double_slurm_s"]) / 3, 2)
    finally:
        login.stop()
        cluster.cancel_all()
        cluster.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
