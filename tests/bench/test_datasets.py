"""Datasets: fresh prompts per run, and ShareGPT files sampled as vLLM's
bench samples them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specdsl.bench import BenchError, run_benchmark
from specdsl.bench.datasets import PromptSource, ShareGPT, build_prompts, load_tokenizer, prompt_seed
from specdsl.bench.timings import read_records
from specdsl.model.config import Workload
from specdsl.servers import adapter_for

SHAREGPT = Path(__file__).parent / "data" / "sharegpt_tiny.json"
# the file's entries with a human turn followed by a gpt turn, by first words
# of the prompt; d (prompt "hi"), e (over 1024 tokens) and f (answer "no")
# fail vLLM's filter, g has no answer, h no conversation
VALID = {"how does a", "what does the", "say hello to", "tell me how"}


def wl(**kw) -> Workload:
    base = dict(name="t", input_len=12, requests=4, concurrency=2, warmup=0, timeout=10.0)
    base.update(kw)
    return Workload(**base)


def first_words(text: str) -> str:
    return " ".join(text.split()[:3])


def test_random_prompts_are_fresh_each_run_and_seeded(tokenizer_dir):
    tok = load_tokenizer(str(tokenizer_dir))
    source = PromptSource(wl(seed=7), chat=False, token_ids=False, tokenizer=tok)
    run0, rec0 = source.prompts(4, 0)
    run1, rec1 = source.prompts(4, 1)
    warm, _ = source.prompts(4, "warmup")
    assert run0 == source.prompts(4, 0)[0]  # the same run, the same prompts
    assert not {p.prompt for p in run0} & {p.prompt for p in run1}
    assert not {p.prompt for p in warm} & ({p.prompt for p in run0} | {p.prompt for p in run1})
    assert all(len(tok.encode(p.prompt)) == 12 for p in run0 + run1)
    assert rec0 == {"dataset": "random", "fresh": True, "seed": 7, "run": 0, "prompt_seed": prompt_seed(7, 0)}
    assert rec1["prompt_seed"] != rec0["prompt_seed"]
    # the same in every process: a digest, not Python's randomized hash
    assert prompt_seed(7, 0) == 1852762088771586474


def test_each_run_records_its_prompts_and_jsonl_is_not_fresh(instant_server, tmp_path):
    result = run_benchmark(wl(runs=2), instant_server, "instant", tmp_path / "a", quirks=adapter_for("vllm").quirks)
    assert [r.prompts["run"] for r in result.runs] == [0, 1]
    assert all(r.prompts["fresh"] for r in result.runs)
    header, _ = read_records(result.runs[1].records_file)
    assert header["prompts"] == result.runs[1].prompts
    # runs accumulate (apply passes the index of the first new run)
    later = run_benchmark(wl(runs=1), instant_server, "instant", tmp_path / "b", first_run=2)
    assert later.runs[0].index == 2 and later.runs[0].prompts["run"] == 2
    assert Path(later.runs[0].records_file).name == "run-2.requests.jsonl"
    path = tmp_path / "p.jsonl"
    path.write_text('{"prompt": "hello there"}\n')
    fixed = run_benchmark(wl(dataset=str(path)), instant_server, "instant", tmp_path / "c")
    assert fixed.runs[0].prompts["fresh"] is False and fixed.settings["fresh_prompts"] is False


def test_sharegpt_takes_first_human_turn_and_output_length_from_the_gpt_turn(tokenizer_dir):
    tok = load_tokenizer(str(tokenizer_dir))
    prompts = build_prompts(wl(dataset=f"sharegpt:{SHAREGPT}", requests=4), 4, chat=False, token_ids=True, tokenizer=tok)
    assert {first_words(p.prompt) for p in prompts} == VALID  # 4 valid entries, 4 requests: each once
    by_prompt = {p.prompt: p for p in prompts}
    entry = next(e for e in json.loads(SHAREGPT.read_text()) if e["id"] == "c")  # a system turn first
    human, gpt = entry["conversations"][1]["value"], entry["conversations"][2]["value"]
    assert by_prompt[human].output_len == len(tok.encode(gpt))
    assert by_prompt[human].prompt_len == len(tok.encode(human))


def test_sharegpt_fixed_output_len_skips_the_output_filter_and_chat_sends_messages(tokenizer_dir):
    tok = load_tokenizer(str(tokenizer_dir))
    # a set output_len (not the default 128) fixes every request's length, so
    # entry f (answer "no") passes too
    prompts = build_prompts(wl(dataset=str(SHAREGPT), output_len=16, requests=5), 5, chat=True, token_ids=False, tokenizer=tok)
    texts = {first_words(p.messages[0]["content"]) for p in prompts}
    assert texts == VALID | {"is the plan"}
    assert {p.output_len for p in prompts} == {16} and all(p.prompt is None for p in prompts)


def test_sharegpt_samples_afresh_each_run_and_tops_up_a_small_file(tokenizer_dir):
    tok = load_tokenizer(str(tokenizer_dir))
    source = PromptSource(wl(dataset=f"sharegpt:{SHAREGPT}"), chat=False, token_ids=True, tokenizer=tok)
    two = [tuple(p.prompt for p in source.prompts(2, run)[0]) for run in range(6)]
    assert len(set(two)) > 1  # different samples of the file across runs
    many, record = source.prompts(10, 0)
    assert len(many) == 10 and {first_words(p.prompt) for p in many} == VALID
    assert record["fresh"] and record["entries"] == 7 and record["repeated"] == 6 and record["lengths_from"] == "tokenizer"
    # without a tokenizer, lengths are whitespace words, and said so
    words = ShareGPT(SHAREGPT, None, None)
    prompts, note = words.sample(4, 0, chat=False)
    assert note["lengths_from"] == "words" and {first_words(p.prompt) for p in prompts} == VALID
    assert all(p.prompt_len == 0 for p in prompts)  # not known: the server's usage counts


def test_sharegpt_benchmark_end_to_end(instant_server, tmp_path, tokenizer_dir):
    w = wl(dataset=f"sharegpt:{SHAREGPT}", requests=4, endpoint="chat")
    result = run_benchmark(w, instant_server, "instant", tmp_path, quirks=adapter_for("vllm").quirks, tokenizer=str(tokenizer_dir))
    run = result.runs[0]
    assert run.metrics["completed"] == 4
    tok = load_tokenizer(str(tokenizer_dir))
    expected = sum(len(tok.encode(e["conversations"][-1]["value"])) for e in json.loads(SHAREGPT.read_text())
                   if e["id"] in ("a", "c", "i")) + len(tok.encode("the time to the first token and the time between tokens"))
    assert run.metrics["total_output_tokens"] == expected  # ignore_eos: each gpt turn's length exactly
    d = result.settings["dataset"]
    assert d["kind"] == "sharegpt" and d["entries"] == 7 and d["output_len"] == "each entry's gpt turn"
    assert len(d["sha256"]) == 64


def test_bad_sharegpt_files_are_bench_errors(tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text('{"conversations": []}')
    with pytest.raises(BenchError, match="JSON list"):
        ShareGPT(bad, None, None)
    bad.write_text('[{"conversations": [{"from": "human", "value": "hi"}]}]')
    with pytest.raises(BenchError, match="no entry has a human turn followed by a gpt turn"):
        ShareGPT(bad, None, None)
    bad.write_text('[{"conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "hello"}]}]')
    with pytest.raises(BenchError, match="no entry passes vLLM's ShareGPT filter"):
        ShareGPT(bad, None, None).sample(1, 0, chat=False)
    with pytest.raises(BenchError, match="cannot read dataset"):
        ShareGPT(tmp_path / "missing.json", None, None)
    with pytest.raises(BenchError, match="unknown dataset"):
        PromptSource(wl(dataset="sharegpt"), chat=False, token_ids=False, tokenizer=None)
