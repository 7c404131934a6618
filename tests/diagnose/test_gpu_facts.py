"""Diagnose compares the GPUs each arm ran on, as its host's preflight
recorded them: through a real apply with the nvidia-smi test double
(tests/apply/nvidia_smi_double.py first on PATH), and from recorded state
for the facts that double does not vary (model, driver, throttling, clocks)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from specdsl.cli.main import main
from specdsl.state import RunRecord, State, write_state

HERE = Path(__file__).parent
DOUBLE = str(HERE / "bisect_double.py")
PROBE = str(HERE.parent / "apply" / "walk_probe.py")
SMI = HERE.parent / "apply" / "nvidia_smi_double.py"


def _spec() -> str:
    def server(name):  # the two differ in a flag: the candidate is measured, not reused as the same server
        argv = ", ".join(json.dumps(a) for a in [sys.executable, DOUBLE, "{port}"])
        return (f'server "{name}" {{\n  engine = "command"\n  model = "m"\n  command = [{argv}]\n'
                f'  args = {{ note = "{name}" }}\n  gpus = 1\n  ready_timeout = 30s\n}}\n')

    probe = ", ".join(json.dumps(a) for a in [sys.executable, PROBE, "{base_url}"])
    return ('host "g" {\n  gpus = 1\n  allow_busy_gpus = true\n}\nstack "sys" {\n  python = "system"\n}\n'
            + server("b") + server("c")
            + f'workload "w" {{\n  command = [{probe}]\n  runs = 1\n  max_runs = 1\n  timeout = 60s\n'
            '  metric "tps" { regex = "tps: ([0-9.]+)" }\n}\n'
            'experiment "base" {\n  host = host.g\n  stack = stack.sys\n  server = server.b\n  workload = workload.w\n}\n'
            'experiment "cand" {\n  host = host.g\n  stack = stack.sys\n  server = server.c\n  workload = workload.w\n}\n')


def test_another_job_on_the_candidates_gpu_ranks_first(tmp_path, monkeypatch, capsys, system_env_root):
    bin_dir = tmp_path / "smi-bin"
    bin_dir.mkdir()
    exe = bin_dir / "nvidia-smi"
    exe.write_text(f"#!/bin/sh\nexec {sys.executable} {SMI} \"$@\"\n")
    exe.chmod(0o755)
    smi = tmp_path / "smi.json"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("NVIDIA_SMI_DOUBLE", str(smi))
    monkeypatch.setenv("SPECDSL_ENV_ROOT", str(system_env_root))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "g.spec").write_text(_spec())
    smi.write_text(json.dumps({"gpus": 1}))
    assert main(["apply", "g.spec", "--yes", "--target", "base"]) == 0
    # later, another job holds the GPU (the host allows busy GPUs): the candidate is measured beside it
    smi.write_text(json.dumps({"gpus": 1, "busy": {"0": 4096}}))
    assert main(["apply", "g.spec", "--yes", "--target", "cand"]) == 0
    capsys.readouterr()
    assert main(["diff", "base", "cand", "g.spec", "--json"]) == 0
    diffs = json.loads(capsys.readouterr().out)["differences"]
    host = [(d["key"], d["baseline"], d["candidate"], d["tier"]) for d in diffs if d["category"] == "host"]
    # the run's own snapshots: the other job was there at its start and still at its end
    assert host == [("gpu[0].memory_used_mib", "0", "4096", 1), ("gpu[0].processes", "0", "1", 1),
                    ("gpu[0].processes_end", "0", "1", 1)]
    assert [d["key"] for d in diffs[:2]] == ["gpu[0].memory_used_mib", "gpu[0].processes"]  # nothing ranks above them
    assert main(["diff", "base", "cand", "g.spec"]) == 0
    out = capsys.readouterr().out
    assert "1. host.gpu[0].memory_used_mib: 0 -> 4096  (memory in use before the server started" in out
    assert "host.gpu[0].processes: 0 -> 1  (another job's processes on the arm's GPU" in out


def _gpu(index, name="NVIDIA H200", driver="570.124.06", throttle="0x1", max_clock=1980.0, clock=345.0, used=1.0,
         processes=()):
    return {"index": index, "uuid": f"GPU-{index}", "name": name, "driver": driver, "memory_used_mib": used,
            "memory_total_mib": 143771.0, "utilization_pct": 0.0, "clock_sm_mhz": clock, "clock_max_sm_mhz": max_clock,
            "throttle_mask": throttle, "processes": list(processes)}


def _record(state_dir: Path, base_gpus, cand_gpus, base_devices="0", cand_devices="0", skip=(),
            one_second=False) -> None:
    """Two applies (base, then cand): each a preflight, a launch and a
    benchmark; `one_second`: all in the same second (quick applies)."""
    runs = []
    for i, (name, gpus, devices) in enumerate((("base", base_gpus, base_devices), ("cand", cand_gpus, cand_devices))):
        at = "2026-12-01T10:00:" if one_second else f"2026-12-01T10:{i}0:"
        facts = {"nvidia_smi": "/usr/bin/nvidia-smi", "gpu_count": len(gpus), "gpus": json.dumps(gpus),
                 "gpu_model": ", ".join(sorted({g["name"] for g in gpus})),
                 "driver_version": ", ".join(sorted({g["driver"] for g in gpus}))}
        runs += [RunRecord(id=f"pre{i}", step="preflight.g", identity="pre", experiment=name, status="completed",
                           started=at + "00Z", effective=facts),
                 RunRecord(id=f"launch{i}", step=f"launch.{name}", identity=f"l{i}", experiment=name, status="completed",
                           started=at + ("00Z" if one_second else "01Z"), effective={"CUDA_VISIBLE_DEVICES": devices},
                           argv=("/usr/bin/python3", "srv.py", "--port", "1")),
                 RunRecord(id=f"bench{i}", step=f"benchmark.{name}", identity=f"b{i}", experiment=name,
                           status="completed", started=at + ("00Z" if one_second else "02Z"),
                           metrics={"tps": 100.0 - 10 * i}, runs=1)]
    state = State.new()
    for r in runs:
        if r.id not in skip:
            state = state.with_run(r)
    write_state(state_dir, state)


def _host_diffs(state_dir: Path, capsys):
    capsys.readouterr()
    assert main(["diff", "bench0", "bench1", "--state", str(state_dir), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    return [(d["key"], d["baseline"], d["candidate"], d["tier"]) for d in doc["differences"] if d["category"] == "host"], doc


def test_each_run_reads_its_own_applys_preflight_within_one_second(tmp_path, capsys):
    """Two quick applies in one second (times are to the second): each arm
    reads the preflight recorded before its own launch, not the other's
    (CI once read the baseline's for the candidate and lost the busy GPU)."""
    _record(tmp_path, [_gpu(0, used=0.0)], [_gpu(0, used=4096.0, processes=[{"pid": 7}])], one_second=True)
    host, _ = _host_diffs(tmp_path, capsys)
    assert ("gpu[0].memory_used_mib", "0", "4096", 1) in host, host


def test_an_identical_host_shows_nothing(tmp_path, capsys):
    _record(tmp_path, [_gpu(0), _gpu(1)], [_gpu(0), _gpu(1, used=900.0, processes=[{"pid": 7}])])
    host, doc = _host_diffs(tmp_path, capsys)
    assert host == []  # the busy GPU 1 is not the one either arm ran on
    assert not any("GPU facts" in n for n in doc["notes"])


def test_model_driver_throttling_and_clocks_by_rank(tmp_path, capsys):
    # the candidate ran on GPU 1 of a machine with another model and driver, throttled by heat
    base = [_gpu(0), _gpu(1)]
    cand = [_gpu(0, name="NVIDIA B200", driver="580.65.06"),
            _gpu(1, name="NVIDIA B200", driver="580.65.06", throttle="0x41", max_clock=1965.0, clock=1200.0, used=3.0)]
    _record(tmp_path, base, cand, cand_devices="1")
    host, _ = _host_diffs(tmp_path, capsys)
    assert host == [
        ("driver_version", "570.124.06", "580.65.06", 1),
        ("gpu[0].throttle", "none", "hw_thermal_slowdown", 1),
        ("gpu_model", "NVIDIA H200", "NVIDIA B200", 1),
        ("gpu[0].clock_max_sm_mhz", "1980", "1965", 5),
        ("devices", "0", "1", 9),
        ("gpu[0].clock_sm_mhz", "345", "1200", 9),
    ]  # memory in use 1 -> 3 MiB (an idle GPU's) is not a difference


def test_a_side_without_gpu_facts_is_a_note_not_a_difference(tmp_path, capsys):
    _record(tmp_path, [_gpu(0)], [_gpu(0, used=5000.0)], skip=("pre0",))
    host, doc = _host_diffs(tmp_path, capsys)
    # the baseline's launch came before any preflight that recorded facts
    assert host == [] and any("bench0: no GPU facts recorded" in n for n in doc["notes"])
