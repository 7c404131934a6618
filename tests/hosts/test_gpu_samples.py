"""The GPUs sampled while a run lasts (specdsl/hosts/gpu_samples.py,
specdsl/bench/conditions.py): nvidia-smi's sampling CSV read (the named
reasons, the mask alone, unsupported fields, a line cut short), each GPU
summarised, a slowdown named, and the sampler run through a real Host
against the nvidia-smi double (tests/apply/nvidia_smi_double.py, first on
PATH) with a new driver's field names, an old one's, a broken one, none."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from specdsl.bench.conditions import GpuWatch, slowdown_reason
from specdsl.hosts import LocalHost
from specdsl.hosts import gpu_samples as gs

HERE = Path(__file__).parent
DOUBLE = HERE.parent / "apply" / "nvidia_smi_double.py"
DATA = HERE.parent / "apply" / "data"


def wait_until(ok, seconds: float = 15.0) -> None:
    """Until `ok()` (a loaded machine starts the double's Python slowly)."""
    deadline = time.monotonic() + seconds
    while not ok():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def rows_in(path: Path) -> int:
    return len(gs.parse_samples(path.read_text(), strict=False)) if path.exists() else 0


def install(tmp_path: Path, monkeypatch, **config) -> None:
    bin_dir = tmp_path / "smi-bin"
    bin_dir.mkdir(exist_ok=True)
    exe = bin_dir / "nvidia-smi"
    exe.write_text(f"#!/bin/sh\nexec {sys.executable} {DOUBLE} \"$@\"\n")
    exe.chmod(0o755)
    cfg = tmp_path / "smi.json"
    cfg.write_text(json.dumps(config))
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("NVIDIA_SMI_DOUBLE", str(cfg))


def test_the_recorded_rows_are_read_with_their_reasons():
    steady = gs.parse_samples((DATA / "h200-samples.csv").read_text())
    capped = gs.parse_samples((DATA / "h200-samples-power-cap.csv").read_text())
    assert len(steady) == len(capped) == 10
    first = steady[0]
    assert (first.index, first.sm_mhz, first.mem_mhz, first.power_w, first.temp_c, first.util_pct, first.mask) == (
        0, 1980.0, 3201.0, 78.41, 34.0, 0.0, 0x1)
    assert all(s.reasons == () for s in steady)  # idle (0x1) is no slowdown
    assert [s.reasons for s in capped].count(("sw_power_cap",)) == 7
    assert capped[0].power_w == 699.12 and capped[0].sm_mhz == 1755.0


def test_the_mask_alone_says_the_reasons_and_unreadable_lines_are_skipped():
    rows = ("0, 1410, 3201, 700.00, 88, 100, 0x0000000000000044, [N/A], [N/A], [N/A], [N/A], [N/A]\n"
            "1, [N/A], [N/A], [Not Supported], 40, 0, [N/A], Not Active, Active, Not Active, Not Active, Not Active\n"
            "0, 1980, 3201, 41")  # the last line, cut short when the sampler stopped
    a, b = gs.parse_samples(rows)
    assert a.reasons == ("hw_thermal_slowdown", "sw_power_cap")
    assert (b.sm_mhz, b.power_w, b.mask, b.reasons) == (None, None, None, ("sw_thermal_slowdown",))
    assert gs.parse_samples("") == []
    with pytest.raises(gs.SampleError, match="printed no GPU row"):
        gs.parse_samples("Failed to initialize NVML: Driver/library version mismatch\n")


def test_a_summary_per_gpu_and_the_slowdown_named():
    samples = gs.parse_samples((DATA / "h200-samples-power-cap.csv").read_text())
    other = [gs.Sample(1, 1980.0, 3201.0, 400.0, 40.0, 99.0, 0x0)] * 3
    summary = gs.summarize(samples + other)
    gpu0, gpu1 = summary["gpus"]
    assert gpu0 == {"index": 0, "samples": 10, "sm_mhz_min": 1695.0, "sm_mhz_median": 1762.5, "mem_mhz_median": 3201.0,
                    "power_w_max": 700.91, "temp_c_max": 56.0, "util_pct_median": 100.0, "reasons": {"sw_power_cap": 7}}
    assert gpu1["reasons"] == {} and gpu1["sm_mhz_min"] == 1980.0
    assert slowdown_reason(summary) == (
        "gpu-slowdown: GPU 0: sw_power_cap in 7 of 10 samples (SM clock 1695-1762.5 MHz min-median, power up to 700.91 W,"
        " 56 C at most): the GPU slowed its clocks during the run, its numbers are not the configuration's")
    only1 = gs.summarize(samples + other, ids=(1,))
    assert [g["index"] for g in only1["gpus"]] == [1] and slowdown_reason(only1) == ""
    assert slowdown_reason(gs.summarize([])) == ""  # a run too short for a sample: nothing to say


def test_a_watch_samples_a_run_through_the_host(tmp_path, monkeypatch):
    install(tmp_path, monkeypatch, gpus=2, samples="power-cap")
    host = LocalHost()
    smi, fields = gs.probe(host, tmp_path)
    assert fields == gs.FIELDS and Path(smi).name == "nvidia-smi"
    watch = GpuWatch(host, smi, fields, tmp_path, ids=(1,))
    watch.begin(3)
    # three samples of both GPUs: the recorded rows cap the power in 2 of the first 3, most of the run
    wait_until(lambda: rows_in(tmp_path / "run-3.gpu.csv") >= 6)
    sampler = watch._sampler._handle  # the nvidia-smi process, in its own group
    assert host.alive(sampler)
    record, why = watch.end(3)
    assert host.group_pids(sampler.pgid) == []  # stopped with its run
    assert record["sampled"] == "nvidia-smi" and record["file"] == str(tmp_path / "run-3.gpu.csv")
    [gpu] = record["gpus"]
    assert gpu["index"] == 1 and gpu["samples"] >= 3 and gpu["reasons"]["sw_power_cap"] >= 2
    assert why.startswith("gpu-slowdown: GPU 1: sw_power_cap in ")
    assert "\n1, 1755, 3201, 699.12, 52, 100, 0x0000000000000004" in (tmp_path / "run-3.gpu.csv").read_text()


def test_an_old_driver_is_asked_by_the_old_names(tmp_path, monkeypatch):
    install(tmp_path, monkeypatch, gpus=1, new_field=False)
    smi, fields = gs.probe(LocalHost(), tmp_path)
    assert fields == gs.OLD_FIELDS and "clocks_throttle_reasons.sw_power_cap" in fields
    watch = GpuWatch(LocalHost(), smi, fields, tmp_path)
    watch.begin(0)
    wait_until(lambda: rows_in(tmp_path / "run-0.gpu.csv") >= 1)
    record, why = watch.end(0)
    assert record["gpus"][0]["samples"] >= 1 and why == ""


def test_no_nvidia_smi_is_not_sampled_and_a_broken_one_says_why(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert gs.probe(LocalHost(), tmp_path) is None
    record, why = GpuWatch.not_sampled("no nvidia-smi on host local").end(0)
    assert record == {"sampled": "not sampled: no nvidia-smi on host local"} and why == ""
    install(tmp_path, monkeypatch, gpus=1, broken=True)
    with pytest.raises(gs.SampleError, match="Driver/library version mismatch"):
        gs.probe(LocalHost(), tmp_path)
    # a sampler that ends at once (the driver broke after the probe): the run is not judged by it
    watch = GpuWatch(LocalHost(), str(tmp_path / "smi-bin" / "nvidia-smi"), gs.FIELDS, tmp_path)
    watch.begin(0)
    handle = watch._sampler._handle
    wait_until(lambda: not LocalHost().alive(handle))
    record, why = watch.end(0)
    assert record["sampled"].startswith("not sampled: nvidia-smi ended at once: Failed to initialize NVML") and why == ""


def test_a_power_cap_now_and_then_is_how_a_gpu_bound_run_runs():
    """Real samples of one measured run on the H200 (vLLM 0.26.0, an 8B-shaped
    model at 32 streams, 2026-12-03): the power cap in 6 of 46 samples, the
    median SM clock at its maximum. The run stands; its record keeps the
    count. The same cap for most of a run (the recorded capped rows, 7 of
    10) or any thermal slowdown makes a run invalid."""
    bound = gs.summarize(gs.parse_samples((DATA / "h200-samples-gpu-bound.csv").read_text(), strict=False))
    gpu = bound["gpus"][0]
    assert gpu["samples"] == 46 and gpu["reasons"] == {"sw_power_cap": 6}
    assert gpu["sm_mhz_median"] == 1980.0 and gpu["sm_mhz_min"] == 1605.0 and gpu["power_w_max"] > 600
    assert slowdown_reason(bound) == ""
    capped = gs.summarize(gs.parse_samples((DATA / "h200-samples-power-cap.csv").read_text()))
    assert slowdown_reason(capped).startswith("gpu-slowdown: GPU 0: sw_power_cap in 7 of 10 samples")
    hot = {"gpus": [dict(gpu, reasons={"sw_power_cap": 6, "sw_thermal_slowdown": 1})]}
    assert slowdown_reason(hot).startswith("gpu-slowdown: GPU 0: sw_thermal_slowdown in 1 of 46 samples")
