"""What goes on the wire per engine, datasets and token counting."""

from __future__ import annotations

import json
import urllib.request

import pytest

from specdsl.bench import BenchError, run_benchmark
from specdsl.bench.datasets import build_prompts, load_tokenizer
from specdsl.bench.timings import read_records
from specdsl.model.config import Workload
from specdsl.servers import adapter_for


def wl(**kw) -> Workload:
    base = dict(name="t", input_len=12, output_len=5, requests=2, concurrency=1, warmup=0, timeout=10.0)
    base.update(kw)
    return Workload(**base)


def last_body(base_url: str) -> dict:
    with urllib.request.urlopen(base_url + "/last", timeout=5) as resp:
        return json.loads(resp.read())


def test_vllm_gets_token_ids_ignore_eos_and_usage_request(instant_server, tmp_path):
    run_benchmark(wl(), instant_server, "instant", tmp_path, quirks=adapter_for("vllm").quirks)
    body = last_body(instant_server)
    assert body["ignore_eos"] is True and body["max_tokens"] == 5 and body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert isinstance(body["prompt"], list) and len(body["prompt"]) == 12


def test_transformers_gets_text_and_exact_length_through_generation_config(instant_server, tmp_path, tokenizer_dir):
    run_benchmark(wl(), instant_server, "instant", tmp_path, quirks=adapter_for("transformers").quirks, tokenizer=str(tokenizer_dir))
    body = last_body(instant_server)
    assert "ignore_eos" not in body and "stream_options" not in body
    assert json.loads(body["generation_config"]) == {"max_new_tokens": 5, "min_new_tokens": 5}
    assert isinstance(body["prompt"], str)
    assert len(load_tokenizer(str(tokenizer_dir)).encode(body["prompt"])) == 12


def test_command_engine_sends_ignore_eos_only_when_asked(instant_server, tmp_path):
    run_benchmark(wl(), instant_server, "instant", tmp_path, quirks=adapter_for("command").quirks)
    assert "ignore_eos" not in last_body(instant_server)
    run_benchmark(wl(ignore_eos=True), instant_server, "instant", tmp_path, quirks=adapter_for("command").quirks)
    assert last_body(instant_server)["ignore_eos"] is True
    run_benchmark(wl(ignore_eos=False), instant_server, "instant", tmp_path, quirks=adapter_for("vllm").quirks)
    assert "ignore_eos" not in last_body(instant_server)


def test_chat_endpoint_sends_messages(instant_server, tmp_path):
    result = run_benchmark(wl(endpoint="chat"), instant_server, "instant", tmp_path, quirks=adapter_for("vllm").quirks)
    body = last_body(instant_server)
    assert body["messages"][0]["role"] == "user" and isinstance(body["messages"][0]["content"], str)
    assert result.runs[0].metrics["total_output_tokens"] == 2 * 5


def test_tokens_counted_with_tokenizer_or_by_chunks_without_usage(instant_server, tmp_path, tokenizer_dir):
    result = run_benchmark(wl(), instant_server, "nousage", tmp_path / "a", quirks=adapter_for("transformers").quirks, tokenizer=str(tokenizer_dir))
    _, records = read_records(result.runs[0].records_file)
    # the double streams " t0", " t1", ... : the tokenizer's count, not the chunks'
    expected = len(load_tokenizer(str(tokenizer_dir)).encode(" t0 t1 t2 t3 t4"))
    assert {(r.tokens_from, r.output_tokens) for r in records} == {("tokenizer", expected)}
    result = run_benchmark(wl(), instant_server, "nousage", tmp_path / "b", quirks=adapter_for("transformers").quirks)
    _, records = read_records(result.runs[0].records_file)
    assert {(r.tokens_from, r.output_tokens) for r in records} == {("chunks", 5)}


def test_random_dataset_is_seeded_and_exact(tokenizer_dir):
    tok = load_tokenizer(str(tokenizer_dir))
    a = build_prompts(wl(input_len=40, seed=1), 5, chat=False, token_ids=False, tokenizer=tok)
    assert a == build_prompts(wl(input_len=40, seed=1), 5, chat=False, token_ids=False, tokenizer=tok)
    assert a != build_prompts(wl(input_len=40, seed=2), 5, chat=False, token_ids=False, tokenizer=tok)
    assert all(len(tok.encode(p.prompt)) == 40 and p.prompt_len == 40 for p in a)
    ids = build_prompts(wl(input_len=40), 3, chat=False, token_ids=True, tokenizer=tok)
    assert all(isinstance(p.prompt, list) and len(p.prompt) == 40 for p in ids)
    words = build_prompts(wl(input_len=40), 1, chat=False, token_ids=False, tokenizer=None)
    assert len(words[0].prompt.split()) == 40 and words[0].prompt_len == 0


def test_jsonl_dataset_cycles_and_reads_output_len(tmp_path, instant_server):
    path = tmp_path / "p.jsonl"
    path.write_text('{"prompt": "hello there"}\n\n{"prompt": "bye", "output_len": 3}\n')
    prompts = build_prompts(wl(dataset=str(path)), 5, chat=False, token_ids=True, tokenizer=None)
    assert [p.prompt for p in prompts] == ["hello there", "bye", "hello there", "bye", "hello there"]
    assert [p.output_len for p in prompts[:2]] == [5, 3]
    chat = build_prompts(wl(dataset=f"jsonl:{path}"), 1, chat=True, token_ids=False, tokenizer=None)
    assert chat[0].messages == [{"role": "user", "content": "hello there"}]
    result = run_benchmark(wl(dataset=str(path), requests=4), instant_server, "instant", tmp_path / "out")
    assert result.runs[0].metrics["total_output_tokens"] == 5 + 3 + 5 + 3


def test_bad_datasets_are_bench_errors(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "ok"}\nnot json\n')
    with pytest.raises(BenchError, match="bad.jsonl:2: not JSON"):
        build_prompts(wl(dataset=str(bad)), 1, chat=False, token_ids=False, tokenizer=None)
    with pytest.raises(BenchError, match="cannot read dataset"):
        build_prompts(wl(dataset=str(tmp_path / "missing.jsonl")), 1, chat=False, token_ids=False, tokenizer=None)
    with pytest.raises(BenchError, match="unknown dataset"):
        build_prompts(wl(dataset="sharegpt"), 1, chat=False, token_ids=False, tokenizer=None)
    msgs = tmp_path / "m.jsonl"
    msgs.write_text('{"messages": [{"role": "user", "content": "x"}]}\n')
    with pytest.raises(BenchError, match="needs endpoint"):
        build_prompts(wl(dataset=str(msgs)), 1, chat=False, token_ids=False, tokenizer=None)
