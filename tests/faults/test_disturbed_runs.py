"""A run that was disturbed is not a measurement: a real `specdsl apply`
against the paced streaming double (tests/bench/timed_server.py, a
`command` server) on a machine whose `nvidia-smi` is the test double
(tests/apply/nvidia_smi_double.py, first on PATH) printing H200-shaped
samples, with the software power cap active or not. The GPU is sampled
while each run lasts; a run with a power-cap slowdown is invalid with its
reason, in apply's output and in state. About 10 s."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
TIMED = str(TESTS / "bench" / "timed_server.py")
SMI = TESTS / "apply" / "nvidia_smi_double.py"


@pytest.fixture
def smi(folder, monkeypatch):
    """The nvidia-smi double on PATH for the applies; returns its config writer."""
    bin_dir = folder.path / "smi-bin"
    bin_dir.mkdir()
    exe = bin_dir / "nvidia-smi"
    exe.write_text(f"#!/bin/sh\nexec {sys.executable} {SMI} \"$@\"\n")
    exe.chmod(0o755)
    cfg = folder.path / "smi.json"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("NVIDIA_SMI_DOUBLE", str(cfg))
    return lambda **config: cfg.write_text(json.dumps({"gpus": 1, **config}))


def spec(folder, requests: int = 24) -> None:
    argv = [sys.executable, TIMED, "--port", "{port}", "--ttft-ms", "20", "--itl-ms", "25", "--pids", str(folder.pids)]
    items = ", ".join(f'"{a}"' for a in argv)
    folder.spec.write_text(f'''stack "sys" {{
  python = "system"
}}
server "paced" {{
  engine  = "command"
  model   = "m"
  command = [{items}]
}}
workload "w" {{
  input_len   = 8
  output_len  = 8
  requests    = {requests}
  concurrency = 4
  runs        = 2
  warmup      = 0
}}
experiment "e" {{
  stack    = stack.sys
  server   = server.paced
  workload = workload.w
}}
''')


def bench_result(state):
    latest = [r for r in state.runs if r.step == "benchmark.e"][-1]
    return latest, state.result(latest.identity)


def test_a_run_under_the_power_cap_is_invalid_and_a_steady_one_is_measured(folder, smi):
    smi(samples="power-cap")
    spec(folder)
    first = folder.run("apply", "f.spec", "--yes")
    assert first.returncode == 0, first.out
    # apply's output: the runs, their reason, the count
    assert "benchmark.e: 2 invalid runs, not read by any verdict (run 0: gpu-slowdown: GPU 0: sw_power_cap in " in first.out
    assert "power up to 7" in first.out and "invalid runs: 2." in first.out
    latest, result = bench_result(folder.state())
    assert latest.status == "completed" and latest.runs == 0 and dict(latest.metrics) == {}
    assert [w.split(":")[1].strip() for w in latest.invalid] == ["gpu-slowdown", "gpu-slowdown"]
    during = json.loads(dict(latest.effective)["gpus_during"])
    assert [d["run"] for d in during] == [0, 1]
    for d in during:
        [gpu] = d["gpus"]
        assert d["sampled"] == "nvidia-smi" and gpu["index"] == 0 and gpu["samples"] >= 1
        assert gpu["reasons"]["sw_power_cap"] >= 1 and gpu["power_w_max"] >= 699 and gpu["sm_mhz_min"] < 1980
    doc = json.loads((folder.state_dir / latest.folder / "result.json").read_text())
    assert all(r["invalid"].startswith("gpu-slowdown: GPU 0: sw_power_cap in ") for r in doc["runs"])
    assert all(r["conditions"]["gpu"]["gpus"][0]["reasons"]["sw_power_cap"] >= 1 for r in doc["runs"])
    # the same GPU, steady: a re-apply makes the missing runs, and they are measurements
    smi(samples="steady")
    again = folder.run("apply", "f.spec", "--yes")
    assert again.returncode == 0, again.out
    assert "invalid runs: 0." in again.out and "gpu-slowdown" not in again.out
    latest, result = bench_result(folder.state())
    assert latest is result and latest.runs == 2 and latest.invalid is None and latest.metric("output_throughput") > 0
    during = json.loads(dict(latest.effective)["gpus_during"])
    assert all(d["gpus"][0]["reasons"] == {} and d["gpus"][0]["sm_mhz_median"] == 1980 for d in during)
