"""A workload's `prefix_cache` in the load generator, against the paced
double (tests/bench/timed_server.py, which counts the resets it is asked
for): `reset` (the default) empties the cache before each run, `warm` and
`off` ask nothing, a reset the server refuses makes the run invalid, one
it does not offer is a warning."""

from __future__ import annotations

import re
import urllib.request

from specdsl.bench import run_benchmark, warm_up
from specdsl.bench.serverside import ServerSide
from specdsl.model.config import Workload

FLUSH = ServerSide(cache_reset=("POST", "/flush_cache"))


def wl(**kw) -> Workload:
    base = dict(name="t", input_len=6, output_len=5, requests=4, concurrency=2, warmup=1, timeout=10.0, runs=2)
    base.update(kw)
    return Workload(**base)


def resets(url: str) -> float:
    text = urllib.request.urlopen(url + "/metrics", timeout=5).read().decode()
    return float(re.search(r"(?m)^double:cache_resets_total (\S+)$", text)[1])


def test_reset_by_default_and_when_asked(timed_server, tmp_path):
    for setting in (None, "reset"):
        before = resets(timed_server)
        result = run_benchmark(wl(prefix_cache=setting), timed_server, "m", tmp_path / str(setting), server=FLUSH)
        assert resets(timed_server) - before == 2
        assert [r.cache_reset for r in result.runs] == ["done", "done"] and all(not r.invalid for r in result.runs)


def test_warm_and_off_ask_for_no_reset(timed_server, tmp_path):
    for setting in ("warm", "off"):
        before = resets(timed_server)
        result = run_benchmark(wl(prefix_cache=setting), timed_server, "m", tmp_path / setting, server=FLUSH)
        assert resets(timed_server) == before
        assert [r.cache_reset for r in result.runs] == [f'not asked (prefix_cache = "{setting}")'] * 2
        assert all(not r.invalid and not any(w.startswith("prefix-cache") for w in r.warnings) for r in result.runs)


def test_a_refused_reset_invalidates_a_missing_one_warns(timed_server, instant_server, tmp_path):
    refused = ServerSide(cache_reset=("DELETE", "/flush_cache"))  # http.server answers 501 to a method it lacks
    result = run_benchmark(wl(runs=1), timed_server, "m", tmp_path / "a", server=refused)
    [run] = result.runs
    assert run.cache_reset.startswith("failed: DELETE /flush_cache answered http 501")
    assert run.invalid.startswith('prefix-cache: not emptied before the run (prefix_cache = "reset"): failed: DELETE')
    # the instant double answers 404 beside its API, as vLLM without its dev endpoints
    missing = ServerSide(cache_reset=("POST", "/reset_prefix_cache"), cache_reset_hint="it needs a setting")
    result = run_benchmark(wl(runs=1), instant_server, "m", tmp_path / "b", server=missing)
    [run] = result.runs
    assert not run.invalid.startswith("prefix-cache") and run.cache_reset.startswith("not offered: POST /reset_prefix_cache")
    assert ("prefix-cache: not emptied before the run (not offered: POST /reset_prefix_cache answered http 404;"
            " it needs a setting): it started from the cache the earlier runs left") in run.warnings


def test_a_timed_run_never_sends_a_prompt_twice(timed_server, tmp_path):
    """A run of `duration` sends as many requests as fit, not `requests`:
    it makes enough fresh prompts that none repeats (on the H200 a run that
    cycled its 64 prompts met the prefix cache with 56-63% of its prompt
    tokens, by how fast the run itself went), and says so where it could
    not: with no rate known yet (no warm-up) the first run cycles and warns."""
    result = run_benchmark(wl(duration=1.0, warmup=2, runs=2), timed_server, "m", tmp_path / "a", server=FLUSH)
    for run in result.runs:
        sent = run.metrics["completed"] + run.metrics["failed"]
        assert sent > 4 * 4, sent  # many more requests than `requests`: a cycle of 4 would have repeated
        assert run.prompts["count"] >= sent and run.prompts["reused"] == 0
        assert not any(w.startswith("prompts:") for w in run.warnings)
    cold = run_benchmark(wl(duration=1.0, warmup=0, runs=1), timed_server, "m", tmp_path / "b", server=FLUSH)
    [run] = cold.runs
    sent = int(run.metrics["completed"] + run.metrics["failed"])
    assert run.prompts["count"] == 4 and run.prompts["reused"] == sent - 4
    assert any(w.startswith(f"prompts: {sent - 4} of {sent} requests reused a prompt") for w in run.warnings)


def test_a_run_made_alone_takes_its_launchs_rate_from_the_warm_up(timed_server, tmp_path):
    """A paired comparison makes each run by a call of its own after one
    warm-up of the launch: the warm-up's `peak_rate`, passed as the run's
    `rate_hint`, is what makes its first timed run's prompts fresh (on the
    H200 every such run cycled its 64 prompts: 128 of 192 requests met the
    prefix cache, and the later waves' TTFT fell from 220 to 90 ms)."""
    got = warm_up(wl(duration=1.0, warmup=4), timed_server, "m", tmp_path / "w")
    assert got["peak_rate"] > 0, got
    result = run_benchmark(wl(duration=1.0, warmup=0, runs=1), timed_server, "m", tmp_path / "a", server=FLUSH,
                           rate_hint=got["peak_rate"])
    [run] = result.runs
    sent = int(run.metrics["completed"] + run.metrics["failed"])
    assert sent > 4 and run.prompts["count"] >= sent and run.prompts["reused"] == 0, run.prompts
    assert not any(w.startswith("prompts:") for w in run.warnings)
