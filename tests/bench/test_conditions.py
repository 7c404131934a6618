"""Run watches around each measured run (specdsl.bench.conditions): the
load generator tells each one when a run begins and ends, keeps what it
saw with the run, and makes the run invalid for its reason (beside the
failed requests' own); a watch is ended when its run is stopped, so no
sampler outlives its run. The watch here is a test double that counts
the requests the paced double served between its begin and its end."""

from __future__ import annotations

import json
import threading
import urllib.request

import pytest

from specdsl.bench import BenchError, run_benchmark
from specdsl.model.config import Workload


def wl(**kw) -> Workload:
    base = dict(name="t", input_len=4, output_len=4, requests=6, concurrency=2, warmup=2, timeout=10.0, runs=2)
    base.update(kw)
    return Workload(**base)


def served(base_url: str) -> int:
    text = urllib.request.urlopen(base_url + "/metrics", timeout=5).read().decode()
    return int(next(line.split()[1] for line in text.splitlines() if line.startswith("double:requests_total")))


class CountingWatch:
    """Counts the server's requests between begin and end; says run
    `bad` is disturbed."""

    key = "counting"

    def __init__(self, base_url: str, bad: int | None = None):
        self.base_url, self.bad = base_url, bad
        self.calls: list[tuple[str, int]] = []
        self._at = 0

    def begin(self, index: int) -> None:
        self.calls.append(("begin", index))
        self._at = served(self.base_url)

    def end(self, index: int):
        self.calls.append(("end", index))
        record = {"requests": served(self.base_url) - self._at}
        return record, ("counting: disturbed on purpose" if index == self.bad else "")


def test_each_run_is_watched_and_one_watch_makes_its_run_invalid(timed_server, tmp_path):
    watch = CountingWatch(timed_server, bad=1)
    result = run_benchmark(wl(), timed_server, "m", tmp_path, watches=[watch])
    assert watch.calls == [("begin", 0), ("end", 0), ("begin", 1), ("end", 1)]  # not around the warmup
    a, b = result.runs
    assert a.conditions == {"counting": {"requests": 6}} and b.conditions == {"counting": {"requests": 6}}
    assert a.invalid == "" and b.invalid == "counting: disturbed on purpose"
    saved = json.loads((tmp_path / "result.json").read_text())["runs"]
    assert saved[1]["conditions"] == {"counting": {"requests": 6}} and saved[1]["invalid"] == "counting: disturbed on purpose"
    assert "conditions" in saved[0] and "invalid" not in saved[0]


def test_a_watch_is_ended_when_its_run_is_stopped(timed_server, tmp_path):
    stop = threading.Event()
    watch = CountingWatch(timed_server)
    original = watch.begin

    def begin(index: int) -> None:
        original(index)
        stop.set()  # the apply is stopped just as the run starts

    watch.begin = begin
    with pytest.raises(BenchError, match="stopped"):
        run_benchmark(wl(runs=1, requests=40), timed_server, "m", tmp_path, watches=[watch], stop=stop)
    assert watch.calls == [("begin", 0), ("end", 0)]
