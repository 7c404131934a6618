"""Beside the API: the prefix-cache reset before each run and the server's
Prometheus counters read before and after it."""

from __future__ import annotations

import re
import urllib.request

import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

from specdsl.bench import run_benchmark
from specdsl.bench.serverside import ServerSide, parse_samples, run_figures
from specdsl.model.config import Workload
from specdsl.model.metrics import METRICS, SERVER_METRICS
from specdsl.servers import adapter_for

DOUBLE = ServerSide(
    cache_reset=("POST", "/flush_cache"),
    counters={"requests": "double:requests", "prompt_tokens": "double:prompt_tokens",
              "generation_tokens": "double:generation_tokens"},
)


def wl(**kw) -> Workload:
    base = dict(name="t", input_len=6, output_len=5, requests=4, concurrency=2, warmup=1, timeout=10.0)
    base.update(kw)
    return Workload(**base)


def resets(url: str) -> float:
    text = urllib.request.urlopen(url + "/metrics", timeout=5).read().decode()
    return float(re.search(r"(?m)^double:cache_resets_total (\S+)$", text)[1])


def test_cache_reset_before_each_run_and_counters_per_run(timed_server, tmp_path):
    before = resets(timed_server)
    result = run_benchmark(wl(runs=2), timed_server, "m", tmp_path, quirks=adapter_for("vllm").quirks, server=DOUBLE)
    assert resets(timed_server) - before == 2  # one before each run, after the warmup
    for run in result.runs:
        assert run.cache_reset == "done"
        assert run.server["metrics"] == "read"
        # the run's own requests only: not the warmup's, not the other run's
        assert run.server["counters"] == {"requests": 4, "prompt_tokens": 4 * 6, "generation_tokens": 4 * 5}
        assert run.metrics["server_generation_tokens"] == 20 and run.metrics["server_prompt_tokens"] == 24
        assert "prefix_cache_hit_rate" not in run.metrics and "spec_accept_length" not in run.metrics


def test_a_server_without_them_is_recorded_not_an_error(instant_server, tmp_path):
    # the instant double answers 404 to /metrics and /reset_prefix_cache, as a
    # vLLM without VLLM_SERVER_DEV_MODE does to the latter
    result = run_benchmark(wl(), instant_server, "instant", tmp_path / "v", quirks=adapter_for("vllm").quirks,
                           server=adapter_for("vllm").server_side())
    run = result.runs[0]
    assert run.cache_reset.startswith("not offered: POST /reset_prefix_cache answered http 404")
    assert "VLLM_SERVER_DEV_MODE=1" in run.cache_reset
    assert run.server["metrics"] == "unavailable: GET /metrics answered http 404"
    assert "no server metrics: unavailable: GET /metrics answered http 404" in run.warnings  # a warning, the run counts
    assert run.metrics["completed"] == 4
    plain = run_benchmark(wl(), instant_server, "instant", tmp_path / "t", server=adapter_for("transformers").server_side())
    assert plain.runs[0].cache_reset == "not offered"
    assert plain.runs[0].server["metrics"] == "not read: the engine's adapter names no counters"
    gone = run_benchmark(wl(), instant_server, "instant", tmp_path / "g",
                         server=ServerSide(cache_reset=("POST", "/flush_cache"), counters={"requests": "x"}, metrics_path="/nope"))
    assert gone.runs[0].cache_reset.startswith("not offered: POST /flush_cache answered http 404")


def _vllm_text(prompt, gen, queries, hits, drafts=None, draft_tokens=None, accepted=None) -> str:
    reg = CollectorRegistry()
    labels = ["model_name", "engine"]
    for name, value in (("vllm:prompt_tokens", prompt), ("vllm:generation_tokens", gen),
                        ("vllm:prefix_cache_queries", queries), ("vllm:prefix_cache_hits", hits),
                        ("vllm:spec_decode_num_drafts", drafts), ("vllm:spec_decode_num_draft_tokens", draft_tokens),
                        ("vllm:spec_decode_num_accepted_tokens", accepted)):
        if value is None:
            continue
        c = Counter(name, "doc", labels, registry=reg)
        for engine, share in (("0", 0.25), ("1", 0.75)):  # two engines (data parallel): summed
            c.labels("m", engine).inc(value * share)
    return generate_latest(reg).decode()


def test_vllm_counters_give_acceptance_length_rate_and_prefix_hits():
    side = adapter_for("vllm").server_side()
    samples = parse_samples(_vllm_text(100, 50, 100, 0, 10, 30, 15))
    before = {name: sum(samples[metric + "_total"]) for name, metric in side.counters}
    samples = parse_samples(_vllm_text(1100, 1050, 1100, 250, 410, 1230, 915))
    after = {name: sum(samples[metric + "_total"]) for name, metric in side.counters}
    metrics, record = run_figures(side, before, after)
    assert record["counters"]["spec_drafts"] == 400
    # vLLM's own definitions: 1 + accepted / drafts, accepted / draft tokens
    assert metrics["spec_accept_length"] == pytest.approx(1 + 900 / 400)
    assert metrics["spec_accept_rate"] == pytest.approx(900 / 1200)
    assert metrics["prefix_cache_hit_rate"] == pytest.approx(250 / 1000)
    assert metrics["server_prompt_tokens"] == 1000 and metrics["server_generation_tokens"] == 1000
    assert metrics["server_cached_prompt_tokens"] == 250
    # no speculative decoding: no counters, no acceptance metrics
    plain, _ = run_figures(side, {"prompt_tokens": 0.0}, {"prompt_tokens": 5.0})
    assert set(plain) == {"server_prompt_tokens"}
    assert set(SERVER_METRICS) <= set(METRICS)  # assertions may name them


def test_sglang_gauges_and_counters():
    side = adapter_for("sglang").server_side()
    reg = CollectorRegistry()
    Counter("sglang:prompt_tokens_total", "doc", ["model_name"], registry=reg).labels("m").inc(400)
    Counter("sglang:cached_tokens_total", "doc", ["model_name"], registry=reg).labels("m").inc(100)
    Gauge("sglang:spec_accept_length", "doc", ["model_name"], registry=reg).labels("m").set(3.2)
    Gauge("sglang:spec_accept_rate", "doc", ["model_name"], registry=reg).labels("m").set(0.55)
    Gauge("sglang:cache_hit_rate", "doc", ["model_name"], registry=reg).labels("m").set(0.3)
    samples = parse_samples(generate_latest(reg).decode())
    after = {}
    for name, metric in side.counters:
        if metric + "_total" in samples:
            after[name] = sum(samples[metric + "_total"])
    for name, metric in side.gauges:
        after[name] = samples[metric][0]
    metrics, record = run_figures(side, {"prompt_tokens": 0.0, "cached_prompt_tokens": 0.0}, after)
    assert metrics["prefix_cache_hit_rate"] == 0.25  # the run's own counters, not the running gauge
    assert metrics["spec_accept_length"] == 3.2 and metrics["spec_accept_rate"] == 0.55
    assert record["gauges"] == {"spec_accept_length": 3.2, "spec_accept_rate": 0.55, "prefix_cache_hit_rate": 0.3}
    gauge_only, _ = run_figures(side, {}, {"prefix_cache_hit_rate": 0.3})  # no counters: the gauge stands in
    assert gauge_only == {"prefix_cache_hit_rate": 0.3}
    off, _ = run_figures(side, {}, {"spec_accept_length": 0.0, "spec_accept_rate": 0.0})
    assert off == {}  # a length below 1: speculative decoding is off


def test_unknown_quantities_are_refused():
    with pytest.raises(ValueError, match="unknown server-side quantities"):
        ServerSide(counters={"accept_len": "x"})
