"""Every command that starts servers asks first at a terminal, as apply
does, and takes --yes: calibrate and bisect (issue 36). At a terminal (a
real pty as stdin) an answer other than `yes` cancels with nothing run; a
stdin that is not a terminal, without --yes, is refused with the reason.
The commands run as the user runs them, in their own process; the servers
of the apply that records a FAIL for bisect are a stdlib streaming double
(tests/apply/decision_double.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from specdsl.cli.main import main
from specdsl.state import load_state

DOUBLE = str(Path(__file__).parents[1] / "apply" / "decision_double.py")


def _server(name: str, life: Path) -> str:
    argv = [sys.executable, DOUBLE, "{port}", "--life", str(life), "--ttft-ms", "1", "--itl-ms", "1"]
    items = ", ".join(json.dumps(a) for a in argv)
    return f'server "{name}" {{\n  engine = "command"\n  model = "m"\n  command = [{items}]\n  ready_timeout = 30s\n}}\n'


def _spec(life: Path) -> str:
    # cand's check cannot pass (100 times its baseline's throughput): a FAIL to bisect
    return ('host "a" {}\nstack "sys" {\n  python = "system"\n}\n' + _server("base", life) + _server("cand", life) + '''
workload "w" {
  requests = 2
  runs     = 2
  max_runs = 2
}
experiment "base" {
  host     = host.a
  stack    = stack.sys
  server   = server.base
  workload = workload.w
}
experiment "cand" {
  host     = host.a
  stack    = stack.sys
  server   = server.cand { env = { CAND = "1" } }
  workload = workload.w
  baseline = experiment.base
  assert "faster" { output_throughput >= baseline.output_throughput * 100 }
}
''')


@pytest.fixture
def spec(tmp_path, monkeypatch, system_env_root):
    monkeypatch.setenv("SPECDSL_ENV_ROOT", str(system_env_root))
    path = tmp_path / "x.spec"
    path.write_text(_spec(tmp_path / "life.txt"))
    return path


def _specdsl(*args: str, terminal_answer: str | None, cwd: Path, timeout: float = 120) -> tuple[int, str, str]:
    """`specdsl ARGS` in its own process (and process group): stdin a pty
    that holds `terminal_answer` when one is given, else /dev/null."""
    env = {**os.environ, "NO_COLOR": "1"}
    if terminal_answer is None:
        proc = subprocess.run([sys.executable, "-m", "specdsl.cli.main", *args], stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, cwd=cwd, env=env, timeout=timeout, start_new_session=True)
        return proc.returncode, proc.stdout, proc.stderr
    primary, secondary = os.openpty()
    try:
        proc = subprocess.Popen([sys.executable, "-m", "specdsl.cli.main", *args], stdin=secondary,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd, env=env,
                                start_new_session=True)
        os.close(secondary)
        os.write(primary, terminal_answer.encode() + b"\n")  # typed ahead: the terminal holds it for input()
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.communicate()
            raise
        return proc.returncode, out, err
    finally:
        os.close(primary)


def _runs(spec: Path) -> int:
    state = spec.parent / ".specdsl"
    return len(load_state(state).runs) if (state / "state.toml").exists() else 0


def test_calibrate_asks_at_a_terminal_and_refuses_without_one(spec):
    code, out, err = _specdsl("calibrate", "cand", str(spec), "--pairs", "2", terminal_answer="no", cwd=spec.parent)
    assert code == 1, err
    assert "Run 2 A/A pairs? Only 'yes' is accepted: " in out and "Calibrate cancelled." in out
    code, out, err = _specdsl("calibrate", "cand", str(spec), "--pairs", "2", terminal_answer=None, cwd=spec.parent)
    assert code == 1
    assert "specdsl: error: calibrate runs servers: confirm with --yes (-auto-approve) (stdin is not a terminal)" in err
    code, out, err = _specdsl("calibrate", "cand", str(spec), "--pairs", "2", "-input=false", terminal_answer="yes",
                              cwd=spec.parent)
    assert code == 1 and "(-input=false: no question is asked)" in err
    assert _runs(spec) == 0  # nothing was run


def test_bisect_asks_at_a_terminal_and_refuses_without_one(spec, capsys):
    assert main(["apply", str(spec), "--yes"]) == 3, capsys.readouterr().out  # cand FAILs
    capsys.readouterr()
    runs = _runs(spec)
    code, out, err = _specdsl("bisect", "cand", str(spec), terminal_answer="no", cwd=spec.parent)
    assert code == 1, err
    assert "Bisecting cand against base: " in out
    assert "Run these experiments? Only 'yes' is accepted: " in out and "Bisect cancelled." in out
    code, out, err = _specdsl("bisect", "cand", str(spec), terminal_answer=None, cwd=spec.parent)
    assert code == 1
    assert "specdsl: error: bisect runs servers: confirm with --yes (-auto-approve) (stdin is not a terminal)" in err
    assert _runs(spec) == runs  # nothing more was run


def test_apply_asks_at_a_terminal(spec):
    code, out, err = _specdsl("apply", str(spec), "--no-refresh", terminal_answer="no", cwd=spec.parent)
    assert code == 1, err
    assert "Apply this plan? Only 'yes' is accepted: " in out and "Apply cancelled." in out
    assert _runs(spec) == 0
