"""The warm-up: `warmup` requests, a full wave at least; with
`warmup_time` a steady warm-up (tests/bench/test_steady_warmup.py) of
which it is the bound; none of them measured. Against the
known-timing double (tests/bench/timed_server.py: 20 ms to the first
token, 2 ms a token), whose request counter says what was sent."""

from __future__ import annotations

import math
import re
import urllib.request

from specdsl.bench import run_benchmark
from specdsl.model.config import Workload

TTFT_S, ITL_S, OUT = 0.020, 0.002, 5
REQUEST_S = TTFT_S + (OUT - 1) * ITL_S  # the least one request can take: load only slows it


def served(url: str) -> int:
    text = urllib.request.urlopen(url + "/metrics", timeout=5).read().decode()
    return int(float(re.search(r"(?m)^double:requests_total (\S+)$", text)[1]))


def wl(**kw) -> Workload:
    base = dict(name="t", input_len=6, output_len=OUT, requests=4, concurrency=2, warmup=0, timeout=10.0, ignore_eos=True)
    base.update(kw)
    return Workload(**base)


def test_warmup_time_is_the_most_a_steady_warmup_takes_and_none_is_measured(timed_server, tmp_path):
    """With `warmup_time` the warm-up is steady (specdsl.bench.steady): a
    ramp (concurrency 1 below the workload's 2), then slices of
    max(warmup, 2 x concurrency) requests until two agree; a server of
    constant timing agrees long before the bound."""
    seconds, conc = 30.0, 2
    seen: list[str] = []
    before = served(timed_server)
    result = run_benchmark(wl(warmup=3, warmup_time=seconds, warmup_tolerance=0.2, concurrency=conc), timed_server, "m",
                           tmp_path, progress=seen.append)
    warm = served(timed_server) - before - 4  # the run's own 4 requests
    slice_n = max(3, 2 * conc)
    assert warm >= 1 + 2 * slice_n and (warm - 1) % slice_n == 0, warm  # the ramp's 1, then whole slices
    done = [s for s in seen if s.startswith("warmup: settled after")]
    assert done, seen
    took = float(re.search(r" in ([\d.]+)s", done[0])[1])
    assert took < seconds / 3, took
    assert f"{warm} of {warm} requests" in done[0]
    assert result.runs[0].metrics["completed"] == 4  # the warmup is not in any statistic
    assert result.settings["warmup_time"] == seconds and result.settings["warmup_tolerance"] == 0.2


def test_without_it_only_the_counted_requests(timed_server, tmp_path):
    before = served(timed_server)
    result = run_benchmark(wl(warmup=3), timed_server, "m", tmp_path)
    assert served(timed_server) - before == 3 + 4
    assert result.settings["warmup_time"] is None


def test_requests_that_end_short_of_an_exact_length_are_a_warning(timed_server, tmp_path):
    from specdsl.servers import adapter_for

    vllm = adapter_for("vllm").quirks  # asks for exact lengths with ignore_eos
    short = run_benchmark(wl(requests=3, output_len=6), timed_server, "timed:5:1:4", tmp_path / "a", quirks=vllm)
    (warning,) = [w for w in short.runs[0].warnings if w.startswith("short outputs")]
    assert "3 of 3 requests ended at 4 tokens" in warning and "(6)" in warning
    whole = run_benchmark(wl(requests=3, output_len=6), timed_server, "timed:5:1", tmp_path / "b", quirks=vllm)
    assert not [w for w in whole.runs[0].warnings if w.startswith("short outputs")]
    # no exact length asked: an early end is the server's right, not a warning
    free = run_benchmark(wl(requests=3, output_len=6, ignore_eos=False), timed_server, "timed:5:1:4", tmp_path / "c",
                         quirks=vllm)
    assert not [w for w in free.runs[0].warnings if w.startswith("short outputs")]


def test_a_warmup_count_below_the_concurrency_is_raised_to_one_full_wave(timed_server, tmp_path):
    """One request left a server cold (docs/verdicts.md): the warm-up sends
    at least `concurrency` requests at once; `warmup = 0` sends none."""
    before = served(timed_server)
    run_benchmark(wl(warmup=1, concurrency=3, requests=3), timed_server, "m", tmp_path / "a")
    assert served(timed_server) - before == 3 + 3  # a wave of 3, then the run's 3
    before = served(timed_server)
    run_benchmark(wl(warmup=0, concurrency=3, requests=3), timed_server, "m", tmp_path / "b")
    assert served(timed_server) - before == 3


def test_a_run_by_duration_cycles_its_prompts_until_the_time_has_passed(timed_server, tmp_path):
    from specdsl.bench.timings import read_records

    seconds, conc = 0.4, 2
    before = served(timed_server)
    result = run_benchmark(wl(duration=seconds, requests=3, concurrency=conc), timed_server, "m", tmp_path)
    run = result.runs[0]
    sent = served(timed_server) - before
    header, records = read_records(run.records_file)
    # more requests than `requests` (the prompts cycle), every one completed and counted
    assert run.metrics["completed"] == len(records) == sent > 3, (sent, len(records))
    assert sorted(r.i for r in records) == list(range(len(records)))  # each request its own record
    # none started after the time had passed; the run ended with what was in flight then
    assert max(r.start_s for r in records) < seconds
    assert seconds <= header["duration_s"] < seconds + 1.0
    # at most what `conc` streams can send back to back in that time
    assert sent <= conc * (math.ceil(seconds / REQUEST_S) + 1), sent
    assert result.settings["duration"] == seconds
