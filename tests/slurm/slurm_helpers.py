"""What the Slurm tests share: the spec of a 3-cell matrix on the test
cluster whose servers are gated doubles, and small waits."""

from __future__ import annotations

import sys
import textwrap
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
GATED = HERE / "gated_double.py"


def spec_text(gates: Path, *, time_limit: str = "5m", extra: str = "", server_args: str = "") -> str:
    ready = "/health" if "fail" in server_args else "/metrics"
    return textwrap.dedent(f'''
        host "cluster" {{
          slurm = {{ partition = "debug", gres = "gpu:1", time = {time_limit}, max_parallel = 3{extra} }}
        }}
        stack "sys" {{
          python = "system"
        }}
        server "s" {{
          engine        = "command"
          model         = "m"
          command       = ["{sys.executable}", "{GATED}", "{{port}}", "{gates}"{server_args}]
          ready_timeout = 10m
          ready_url     = "{ready}"
        }}
        workload "w" {{
          requests   = 2
          output_len = 4
        }}
        experiment "e" {{
          host     = host.cluster
          stack    = stack.sys
          server   = server.s {{ env = {{ CELL = matrix.c }} }}
          workload = workload.w
          matrix   = {{ c = [1, 2, 3] }}
        }}
    ''')


def setup(tmp_path: Path, **kw) -> tuple[Path, Path]:
    gates = tmp_path / "gates"
    gates.mkdir()
    (tmp_path / "m.spec").write_text(spec_text(gates, **kw))
    return tmp_path, gates


def wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError(f"{what} within {timeout}s")


def job_folders(folder: Path) -> list[Path]:
    return sorted((folder / ".specdsl" / "slurm" / "jobs").glob("*")) if (folder / ".specdsl" / "slurm" / "jobs").exists() else []


SLURM_HOST = 'host "cluster" {\n  slurm = { partition = "debug", gres = "gpu:1", time = 10m, max_parallel = 3 }\n}\n'


def serve_matrix_spec(slurm: bool) -> str:
    """Three cells of the tiny model under `transformers serve` (continuous
    batching, its KV cache capped: facts README), one server each: on the
    test cluster (`slurm`) or on this machine."""
    host = SLURM_HOST if slurm else ""
    return host + textwrap.dedent(f'''
        stack "serve" {{
          python   = "3.11"
          packages = ["transformers[serving]==5.19.0", "torch==2.13.0", "requests"]
        }}
        server "tiny" {{
          engine        = "transformers"
          model         = "./tiny-llama"
          ready_timeout = 3m
        }}
        workload "c4" {{
          endpoint    = "completions"
          input_len   = 32
          output_len  = 16
          requests    = 8
          concurrency = 4
        }}
        experiment "cells" {{
          {"host     = host.cluster" if slurm else ""}
          stack    = stack.serve
          server   = server.tiny {{ args = {{ continuous-batching = true, cb-max-memory-percent = matrix.mem }} }}
          workload = workload.c4
          matrix   = {{ mem = [0.02, 0.025, 0.03] }}
          assert "batching on" {{ effective.continuous_batching == true }}
        }}
    ''')


LOGIN = "specdsl-test"  # the loopback sshd's alias (tests/hosts/ssh/sshd.py)


def through_login(text: str, cluster, workdir: Path, *, python: str = sys.executable) -> str:
    """A spec's Slurm host made a login node over SSH: Slurm's commands run
    in the sshd's sessions, with the test cluster's slurm.conf; job folders
    under `workdir` ("the login node's" shared folder)."""
    old = 'host "cluster" {\n  slurm = { '
    assert old in text
    new = (f'host "cluster" {{\n  ssh   = "{LOGIN}"\n  slurm = {{ conf = "{cluster.conf}", python = "{python}", '
           f'workdir = "{workdir}", ')
    return text.replace(old, new)
