"""A server killed (-9) in the middle of its benchmark inside a Slurm job of
the test cluster (cluster.py): the job's benchmark fails, the apply exits 5
naming the server, its exit and the job; a re-apply finishes the work.
(A job that dies itself, cancelled, its node down, past its time: see
test_slurm_apply.py.)"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import urllib.request
from pathlib import Path

from apply_helpers import cli_env, processes_mentioning
from slurm_helpers import GATED, wait_for
from specdsl.state import load_state


def _spec(gates: Path) -> str:
    return textwrap.dedent(f'''
        host "cluster" {{
          slurm = {{ partition = "debug", gres = "gpu:1", time = 5m }}
        }}
        stack "sys" {{
          python = "system"
        }}
        server "s" {{
          engine        = "command"
          model         = "m"
          command       = ["{sys.executable}", "{GATED}", "{{port}}", "{gates}"]
          ready_timeout = 10m
          ready_url     = "/metrics"
        }}
        workload "w" {{
          input_len   = 8
          output_len  = 16
          requests    = 60
          concurrency = 1
          warmup      = 0
          timeout     = 5s
        }}
        experiment "e" {{
          host     = host.cluster
          stack    = stack.sys
          server   = server.s
          workload = workload.w
          assert "none-failed" {{ failed == 0 }}
        }}
    ''')


def _served(port: str) -> int:
    try:
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    except OSError:
        return 0
    return int(next(line.split()[1] for line in text.splitlines() if line.startswith("double:requests_total")))


def _serving(gates: Path):
    """(pid, port) of the server double once it has served a few requests."""
    for line in processes_mentioning(str(gates)):
        pid, cmd = line.split(":", 1)
        words = cmd.split()
        if str(GATED) in words:
            port = words[words.index(str(GATED)) + 1]
            if _served(port) >= 3:
                return int(pid), port
    return None


def test_a_server_killed_in_its_job_fails_the_benchmark_and_a_reapply_finishes(fresh, tmp_path):
    gates = tmp_path / "gates"
    gates.mkdir()
    (tmp_path / "m.spec").write_text(_spec(gates))
    env = cli_env(**fresh.env())
    argv = [sys.executable, "-m", "specdsl.cli.main", "apply", "m.spec", "--yes"]
    proc = subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            start_new_session=True)
    try:
        pid, _port = wait_for(lambda: _serving(gates), 180, "the server in its job under load")
        pgid = os.getpgid(pid)
        os.killpg(pgid, signal.SIGKILL)
        out, _ = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 5, out
    assert f"process group {pgid}) died at " in out and "killed by signal 9" in out, out
    assert "slurm job" in out
    state = load_state(tmp_path / ".specdsl")
    [failed] = [r for r in state.runs if r.step == "benchmark.e" and r.status == "failed"]
    assert failed.job and "died at" in failed.reason
    again = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=240, env=env)
    assert again.returncode == 0, again.stdout + again.stderr
    runs = [r for r in load_state(tmp_path / ".specdsl").runs if r.step == "benchmark.e"]
    assert runs[-1].status == "completed" and runs[-1].runs == 1
    assert processes_mentioning(str(gates)) == []
