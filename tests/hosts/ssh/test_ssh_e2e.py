"""A real `transformers serve` (the tiny model) provisioned and launched on
an ssh host (a real sshd on loopback); the connection dropped mid-apply
(the master killed while a benchmark runs there): the step fails naming the
lost connection and the server is stopped on the host; a re-apply resumes
and benchmarks the server with the built-in load generator (two launches
in all)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from specdsl.state import load_state
from sshd import processes_mentioning
from test_ssh_apply import REPO, apply_env, lit, specdsl

pytestmark = pytest.mark.e2e

TINY = REPO / "examples" / "quickstart" / "tiny-llama"
# waits while the block file exists (after saying it runs), then prints {"v": 1}
SLOW = ("import os, sys, time\n"
        "open(sys.argv[1], 'w').write('running')\n"
        "while os.path.exists(sys.argv[2]): time.sleep(0.1)\n"
        "print(chr(123) + '\"v\": 1' + chr(125))\n")


def workdir() -> Path:
    """Environments on the ssh host outlive the session (reused by identity)."""
    cache = os.environ.get("SPECDSL_TEST_ENV_CACHE") or Path.home() / ".cache" / "specdsl" / "test-envs"
    return Path(cache) / "ssh-workdir"


def spec(tmp_path: Path, *, builtin: bool) -> str:
    """The slow command workload's experiment, and with `builtin` the
    built-in load generator's too (one server serves both: one launch)."""
    text = f'''
host "loop" {{
  ssh     = "specdsl-test"
  workdir = {lit(str(workdir()))}
}}
stack "serve" {{
  python   = "3.11"
  packages = ["transformers[serving]==5.19.0", "torch==2.13.0", "requests"]
  index    = ["https://download.pytorch.org/whl/cpu"]
}}
server "tiny" {{
  engine        = "transformers"
  model         = {lit(str(TINY))}
  ready_timeout = 3m
}}
workload "w" {{
  input_len   = 16
  output_len  = 8
  requests    = 8
  concurrency = 4
}}
'''
    if builtin:
        text += '''
experiment "e" {
  host     = host.loop
  stack    = stack.serve
  server   = server.tiny
  workload = workload.w
}
'''
    text += f'''
workload "slow" {{
  command = ["python3", "-c", {lit(SLOW)}, {lit(str(tmp_path / "running"))}, {lit(str(tmp_path / "block"))}]
  timeout = 5m
  metric "v" {{ json = "v" }}
}}
experiment "slow" {{
  host     = host.loop
  stack    = stack.serve
  server   = server.tiny
  workload = workload.slow
}}
'''
    return text


def _masters_of(pid: int) -> list[int]:
    """The ssh master processes (`ssh -M -N`) the process `pid` started."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_text()
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        ppid = int(next(line.split()[1] for line in status.splitlines() if line.startswith("PPid:")))
        if ppid == pid and argv[0].endswith(b"ssh") and b"-M" in argv and b"-N" in argv:
            found.append(int(entry))
    return found


def _left_on_host() -> list[str]:
    return [line for line in processes_mentioning(str(TINY)) if " serve " in line]


def test_a_dropped_connection_then_a_real_server_benchmarked_over_ssh(sshd, tmp_path):
    env = apply_env(sshd)
    # the connection drops while a benchmark runs on the host (the real server up)
    (tmp_path / "block").write_text("")
    (tmp_path / "e.spec").write_text(spec(tmp_path, builtin=False))
    proc = subprocess.Popen([sys.executable, "-m", "specdsl.cli.main", "apply", "e.spec", "--yes"], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 600
        while not (tmp_path / "running").exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read() if proc.poll() is not None else ""
            time.sleep(0.2)
        masters = _masters_of(proc.pid)
        assert len(masters) == 1, masters
        os.kill(masters[0], 9)
        dropped, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 9)
            proc.wait()
    assert proc.returncode == 5, dropped
    # the server watch names the host, the time and the cause (its master, killed)
    assert "benchmark.slow" in dropped and "the SSH connection to host loop (specdsl-test) dropped at" in dropped, dropped
    assert "(its master, pid " in dropped and "killed by signal 9" in dropped, dropped
    state = load_state(tmp_path / ".specdsl")
    assert [r for r in state.runs if r.step == "benchmark.slow" and r.status == "failed"]
    assert not state.servers and _left_on_host() == [], "the server was stopped on the host after the drop"
    assert len(state.environments) == 1, "nothing recorded was lost"
    env_record = state.environments[0]
    assert env_record.host == "ssh:specdsl-test" and env_record.path.startswith(str(workdir() / "envs"))

    # a re-apply resumes: the environment stands, the failed benchmark runs, and the
    # built-in load generator measures the same server through the forwarded port
    (tmp_path / "block").unlink()
    (tmp_path / "e.spec").write_text(spec(tmp_path, builtin=True))
    again = specdsl("apply", "e.spec", "--yes", cwd=tmp_path, env=env, timeout=900)
    out = again.stdout + again.stderr
    assert again.returncode == 0, out
    assert "= provision.serve" in out and "1 server launch" in out, out
    state = load_state(tmp_path / ".specdsl")
    assert [r for r in state.runs if r.step == "benchmark.slow" and r.status == "completed"]
    bench = next(r for r in state.runs if r.step == "benchmark.e" and r.status == "completed")
    assert bench.metric("completed") == 8 and bench.metric("median_ttft_ms") > 0
    assert not state.servers and _left_on_host() == []
