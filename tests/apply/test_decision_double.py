"""The decision double (benchmarks/bench_decisions.py's server) does what it
says: a launch factor drawn once per launch from the seed and the launches
before it (two servers started together draw different ones), the cold
start on the first requests only, drift, run noise per request or per
window, and complete OpenAI streams. Checked on the timings it reports for
each request (/timings), not on a clock."""

from __future__ import annotations

import http.client
import json
import math
import os
import random
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

DOUBLE = Path(__file__).parent / "decision_double.py"


def _limit():
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


class Double:
    def __init__(self, life: Path, *args: str) -> None:
        self.proc = subprocess.Popen([sys.executable, str(DOUBLE), "0", "--life", str(life), *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, start_new_session=True, preexec_fn=_limit)
        line = self.proc.stdout.readline()  # "PORT n launch factor f" once it listens
        assert line.startswith("PORT "), line
        self.port = int(line.split()[1])

    def get(self, path: str) -> dict:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        conn.request("GET", path)
        body = json.loads(conn.getresponse().read())
        conn.close()
        return body

    def complete(self, tokens: int = 2) -> list[dict]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        conn.request("POST", "/v1/completions", json.dumps({"model": "m", "prompt": "a b c", "max_tokens": tokens,
                                                            "stream": True}), {"Content-Type": "application/json"})
        resp = conn.getresponse()
        assert resp.status == 200 and resp.getheader("Content-Type") == "text/event-stream"
        events = [line[6:] for line in resp.read().decode().splitlines() if line.startswith("data: ")]
        conn.close()
        assert events[-1] == "[DONE]", events
        return [json.loads(e) for e in events[:-1]]

    def stop(self) -> None:
        os.killpg(self.proc.pid, signal.SIGTERM)
        self.proc.wait(timeout=10)


@pytest.fixture
def doubles():
    started: list[Double] = []
    yield lambda life, *args: started.append(Double(life, *args)) or started[-1]
    for d in started:
        if d.proc.poll() is None:
            os.killpg(d.proc.pid, signal.SIGKILL)
            d.proc.wait(timeout=10)


def _factors(life: Path) -> list[float]:
    return [float(line.split()[3]) for line in life.read_text().splitlines() if line.startswith("start ")]


def _expected_factor(seed: int, before: int, sd: float) -> float:
    return math.exp(sd * random.Random(seed * 1_000_003 + before).gauss(0.0, 1.0))


def test_each_launch_draws_its_factor_once_from_the_seed_and_the_launches_before(tmp_path, doubles):
    life = tmp_path / "life.txt"
    for _ in range(3):
        d = doubles(life, "--seed", "7", "--launch-sd", "0.1")
        d.complete()
        assert d.get("/timings")["factor"] == pytest.approx(_factors(life)[-1], abs=1e-6)
        d.stop()
    factors = _factors(life)
    assert factors == pytest.approx([_expected_factor(7, i, 0.1) for i in range(3)], abs=1e-6)
    assert len(set(factors)) == 3
    assert [line.split()[0] for line in life.read_text().splitlines()] == ["start", "stop"] * 3
    again = tmp_path / "again.txt"  # the same apply elsewhere draws the same first factor
    doubles(again, "--seed", "7", "--launch-sd", "0.1").stop()
    assert _factors(again) == [factors[0]]


def test_servers_started_together_draw_different_factors(tmp_path, doubles):
    life = tmp_path / "life.txt"
    procs = [subprocess.Popen([sys.executable, str(DOUBLE), "0", "--life", str(life), "--seed", "3", "--launch-sd", "0.1"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True,
                              preexec_fn=_limit) for _ in range(3)]
    try:
        for p in procs:
            assert p.stdout.readline().startswith("PORT ")
    finally:
        for p in procs:
            os.killpg(p.pid, signal.SIGTERM)
            p.wait(timeout=10)
    assert sorted(_factors(life)) == pytest.approx(sorted(_expected_factor(3, i, 0.1) for i in range(3)), abs=1e-6)


def test_the_cold_start_slows_only_the_first_requests_and_speed_scales_the_timing(tmp_path, doubles):
    d = doubles(tmp_path / "life.txt", "--speed", "2", "--ttft-ms", "40", "--itl-ms", "20",
                "--cold-requests", "3", "--cold-pause", "0.2", "--cold-slow", "1.5")
    for _ in range(5):
        events = d.complete(tokens=3)
        assert [e["choices"][0]["text"] for e in events[:-1]] == [" t0", " t1", " t2"]
        assert events[-1]["usage"]["completion_tokens"] == 3 and events[-2]["choices"][0]["finish_reason"] == "length"
    timings = d.get("/timings")["timings"]
    assert timings[:3] == [pytest.approx([0.2, 1.5 * 0.02, 1.5 * 0.01])] * 3
    assert timings[3:] == [pytest.approx([0.0, 0.02, 0.01])] * 2


def test_drift_and_run_noise(tmp_path, doubles):
    epoch = time.time() - 10
    d = doubles(tmp_path / "drift.txt", "--drift", "0.5", "--epoch", f"{epoch:.3f}", "--ttft-ms", "60")
    d.complete()
    (pause, ttft, _), = d.get("/timings")["timings"]
    assert pause == 0 and ttft < 0.060 / (1 + 0.5 * 10)  # more than 10 s of drift at 50%/s: over 6x faster

    def ttfts(life: Path, *args: str) -> list[float]:
        n = doubles(life, "--seed", "5", "--noise", "0.1", "--epoch", f"{time.time():.3f}", *args)
        for _ in range(6):
            n.complete(tokens=1)
        return [t[1] for t in n.get("/timings")["timings"]]

    per_request = ttfts(tmp_path / "a.txt")
    assert len(set(per_request)) == 6 and per_request == ttfts(tmp_path / "b.txt")  # drawn anew, reproducibly
    windowed = ttfts(tmp_path / "c.txt", "--noise-window", "1000")
    assert len(set(windowed)) == 1 and windowed[0] != 0.040  # one draw for the whole window
