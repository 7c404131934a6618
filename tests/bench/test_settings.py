"""What a result records besides its numbers: the request settings, and the
client's own load with its `client-bound` warning."""

from __future__ import annotations

import asyncio
import hashlib
import json

import pytest

from specdsl.bench import BenchResult, run_benchmark
from specdsl.bench.monitor import LoopMonitor, client_warnings
from specdsl.model.config import Workload
from specdsl.servers import adapter_for


def wl(**kw) -> Workload:
    base = dict(name="t", input_len=8, output_len=4, requests=3, concurrency=1, warmup=0, timeout=10.0)
    base.update(kw)
    return Workload(**base)


def test_result_json_records_the_request_settings(instant_server, tmp_path, tokenizer_dir):
    result = run_benchmark(wl(endpoint="chat", seed=3), instant_server, "instant", tmp_path / "a",
                           quirks=adapter_for("transformers").quirks, tokenizer=str(tokenizer_dir))
    saved = json.loads((tmp_path / "a" / "result.json").read_text())
    s = saved["settings"]
    assert BenchResult.from_json(saved).settings == s == result.settings
    assert s["endpoint"] == "chat" and s["url"].endswith("/v1/chat/completions") and s["model"] == "instant"
    assert s["dataset"] == {"name": "random", "kind": "random"} and s["input_len"] == 8 and s["max_tokens"] == 4
    assert s["exact_length"] == "generation_config (min_new_tokens = max_new_tokens)" and s["ignore_eos"] is None
    assert s["seed"] == 3 and s["fresh_prompts"] is True and s["token_id_prompts"] is False
    # the client sends no sampling settings: the server's defaults (null)
    assert s["temperature"] is None and s["top_p"] is None and s["sampling_seed"] is None
    assert set(s["request_fields"]) == {"generation_config", "model", "stream"}
    digest = hashlib.sha256((tokenizer_dir / "tokenizer.json").read_bytes()).hexdigest()
    assert s["tokenizer"] == {"path": str(tokenizer_dir.resolve()), "tokenizer_json_sha256": digest}
    assert s["client"]["specdsl"] and s["client"]["aiohttp"] and s["client"]["python"]
    # a diff of two results shows what changed
    other = run_benchmark(wl(endpoint="chat", seed=3, ignore_eos=False), instant_server, "instant", tmp_path / "b",
                          quirks=adapter_for("transformers").quirks, tokenizer=str(tokenizer_dir))
    changed = {k for k in s if s[k] != other.settings[k]}
    assert changed == {"exact_length", "ignore_eos", "request_fields", "request_template"}
    # the template is the body as sent, with the prompt and the length as placeholders
    assert s["request_template"] == {"model": "instant", "stream": True, "max_tokens": "{max_tokens}", "messages": "{messages}",
                                     "generation_config": '{"max_new_tokens":{max_tokens},"min_new_tokens":{max_tokens}}'}
    vllm = run_benchmark(wl(), instant_server, "instant", tmp_path / "c", quirks=adapter_for("vllm").quirks)
    assert vllm.settings["exact_length"] == "ignore_eos" and vllm.settings["token_id_prompts"] is True
    assert vllm.settings["request_fields"]["stream_options"] == {"include_usage": True}
    assert vllm.settings["tokenizer"] is None


def test_a_client_bound_run_is_invalid(instant_server, tmp_path):
    # the instant double answers every chunk at once: 32 streams of it keep
    # the client's loop busy, so its streams wait for it between requests
    result = run_benchmark(wl(requests=640, concurrency=32, output_len=16, warmup=32), instant_server, "instant",
                           tmp_path, quirks=adapter_for("vllm").quirks)
    run = result.runs[0]
    assert {"cpu_s", "wall_s", "busy", "loop_lag_p50_ms", "loop_lag_p90_ms", "achieved_concurrency"} <= set(run.client)
    assert run.client["asked_concurrency"] == 32
    assert run.invalid.startswith("client-bound: "), run.client
    saved = json.loads((tmp_path / "result.json").read_text())["runs"][0]
    assert saved["invalid"] == run.invalid and saved["client"] == run.client


def _idle_lag_ms() -> float:
    async def idle() -> dict:
        monitor = LoopMonitor()
        monitor.start()
        await asyncio.sleep(0.3)
        return monitor.stop()

    return asyncio.run(idle())["loop_lag_p50_ms"]


def test_a_run_that_waits_on_the_server_is_not(timed_server, tmp_path):
    if _idle_lag_ms() >= 1.0:  # the warning would be right: this machine has no core to spare now
        pytest.skip("an idle event loop runs its timers >= 1 ms late on this machine now")
    result = run_benchmark(wl(requests=8, concurrency=2, output_len=6), timed_server, "m", tmp_path)
    assert result.runs[0].warnings == (), result.runs[0].client
    assert result.runs[0].invalid == "", result.runs[0].client
    assert result.runs[0].client["busy"] < 0.8 and result.runs[0].client["achieved_concurrency"] >= 1.8


def test_the_warning_rules():
    idle = {"cpu_s": 0.1, "wall_s": 1.0, "busy": 0.1, "loop_lag_p50_ms": 0.5, "loop_lag_p90_ms": 1.0}
    assert client_warnings(idle, {"median_itl_ms": 10.0}) == []
    busy = idle | {"cpu_s": 0.9, "busy": 0.9}
    assert client_warnings(busy, {})[0].startswith("client-bound: the client's event loop was busy 90% of the run")
    lagging = idle | {"loop_lag_p50_ms": 2.5}
    assert len(client_warnings(lagging, {"median_itl_ms": 10.0})) == 1
    assert client_warnings(lagging, {"median_itl_ms": 40.0}) == []  # under a tenth of a 40 ms ITL
    late = idle | {"late_p90_ms": 12.0, "late_max_ms": 30.0}
    assert "after their scheduled time" in client_warnings(late, {})[0]
