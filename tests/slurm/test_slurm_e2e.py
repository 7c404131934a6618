"""The 3-cell matrix through a real Slurm with a real server: each cell a
job, `transformers serve` of the tiny model started inside the allocation,
its results imported into state with the job id; checks run here on them."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest

from apply_helpers import REPO, cli_env, processes_mentioning
from slurm_helpers import serve_matrix_spec
from specdsl.state import load_state

# the apply may take its 900 s budget; the cluster's setup comes on top
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1200)]


def test_three_cells_of_transformers_serve_through_slurm(fresh, tmp_path):
    folder = tmp_path / "m"
    shutil.copytree(REPO / "examples" / "quickstart", folder, ignore=shutil.ignore_patterns(".specdsl", "stacks", "*.spec"))
    (folder / "m.spec").write_text(serve_matrix_spec(slurm=True))
    out = subprocess.run([sys.executable, "-m", "specdsl.cli.main", "apply", "m.spec", "--yes"], cwd=folder,
                         capture_output=True, text=True, timeout=900, env=cli_env(**fresh.env()))
    text = out.stdout + out.stderr
    assert out.returncode == 0, text
    assert "checks: 3 passed, 0 failed" in text
    jobs = set(re.findall(r"slurm job (\d+) submitted", text))
    assert len(jobs) == 3, text
    state = load_state(folder / ".specdsl")
    runs = [r for r in state.runs if r.step.startswith("benchmark.") and r.status == "completed"]
    assert len(runs) == 3 and {r.job for r in runs} == jobs
    assert all(r.metric("output_throughput") > 0 for r in runs)
    launches = [r for r in state.runs if r.step.startswith("launch.") and r.status == "completed"]
    caps = sorted(re.search(r"--cb-max-memory-percent[= ](\S+)", " ".join(r.argv)).group(1) for r in launches)
    assert caps == ["0.02", "0.025", "0.03"]  # one server per cell, each with its own setting
    assert not state.servers  # every server ended with its job
    assert processes_mentioning(str(folder)) == []
