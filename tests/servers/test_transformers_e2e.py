"""`transformers serve` of the tiny model, for real (CPU, memory capped):
the adapter's launch, effective configuration and teardown, and the
benchmark client against the same continuous-batching server (one launch
for both: each launch is seconds of CI)."""

from __future__ import annotations

from pathlib import Path

import pytest

from specdsl.bench import BenchError, run_benchmark
from specdsl.bench.timings import read_records
from specdsl.hosts import LocalHost
from specdsl.hosts.http import session
from specdsl.model.config import Server, Workload, pairs
from specdsl.servers import LaunchError, adapter_for, answers, effective_config, launch, teardown

HOST = LocalHost()  # one host object: it reaps the servers it started

pytestmark = pytest.mark.e2e

# Uncapped, continuous batching pre-allocates ~20 GiB of KV cache on this machine.
CB_ARGS = (("continuous-batching", True), ("cb-max-memory-percent", 0.02))


def tf_server(model: Path, hf_home: Path, args=(), **kw) -> Server:
    return Server(name="tiny", engine="transformers", model=str(model), args=tuple(args),
                  env=pairs({"HF_HOME": str(hf_home)}), ready_timeout=180, **kw)


@pytest.fixture(scope="module")
def cb_server(transformers_env, tiny_model, hf_home, tmp_path_factory):
    server = tf_server(tiny_model, hf_home, CB_ARGS)
    handle = launch(server, transformers_env, tmp_path_factory.mktemp("tf-cb"), host=HOST)
    try:
        yield server, handle
    finally:
        teardown(handle, HOST)
    # teardown leaves nothing: no process of its group, no answer
    assert LocalHost().group_pids(handle.pgid) == []
    assert not answers(handle, HOST)


def complete(handle, prompt="Hello", max_tokens=8):
    resp = session(60).post(handle.base_url + "/v1/completions",
                            json={"model": handle.model, "prompt": prompt, "max_tokens": max_tokens})
    assert resp.status_code == 200, resp.text
    return resp.json()


def test_continuous_batching_server_serves_and_reports_cb(cb_server):
    server, handle = cb_server
    assert answers(handle, HOST)
    assert handle.argv[1:3] == ("serve", server.model)
    assert "--cb-max-memory-percent" in handle.argv
    out = complete(handle)
    assert out["usage"]["completion_tokens"] == 8
    config, warnings = effective_config(server, handle, HOST)
    assert config["continuous_batching"] is True  # from the server's own per-request log line
    assert config["cb_max_memory_percent"] == 0.02
    assert config["version"] == "5.19.0"
    assert warnings == []


def test_memory_stays_capped(cb_server):
    _, handle = cb_server
    rss_kib = 0
    for pid in LocalHost().group_pids(handle.pgid):
        status = Path(f"/proc/{pid}/status").read_text()
        rss_kib += int(next(l for l in status.splitlines() if l.startswith("VmRSS:")).split()[1])
    assert rss_kib < 4 * 1024 * 1024, f"server group uses {rss_kib / 1024**2:.1f} GiB"


# The benchmark client against the same server (after the checks of its
# own configuration above, which read its log as it came up).
@pytest.mark.parametrize("endpoint", ["completions", "chat"])
def test_exact_lengths_and_usage_counts_against_transformers_serve(cb_server, tiny_model, tmp_path, endpoint):
    url = cb_server[1].base_url
    w = Workload(name="e2e", input_len=32, output_len=24, requests=6, concurrency=3, warmup=1, timeout=120.0,
                 endpoint=endpoint, runs=2)
    adapter = adapter_for("transformers")
    result = run_benchmark(w, url, str(tiny_model), tmp_path, quirks=adapter.quirks, tokenizer=str(tiny_model),
                           server=adapter.server_side())
    # fresh prompts each run; transformers serve has no prefix-cache reset
    assert [(r.prompts["fresh"], r.prompts["run"], r.cache_reset) for r in result.runs] == [(True, 0, "not offered"), (True, 1, "not offered")]
    assert result.settings["exact_length"].startswith("generation_config")
    assert result.settings["tokenizer"]["tokenizer_json_sha256"]
    run = result.runs[0]
    assert run.metrics["completed"] == 6 and run.failures == {}
    _, records = read_records(run.records_file)
    # exact output length through generation_config, counted from the server's usage
    assert {(r.tokens_from, r.output_tokens) for r in records} == {("usage", 24)}
    if endpoint == "completions":
        # exact input length: 32 tokens of text, plus the BOS the server adds
        assert {r.prompt_tokens for r in records} == {33}
    m = run.metrics
    assert 0 < m["median_ttft_ms"] < m["median_e2el_ms"] and m["median_itl_ms"] > 0
    assert m["output_throughput"] == pytest.approx(6 * 24 / m["duration"])


def test_ignore_eos_forced_on_transformers_is_reported_as_422(cb_server, tiny_model, tmp_path):
    # transformers serve rejects ignore_eos; forcing it must fail loudly with the reason
    url = cb_server[1].base_url
    w = Workload(name="e2e", input_len=8, output_len=4, requests=2, concurrency=2, warmup=0, timeout=60.0,
                 ignore_eos=True)
    with pytest.raises(BenchError, match=r"http 422.*x2"):
        run_benchmark(w, url, str(tiny_model), tmp_path, quirks=adapter_for("command").quirks)


def test_bad_model_path_exits_during_startup(transformers_env, hf_home, tmp_path):
    server = tf_server(tmp_path / "no-such-model", hf_home)
    with pytest.raises(LaunchError) as info:
        launch(server, transformers_env, tmp_path, host=HOST)
    assert "exited" in str(info.value) and "during startup" in str(info.value)
    assert "no-such-model" in info.value.tail
    assert LocalHost().group_pids(info.value.pgid) == []
