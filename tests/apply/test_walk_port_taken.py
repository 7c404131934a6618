"""apply's launch step when a server's port was taken while it started
(real SGLang 0.5.17 on an H200: tests/servers/data/): launched again on a
new port, said in progress and among apply's warnings, and the state and
the run record are those of the second launch."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from specdsl.state import load_state

from test_walk import COMMON, DOUBLE, Recording, apply_spec, failures, workload

TAKEN_ONCE = str(Path(__file__).with_name("taken_once_double.py"))


@pytest.fixture(scope="module")
def env_root(tmp_path_factory):
    return tmp_path_factory.mktemp("envs")


def test_a_launch_whose_port_was_taken_is_made_again_and_warned(tmp_path, env_root):
    life = tmp_path / "life.txt"
    argv = [sys.executable, TAKEN_ONCE, str(tmp_path / "tried"), "{port}",
            sys.executable, DOUBLE, "{port}", "--speed", "10", "--life", str(life)]
    items = ", ".join(f'"{a}"' for a in argv)
    text = COMMON + f'server "s" {{\n  engine = "command"\n  model = "m"\n  command = [{items}]\n  ready_timeout = 60s\n}}\n' \
        + workload(runs=1) + 'experiment "e" {\n  host = host.a\n  stack = stack.sys\n  server = server.s\n  workload = workload.w\n}\n'
    hooks = Recording()
    recorded = []  # the server state holds while its benchmark runs
    hooks.on_start = lambda addr: recorded.extend(load_state(tmp_path / ".specdsl").servers) \
        if addr == "benchmark.e" else None
    _, result, state = apply_spec(tmp_path, text, env_root, hooks=hooks)
    assert result.exit_code() == 0, failures(result)
    (warning,) = [w for w in result.warnings if "was taken" in w]
    said = [m for a, m in hooks.said if a == "launch.s" and "was taken" in m]
    assert said and warning == f"launch.s: {said[0]}"
    ports = re.fullmatch(r"launch\.s: port (\d+) was taken while the server started; launched again on port (\d+)",
                         warning)
    assert ports, warning
    first, second = ports[1], ports[2]
    (run,) = state.runs_of("launch.s")
    assert second in run.argv and first not in run.argv  # the records are the second launch's
    assert [(r.port, r.status) for r in recorded] == [(int(second), "ready")]
    assert [line.split()[1] for line in life.read_text().splitlines() if line.startswith("start")] == [f"10@{second}"]
    assert result.launches == 1


def test_a_paired_arm_whose_port_was_taken_is_made_again_and_warned_by_pair_and_arm(tmp_path, env_root):
    """A paired benchmark starts its arms' servers itself: the same retry,
    and its warning names the pair and the arm."""
    life = tmp_path / "life.txt"
    base = [sys.executable, DOUBLE, "{port}", "--speed", "10", "--life", str(life)]
    cand = [sys.executable, TAKEN_ONCE, str(tmp_path / "tried"), "{port}", *base]
    servers = "".join(f'server "{name}" {{\n  engine = "command"\n  model = "m"\n  command = [{", ".join(chr(34) + a + chr(34) for a in argv)}]\n'
                      f'  ready_timeout = 60s\n}}\n' for name, argv in (("base", base), ("cand", cand)))
    text = COMMON + servers + workload(runs=2) + (
        'experiment "base" {\n  host = host.a\n  stack = stack.sys\n  server = server.base\n  workload = workload.w\n}\n'
        'experiment "cand" {\n  host = host.a\n  stack = stack.sys\n  server = server.cand\n  workload = workload.w\n'
        '  baseline = experiment.base\n  assert "same" { tps >= baseline.tps * 0.5 }\n}\n')
    _, result, _ = apply_spec(tmp_path, text, env_root)
    assert result.exit_code() == 0, failures(result)
    (warning,) = [w for w in result.warnings if "was taken" in w]
    assert re.fullmatch(r"benchmark\.cand pair 1 arm B \(cand\): port \d+ was taken while the server started; "
                        r"launched again on port \d+", warning), warning
    starts = [line for line in life.read_text().splitlines() if line.startswith("start")]
    assert result.launches == len(starts) and result.launches % 2 == 0  # the retry is not another of the walk's launches
