"""nvidia-smi's answers read through a real Host: the CSV of both queries,
unsupported fields, a driver that knows only the new throttle field name,
busy and throttled GPUs, and a host without nvidia-smi."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from specdsl.hosts import LocalHost
from specdsl.hosts import gpus as smi

DOUBLE = Path(__file__).parent.parent / "apply" / "nvidia_smi_double.py"


def install_smi(tmp_path: Path, monkeypatch, **config) -> Path:
    """An executable `nvidia-smi` (the double) first on PATH, answering from `config`."""
    bin_dir = tmp_path / "smi-bin"
    bin_dir.mkdir(exist_ok=True)
    exe = bin_dir / "nvidia-smi"
    exe.write_text(f"#!/bin/sh\nexec {sys.executable} {DOUBLE} \"$@\"\n")
    exe.chmod(0o755)
    cfg = tmp_path / "smi.json"
    cfg.write_text(json.dumps(config))
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("NVIDIA_SMI_DOUBLE", str(cfg))
    return cfg


def test_parse_rows_with_unsupported_fields():
    text = ("0, GPU-a, NVIDIA H200, 570.124.06, 1, 143771, 0, 345, 1980, 0x0000000000000001\n"
            "1, GPU-b, NVIDIA H200, 570.124.06, [N/A], 143771, [Not Supported], 1980, 1980, 0x0000000000000040\n")
    a, b = smi.parse_gpus(text)
    assert (a.index, a.uuid, a.memory_used_mib, a.clock_max_sm_mhz, a.throttle_mask) == (0, "GPU-a", 1.0, 1980.0, 1)
    assert a.throttled() == [] and a.busy() is None  # idle clocks are not throttling
    assert b.memory_used_mib is None and b.utilization_pct is None and b.throttled() == ["hw_thermal_slowdown"]
    apps = smi.parse_apps("GPU-a, 4242, 1200\nNo running processes found\n")
    assert apps == [smi.GpuProcess("GPU-a", 4242, 1200.0)]
    with pytest.raises(smi.GpuQueryError, match="not a GPU row"):
        smi.parse_gpus("Failed to initialize NVML: Driver/library version mismatch\n")


def test_busy_means_foreign_processes_or_memory():
    gpu = smi.Gpu(0, "GPU-a", "H200", "570", 5000.0, 143771.0, 90.0, 1980.0, 1980.0, 0,
                  processes=(smi.GpuProcess("GPU-a", 7, 5000.0),))
    assert gpu.busy() == "1 process (pid 7)"
    assert gpu.busy({7}) is None  # a server of ours
    bare = smi.Gpu(1, "GPU-b", "H200", "570", 900.0, 143771.0, 0.0, 345.0, 1980.0, 1)
    assert bare.busy() == "900 MiB of memory in use"  # memory without a visible process (another container)


def test_query_through_the_host(tmp_path, monkeypatch):
    install_smi(tmp_path, monkeypatch, gpus=2, busy={"1": 4096}, throttle={"0": "0x20"})
    report = smi.query(LocalHost())
    g0, g1 = report.gpus
    assert g0.throttled() == ["sw_thermal_slowdown"] and g0.busy() is None
    assert g1.busy() == "1 process (pid 424242)" and g1.memory_used_mib == 4096
    facts = report.facts()
    assert facts["gpu_model"] == "NVIDIA H200" and facts["driver_version"] == "570.124.06" and facts["gpu_count"] == 2
    assert facts["gpus"][0]["clock_max_sm_mhz"] == 1980 and facts["gpus"][0]["throttle_mask"] == "0x20"
    json.dumps(facts)  # recordable as it is


def test_a_newer_driver_gets_the_new_field_name(tmp_path, monkeypatch):
    cfg = install_smi(tmp_path, monkeypatch, gpus=1, old_field=False)
    (gpu,) = smi.query(LocalHost()).gpus
    assert gpu.throttle_mask == 1
    calls = Path(str(cfg) + ".calls").read_text()
    assert "clocks_throttle_reasons.active" in calls and "clocks_event_reasons.active" in calls


def test_no_nvidia_smi_is_a_cpu_host(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing there
    assert smi.query(LocalHost()) is None
