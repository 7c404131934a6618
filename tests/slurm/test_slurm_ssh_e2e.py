"""One cell of `transformers serve` (the tiny model) through a login node
over SSH to the real cluster: the loopback sshd is the login node, specdsl
runs here with no Slurm command on its PATH and no SLURM_CONF, with the
environment of the local Slurm e2e (test_slurm_e2e.py). The job's
files are written on the login node's side, the server runs inside the
allocation, and the results come back over SSH into this state folder."""

from __future__ import annotations

import hashlib
import json
import os
import re

import pytest

from apply_helpers import REPO, processes_mentioning
from slurm_helpers import serve_matrix_spec, through_login
from specdsl.state import load_state
from test_slurm_ssh import apply, no_slurm_env

# the apply may take its 600 s budget; the cluster's and the login's setup come on top
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

TINY = REPO / "examples" / "quickstart" / "tiny-llama"


def provision_identity(spec) -> str:
    from specdsl.graph.build import build_graph
    from specdsl.resolve.resolver import resolve_file

    resolved = resolve_file(spec)
    assert resolved.ok, [d.summary for d in resolved.diags]
    [identity] = {s.identity for s in build_graph(resolved.config).steps.values() if s.kind == "provision"}
    return identity


def test_one_cell_of_transformers_serve_through_the_login_node(fresh, login, tmp_path):
    folder = tmp_path / "m"
    folder.mkdir()
    share = tmp_path / "login-share"  # the login node's folder the compute nodes share
    (share / "envs").mkdir(parents=True)
    # the model folder and the dataset are named by relative path, here:
    # they are copied to the login node (this machine shares nothing with it)
    os.symlink(TINY, folder / "tiny-llama")
    (folder / "data").mkdir()
    prompts = "".join(json.dumps({"prompt": f"Tell me about the number {k}."}) + "\n" for k in range(4))
    (folder / "data" / "prompts.jsonl").write_text(prompts)
    text = serve_matrix_spec(slurm=True).replace('endpoint    = "completions"',
                                                 'endpoint    = "completions"\n  dataset     = "jsonl:data/prompts.jsonl"')
    text = text.replace("matrix   = { mem = [0.02, 0.025, 0.03] }", "matrix   = { mem = [0.03] }")
    (folder / "m.spec").write_text(through_login(text, fresh, share))
    # the environment is built under the login node's shared folder (an
    # environment's identity names its machine, so the local e2e's is not
    # this host's); uv's cache, filled by the local e2e, makes that seconds
    out = apply(folder, no_slurm_env(login, tmp_path), timeout=600)
    text = out.stdout + out.stderr
    assert out.returncode == 0, text
    assert "submitted on the login node specdsl-test" in text  # plan says where
    assert "checks: 1 passed, 0 failed" in text
    jobs = re.findall(r"slurm job (\d+) submitted", text)
    assert len(jobs) == 1, text
    state = load_state(folder / ".specdsl")
    [run] = [r for r in state.runs if r.step.startswith("benchmark.") and r.status == "completed"]
    assert run.job == jobs[0] and run.metric("output_throughput") > 0
    # the prompts the job read were the copy of this machine's file on the login node
    digest = hashlib.sha256(prompts.encode()).hexdigest()
    dataset = json.loads((folder / ".specdsl" / run.folder / "result.json").read_text())["settings"]["dataset"]
    assert dataset["sha256"] == digest and dataset["kind"] == "jsonl", dataset
    copy = share / "files" / f"{digest[:32]}-prompts.jsonl" / "prompts.jsonl"
    assert dataset["path"] == str(copy) and copy.read_text() == prompts
    assert "dataset of workload c4: data/prompts.jsonl (sha256 " in text and "copied: " in text
    [model] = list((share / "files").glob("*-tiny-llama/tiny-llama"))
    assert (model / "config.json").read_bytes() == (TINY / "config.json").read_bytes()
    assert not state.servers  # the server ended with its job
    [env] = state.environments
    assert env.path == str(share / "envs" / provision_identity(folder / "m.spec") / "venv")
    # the job's files were written on the login node's side ...
    [remote] = sorted((share / "jobs").iterdir())
    assert (remote / "job.json").is_file() and (remote / "job.sh").is_file()
    assert oct((remote / "job.json").stat().st_mode & 0o777) == "0o600"
    assert list((share / "lib").glob("specdsl-*/specdsl/apply/slurm/job.py"))
    # ... and what it recorded came back over SSH into this state folder
    local = folder / ".specdsl" / "slurm" / "jobs" / remote.name
    assert (local / "done.json").is_file() and (local / "events.jsonl").is_file()
    assert (folder / ".specdsl" / run.folder).is_dir()
    assert not (folder / ".specdsl" / "slurm" / "preflight.sh").exists()  # nothing of Slurm's written here
    assert fresh.jobs() == []
    assert processes_mentioning(str(tmp_path)) == []
