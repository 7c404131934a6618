"""vLLM 0.26.0's facts against what a real 0.26.0 printed on an H200
(docs/gpu-run.md, third session): the start of three real server logs, up
to ready (tests/servers/data/vllm-0.26.0-h200-*.log, machine paths rewritten
to /srv/), read the way apply reads them, give exactly the effective
configuration apply recorded for those launches
(vllm-0.26.0-h200-effective.json). A later edit of the 0.26.0 pattern set,
of the adapter's map from patterns to keys or of the layering of
`effective_config` that loses or changes one of those facts fails here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specdsl.facts import log_patterns
from specdsl.hosts import LocalHost
from specdsl.model.config import Server
from specdsl.servers import ServerHandle, effective_config
from specdsl.servers.logscan import scan_log_sourced

DATA = Path(__file__).with_name("data")
RECORDED = json.loads((DATA / "vllm-0.26.0-h200-effective.json").read_text())
HOST = LocalHost()
# examples/gpu/vllm.spec's server args; the three launches differ only in --attention-backend
ARGS = (("dtype", "bfloat16"), ("gpu-memory-utilization", 0.3), ("max-num-seqs", 64))
LAUNCHES = {  # log -> (--attention-backend given, the backend the log says, the line it says it with)
    "flash-attn": (None, "FLASH_ATTN", "Using FLASH_ATTN attention backend out of potential backends: "
                                       "['FLASH_ATTN', 'FLASHINFER', 'TRITON_ATTN', 'FLEX_ATTENTION']."),
    "flashinfer": ("FLASHINFER", "FLASHINFER", "Using AttentionBackendEnum.FLASHINFER backend."),
    "triton": ("TRITON_ATTN", "TRITON_ATTN", "Using AttentionBackendEnum.TRITON_ATTN backend."),
}


def log_path(name: str) -> Path:
    return DATA / f"vllm-0.26.0-h200-{name}.log"


def read(name: str) -> tuple[dict, list[str]]:
    """The effective configuration as apply reads it after a launch: the
    spec's args, the log's facts, vLLM's non-default args."""
    backend = LAUNCHES[name][0]
    args = ARGS + ((("attention-backend", backend),) if backend else ())
    server = Server(name="vllm", engine="vllm", model="/srv/llama800m", args=args)
    # port 9 (discard): nothing answers there, only the log is read
    handle = ServerHandle(pid=0, pgid=0, port=9, bind="127.0.0.1", base_url="http://127.0.0.1:9",
                          log_path=str(log_path(name)), argv=(), engine="vllm", version="0.26.0")
    return effective_config(server, handle, HOST)


@pytest.mark.parametrize("name", sorted(LAUNCHES))
def test_the_effective_configuration_is_what_apply_recorded(name):
    config, _ = read(name)
    assert config == RECORDED[name]


@pytest.mark.parametrize("name", sorted(LAUNCHES))
def test_the_attention_backend_and_the_line_it_is_read_from(name):
    asked, backend, line = LAUNCHES[name]
    config, warnings = read(name)
    assert config["attention_backend"] == backend
    assert config["log_patterns"] == "vllm 0.26.0" and config["version"] == "0.26.0"
    _, _, sources = scan_log_sourced("vllm", log_path(name).read_text(), {"attention_backend": asked} if asked else {},
                                     "0.26.0")
    assert sources["attention_backend"] == line  # what diagnose quotes
    if asked:
        assert warnings == []
    else:  # chosen by vLLM: said once, as apply said it on the H200
        assert warnings == ["attention backend not specified: FLASH_ATTN chosen by default"]


def test_a_fact_is_quoted_the_same_from_every_launch():
    # vLLM tags each line with its process and pid, e.g. "(EngineCore pid=803) INFO 12-02 11:24:48
    # [cuda.py:482] "; the quote was that whole line, so one fact read differently in each launch
    quotes = {scan_log_sourced("vllm", log_path(name).read_text(), {}, "0.26.0")[2]["architecture"] for name in LAUNCHES}
    assert quotes == {"Resolved architecture: LlamaForCausalLM"}


def test_only_the_flash_attn_launch_says_its_flash_attention_version():
    assert read("flash-attn")[0]["flash_attn_version"] == 3
    assert "flash_attn_version" not in read("flashinfer")[0] and "flash_attn_version" not in read("triton")[0]


def test_the_engine_facts_of_the_h200_launches():
    for name in LAUNCHES:
        config, _ = read(name)
        assert config["architecture"] == "LlamaForCausalLM"
        assert (config["max_model_len"], config["max_num_batched_tokens"], config["max_seq_len"]) == (4096, 8192, 4096)
        assert config["dtype"] == "bfloat16"  # non-default args win over the engine dump's torch.bfloat16
        assert config["enable_prefix_caching"] is True and config["enable_chunked_prefill"] is True
        assert config["enforce_eager"] is False and config["kv_cache_dtype"] == "auto"


def _groups(regex_text: str, name: str) -> list[tuple]:
    regex = next(p.regex for p in log_patterns("vllm", "0.26.0") if p.regex.pattern == regex_text)
    return [m.groups() for line in log_path(name).read_text().splitlines() if (m := regex.search(line))]


def test_kv_cache_weights_and_ready_lines_of_the_h200():
    assert _groups(r"(GPU|[A-Z]+) KV cache size: ([\d,]+) tokens", "flash-attn") == [("GPU", "325,536")]
    assert _groups(r"Maximum concurrency for ([\d,]+) tokens per request: ([\d.]+)x", "flash-attn") == [("4,096", "79.48")]
    assert _groups(r"Available KV cache memory: ([\d.]+) GiB", "flash-attn") == [("39.74",)]
    assert _groups(r"Graph capturing finished in (\d+) secs, took ([\d.]+) GiB", "flashinfer") == [("1", "0.26")]
    assert _groups(r"init engine \(profile, create kv cache, warmup model\) took ([\d.]+) s", "flash-attn") == [("121.70",)]
    # the V2 model runner's wording (no "memory"): the row matched nothing on the H200 before
    assert _groups(r"Model loading took ([\d.]+) GiB(?: memory)? and ([\d.]+) seconds", "flash-attn") == [("1.53", "3.229254")]
    assert _groups(r"Starting vLLM server on (\S+)", "triton") == [("http://127.0.0.1:59421",)]
    for name in LAUNCHES:
        assert _groups(r"Application startup complete\.", name) == [()]  # ready


def test_every_row_of_the_set_matches_the_h200_logs_but_those_of_other_setups():
    lines = [line for name in LAUNCHES for line in log_path(name).read_text().splitlines()]
    silent = {p.regex.pattern for p in log_patterns("vllm", "0.26.0") if not any(p.regex.search(line) for line in lines)}
    assert silent == {
        r"vLLM server version (\S+), serving model (\S+)",  # the plain banner: these logs have the logo form
        "Cudagraph is disabled under eager mode",  # --enforce-eager
        r"--block-size (\d+) precluded higher-priority backend\(s\) (.*)\. Using (\S+) instead",  # --block-size
    }
