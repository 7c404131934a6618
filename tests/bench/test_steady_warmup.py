"""The steady warm-up (specdsl.bench.steady): slices of the workload until
two agree and the server's log shows no compile during them, bounded by
`warmup_time`; a compile inside a measured run makes it invalid. Against
tests/bench/settling_server.py, a real process whose log is a real file
read through the local host (specdsl.servers.jit.LogProbe)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from specdsl.bench import run_benchmark, warm_up
from specdsl.bench.results import Unsettled
from specdsl.hosts import LocalHost
from specdsl.model.config import Workload
from specdsl.servers.jit import LogProbe

HERE = Path(__file__).parent


@pytest.fixture
def settling(tmp_path):
    """start(*args) -> (base URL, a probe of its log); each its own group, killed after."""
    procs = []

    def start(*args: str):
        log = tmp_path / f"server-{len(procs)}.log"
        with open(log, "w") as out:
            proc = subprocess.Popen([sys.executable, str(HERE / "settling_server.py"), *args], stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        procs.append(proc)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            text = log.read_text()
            if text.startswith("PORT "):
                port = int(text.split()[1])
                return f"http://127.0.0.1:{port}", LogProbe(LocalHost(), log, "vllm", "0.26.0")
            time.sleep(0.02)
        raise RuntimeError(f"settling_server did not start: {log.read_text()!r}")

    yield start
    for proc in procs:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=10)


def wl(**kw) -> Workload:
    base = dict(name="t", input_len=4, output_len=8, requests=4, concurrency=2, warmup=0, timeout=10.0, ignore_eos=True,
                warmup_time=20.0, warmup_tolerance=0.15)
    base.update(kw)
    return Workload(**base)


def test_slices_until_the_server_has_settled_and_its_compile_is_behind(settling, tmp_path):
    url, probe = settling("--settle-after", "12", "--cold-slow", "3", "--itl-ms", "8")
    said: list[str] = []
    got = warm_up(wl(), url, "m", tmp_path / "w", jit=probe, progress=said.append)
    assert got["settled"] is True
    # the 12 cold requests all went to the warm-up, and more after them
    assert got["requests"] > 12
    rates = got["slices"]
    assert len(rates) >= 3 and rates[-1] > 2 * rates[0], rates  # cold slices ran at a third of the speed
    assert abs(rates[-1] - rates[-2]) / max(rates[-2:]) <= 0.15
    # the compile line came with the first request, before the two slices that agree
    assert got["jit_lines"] == 1 and "double_kernel" in got["jit"][0] and got["jit"][0].startswith("compile: ")
    assert any(s.startswith("warmup: settled after") and "1 compile line" in s for s in said), said


def test_a_server_that_keeps_slowing_down_is_unsettled_by_the_bound(settling, tmp_path):
    url, probe = settling("--slowdown", "0.04", "--itl-ms", "4")
    began = time.monotonic()
    with pytest.raises(Unsettled) as caught:
        warm_up(wl(warmup_time=1.5, warmup_tolerance=0.01), url, "m", tmp_path / "w", jit=probe)
    took = time.monotonic() - began
    assert 1.5 <= took < 6, took  # bounded: the slice that crossed the bound is the last
    reason = caught.value.reason
    assert reason.startswith("the launch did not settle within warmup_time 1.5s"), reason
    assert "over warmup_tolerance 1.00%" in reason and "tok/s" in reason
    assert caught.value.warmup["settled"] is False and caught.value.log_lines == ()


def test_a_server_that_keeps_compiling_is_unsettled_with_its_log_lines(settling, tmp_path):
    url, probe = settling("--jit-every", "3", "--itl-ms", "4")
    with pytest.raises(Unsettled) as caught:
        warm_up(wl(warmup_time=1.0, warmup_tolerance=0.5), url, "m", tmp_path / "w", jit=probe)
    reason = caught.value.reason
    assert "compile line" in reason and "Triton kernel JIT compilation during inference: double_kernel" in reason, reason
    assert caught.value.log_lines and all("double_kernel" in line for line in caught.value.log_lines)


def test_a_compile_inside_a_measured_run_makes_it_invalid(settling, tmp_path):
    url, probe = settling("--jit-at", "6", "--itl-ms", "2")
    result = run_benchmark(wl(warmup=0, warmup_time=None, warmup_tolerance=None, runs=2), url, "m", tmp_path / "r",
                           jit=probe)
    first, second = result.runs
    assert first.invalid == ""  # requests 1-4: no compile
    assert second.invalid.startswith("a compile during the run: 1 compile line in the server's log: "), second.invalid
    assert "double_kernel" in second.invalid
    assert result.settings["warmup_tolerance"] is None  # a count-only warm-up (none here)


def test_without_a_probe_the_log_is_not_read(settling, tmp_path):
    url, _ = settling("--jit-at", "2")
    result = run_benchmark(wl(warmup=0, warmup_time=None, warmup_tolerance=None), url, "m", tmp_path / "r")
    assert result.runs[0].invalid == ""
