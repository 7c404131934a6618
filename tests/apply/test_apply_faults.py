"""Apply under faults, with real processes: each gives a clear error naming
the step and its log, leaves no process behind, and records what completed."""

import signal
import socket
import textwrap
import time
import uuid

import pytest

from apply_helpers import processes_mentioning, specdsl
from specdsl.state import load_state, locked

pytestmark = pytest.mark.e2e

STACK = 'stack "sys" {\n  python = "system"\n}\n'
WORK = 'workload "w" {\n  requests = 2\n  output_len = 4\n}\n'


def write(folder, server_block, stack=STACK):
    spec = folder / "fault.spec"
    spec.write_text(stack + server_block + WORK + textwrap.dedent('''
        experiment "e" {
          stack    = stack.sys
          server   = server.s
          workload = workload.w
        }
    '''))
    return spec


def run_failing(folder, marker):
    proc = specdsl("apply", "fault.spec", "--yes", cwd=folder, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 5, out
    assert processes_mentioning(marker) == []
    return out, load_state(folder / ".specdsl")


def test_server_that_exits_during_startup(tmp_path):
    marker = f"exit-{uuid.uuid4().hex}"
    write(tmp_path, textwrap.dedent(f'''
        server "s" {{
          engine        = "command"
          model         = "m"
          command       = ["python", "-c", "import sys; print('cannot load weights {marker}'); sys.exit(3)", "{{port}}"]
          ready_timeout = 60s
        }}
    '''))
    out, state = run_failing(tmp_path, marker)
    assert "launch.s" in out and "exited with code 3" in out
    assert f"cannot load weights {marker}" in out  # the log's last lines are shown
    assert "server.log" in out
    failed = [r for r in state.runs if r.step == "launch.s"]
    assert failed and failed[-1].status == "failed"
    assert "skipped because launch.s failed" in out  # its benchmark is abandoned, root cause named once


def test_server_that_never_becomes_ready(tmp_path):
    marker = f"sleep-{uuid.uuid4().hex}"
    write(tmp_path, textwrap.dedent(f'''
        server "s" {{
          engine        = "command"
          model         = "m"
          command       = ["python", "-c", "import time; time.sleep(600)  # {marker}", "{{port}}"]
          ready_timeout = 3s
        }}
    '''))
    started = time.monotonic()
    out, state = run_failing(tmp_path, marker)
    assert time.monotonic() - started < 120
    assert "launch.s" in out and "was not ready within 3s" in out
    assert not state.servers


def test_busy_port(tmp_path):
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen(1)
    port = holder.getsockname()[1]
    try:
        marker = f"port-{uuid.uuid4().hex}"
        write(tmp_path, textwrap.dedent(f'''
            server "s" {{
              engine        = "command"
              model         = "m"
              port          = {port}
              command       = ["python", "-m", "http.server", "{{port}}", "--bind", "127.0.0.1", "--directory", "{marker}"]
              ready_timeout = 10s
            }}
        '''))
        out, _ = run_failing(tmp_path, marker)
        assert "launch.s" in out and f"port {port}" in out and "already in use" in out
    finally:
        holder.close()


def test_package_that_does_not_exist(tmp_path):
    name = f"specdsl-no-such-package-{uuid.uuid4().hex[:8]}"
    write(
        tmp_path,
        'server "s" {\n  engine = "command"\n  model = "m"\n  command = ["true", "{port}"]\n}\n',
        stack=f'stack "sys" {{\n  packages = ["{name}==9.9.9"]\n}}\n',
    )
    out, state = run_failing(tmp_path, name)
    assert "provision.sys" in out and name in out
    assert "command:" in out  # the exact installer command is shown
    assert "skipped because provision.sys failed" in out
    assert [r.status for r in state.runs if r.step == "provision.sys"] == ["failed"]


def test_state_locked_by_another_process(tmp_path):
    write(tmp_path, 'server "s" {\n  engine = "command"\n  model = "m"\n  command = ["true", "{port}"]\n}\n')
    with locked(tmp_path / ".specdsl", "test holds it") as info:
        proc = specdsl("apply", "fault.spec", "--yes", cwd=tmp_path, timeout=120)
    assert proc.returncode == 6, proc.stdout + proc.stderr
    assert info.id in proc.stderr and "force-unlock" in proc.stderr


KILL_SPEC = '''
stack "serve" {
  python   = "3.11"
  packages = ["transformers[serving]==5.19.0", "torch==2.13.0", "requests"]
}
server "tiny" {
  engine = "transformers"
  model  = "MODEL"
}
workload "long" {
  input_len   = 16
  output_len  = 64
  requests    = 400
  concurrency = 4
  runs        = 3
  warmup      = 0
}
experiment "e" {
  stack    = stack.serve
  server   = server.tiny
  workload = workload.long
}
'''


def _start_long_apply(tmp_path, tiny_model):
    import shutil

    from apply_helpers import start_specdsl

    # a private copy of the model: its path marks this test's server processes
    shutil.copytree(tiny_model, tmp_path / "model")
    (tmp_path / "long.spec").write_text(KILL_SPEC.replace("MODEL", "./model"))
    proc = start_specdsl("apply", "long.spec", "--yes", cwd=tmp_path)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        state = load_state(tmp_path / ".specdsl") if (tmp_path / ".specdsl" / "state.toml").exists() else None
        # recorded "starting" before anything waits on it; "ready" once it answers
        ready = [s for s in state.servers if s.status == "ready"] if state is not None else []
        if ready:
            return proc, ready[0]
        if proc.poll() is not None:
            pytest.fail("apply ended before its server started:\n" + proc.stdout.read())
        time.sleep(0.5)
    proc.kill()
    pytest.fail("the server did not start in time")


def test_interrupt_stops_servers_records_and_resumes(tmp_path, tiny_model):
    proc, server = _start_long_apply(tmp_path, tiny_model)
    time.sleep(2)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 130, out
    assert "interrupted" in out
    state = load_state(tmp_path / ".specdsl")
    assert not state.servers, "the server was torn down"
    assert processes_mentioning(str(tmp_path / "model")) == []
    assert [r.status for r in state.runs if r.step == "provision.serve"] == ["completed"]
    # a re-plan resumes: the environment is reused, the benchmark runs again
    plan = specdsl("plan", "long.spec", "--detailed-exitcode", cwd=tmp_path, timeout=120)
    assert plan.returncode == 2, plan.stdout + plan.stderr
    assert "= provision.serve" in plan.stdout and "> benchmark.e" in plan.stdout
