"""A broken run over SSH (a real sshd on loopback): the connection's master
killed in the middle of a benchmark, then the server killed (-9) on the
host in the middle of the next one. Each fails its step (exit 5) naming the
host or the server and the cause; state keeps the runs that ended before;
the last apply finishes the work. The server is the paced streaming double
(tests/bench/timed_server.py), started on the host as a `command` server."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from specdsl.state import load_state
from sshd import processes_mentioning
from test_ssh_apply import apply_env, lit

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
TIMED = HERE.parents[1] / "bench" / "timed_server.py"


def _spec(tmp_path) -> str:
    argv = ["python3", str(TIMED), "--port", "{port}", "--ttft-ms", "2", "--itl-ms", "5",
            "--pids", str(tmp_path / "pids")]
    return f'''host "loop" {{
  ssh     = "specdsl-test"
  workdir = {lit(str(tmp_path / "workdir"))}
}}
stack "sys" {{
  python = "system"
}}
server "paced" {{
  engine        = "command"
  model         = "m"
  command       = [{", ".join(lit(a) for a in argv)}]
  ready_timeout = 60s
}}
workload "w" {{
  input_len   = 8
  output_len  = 8
  requests    = 30
  concurrency = 1
  runs        = 2
  warmup      = 0
  timeout     = 2s
}}
experiment "e" {{
  host     = host.loop
  stack    = stack.sys
  server   = server.paced
  workload = workload.w
  assert "few-failures" {{ failed <= 1 }}
}}
'''


def _state(tmp_path):
    try:
        return load_state(tmp_path / ".specdsl")
    except Exception:  # mid-rename: ask again
        return None


def _wait(predicate, what: str, timeout: float = 90.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def _served(base_url: str) -> int:
    try:
        text = urllib.request.urlopen(base_url + "/metrics", timeout=5).read().decode()
    except OSError:
        return 0
    return int(next(line.split()[1] for line in text.splitlines() if line.startswith("double:requests_total")))


def _mid_run(tmp_path, served: int):
    """The recorded server once it has served `served` requests."""
    record = _wait(lambda: (s := _state(tmp_path)) is not None and s.servers and s.servers[0].status == "ready"
                   and s.servers[0], "a ready server")
    _wait(lambda: _served(record.base_url) >= served, f"{served} requests served")
    return record


def _master_of(apply_pid: int) -> int:
    """The ssh master (`ssh -M -N`) the apply started."""
    for line in processes_mentioning("specdsl-ssh-"):
        pid, cmd = line.split(":", 1)
        if " -M " in cmd and " -N " in cmd:
            stat = Path(f"/proc/{pid}/stat").read_text()
            if int(stat[stat.rindex(")") + 2:].split()[1]) == apply_pid:
                return int(pid)
    raise AssertionError(f"no ssh master of apply {apply_pid}")


def _start(tmp_path, env):
    return subprocess.Popen([sys.executable, "-m", "specdsl.cli.main", "apply", "e.spec", "--yes"], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)


def test_a_dropped_master_then_a_killed_server_over_ssh(sshd, tmp_path):
    (tmp_path / "e.spec").write_text(_spec(tmp_path))
    env = apply_env(sshd)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    proc = _start(tmp_path, env)
    try:
        _mid_run(tmp_path, 33)  # 3 requests into the second run
        master = _master_of(proc.pid)
        os.kill(master, signal.SIGKILL)
        out, _ = proc.communicate(timeout=180)
    finally:
        proc.kill()
    assert proc.returncode == 5, out
    assert "the SSH connection to host loop (specdsl-test) dropped at " in out, out
    assert f"(its master, pid {master}, killed by signal 9" in out and "the requests through it failed" in out
    state = load_state(tmp_path / ".specdsl")
    [failed] = [r for r in state.runs if r.step == "benchmark.e" and r.status == "failed"]
    assert "the SSH connection to host loop (specdsl-test) dropped" in failed.reason
    assert state.result(failed.identity).runs == 1  # the run before the drop, kept

    # the next apply makes the one run missing: the server killed on the host in it
    proc = _start(tmp_path, env)
    try:
        record = _mid_run(tmp_path, 3)
        os.killpg(record.pgid, signal.SIGKILL)  # loopback: the host's processes are this machine's
        out, _ = proc.communicate(timeout=180)
    finally:
        proc.kill()
    assert proc.returncode == 5, out
    assert f"server paced (pid {record.pid}, process group {record.pgid}) died at " in out, out
    assert "had already exited (" in out and "server stopped" not in out
    assert "run 1/1: 30 requests" in out  # only the run the drop lost

    done = subprocess.run([sys.executable, "-m", "specdsl.cli.main", "apply", "e.spec", "--yes"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    state = load_state(tmp_path / ".specdsl")
    latest = [r for r in state.runs if r.step == "benchmark.e"][-1]
    assert latest.status == "completed" and latest.runs == 2 and state.result(latest.identity) is latest
    assert not state.servers and processes_mentioning(str(tmp_path / "pids")) == []
