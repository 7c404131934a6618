"""End to end: the client against a real `transformers serve` with the tiny
model (CPU, continuous batching, memory capped). Bounded: readiness 180 s,
each request 120 s; the server's process group is killed afterwards."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from specdsl.bench import BenchError, run_benchmark
from specdsl.bench.timings import read_records
from specdsl.model.config import Workload
from specdsl.servers import adapter_for

pytestmark = pytest.mark.e2e


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def transformers_server(transformers_env, tiny_model, hf_home, tmp_path_factory):
    port = _free_port()
    log = tmp_path_factory.mktemp("tf-serve") / "server.log"
    serve = str(Path(transformers_env.python).parent / "transformers")
    argv = [serve, "serve", str(tiny_model), "--continuous-batching", "--cb-max-memory-percent", "0.02",
            "--host", "127.0.0.1", "--port", str(port)]
    env = {**os.environ, **transformers_env.env, "HF_HOME": str(hf_home), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen(argv, stdout=log.open("wb"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while True:
            assert proc.poll() is None, log.read_text()[-2000:]
            assert time.monotonic() < deadline, "transformers serve not ready in 180 s"
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                    break
            except OSError:
                time.sleep(0.5)
        yield f"http://127.0.0.1:{port}"
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=30)


@pytest.mark.parametrize("endpoint", ["completions", "chat"])
def test_exact_lengths_and_usage_counts_against_transformers_serve(transformers_server, tiny_model, tmp_path, endpoint):
    w = Workload(name="e2e", input_len=32, output_len=24, requests=6, concurrency=3, warmup=1, timeout=120.0,
                 endpoint=endpoint, runs=2)
    adapter = adapter_for("transformers")
    result = run_benchmark(w, transformers_server, str(tiny_model), tmp_path, quirks=adapter.quirks, tokenizer=str(tiny_model),
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


def test_ignore_eos_forced_on_transformers_is_reported_as_422(transformers_server, tiny_model, tmp_path):
    # transformers serve rejects ignore_eos; forcing it must fail loudly with the reason
    w = Workload(name="e2e", input_len=8, output_len=4, requests=2, concurrency=2, warmup=0, timeout=60.0,
                 ignore_eos=True)
    with pytest.raises(BenchError, match=r"http 422.*x2"):
        run_benchmark(w, transformers_server, str(tiny_model), tmp_path, quirks=adapter_for("command").quirks)
