"""The facts of SGLang 0.5.17 against what a real 0.5.17 printed on an H200
(docs/gpu-run.md, "SGLang 0.5.17"; the logs in tests/servers/data/, machine
paths rewritten to /srv/): the log patterns of the 0.5.17 set still match the
lines the effective configuration and the diagnosis read, and the flags the
GPU spec gives exist in 0.5.17's table. A later edit of the set or the table
that loses one of them fails here."""

from __future__ import annotations

from pathlib import Path

from specdsl.facts import engine_flags, flag_table, pattern_set
from specdsl.servers.logscan import scan_log

DATA = Path(__file__).with_name("data")
FA3 = (DATA / "sglang-0.5.17-fa3-missing.log").read_text()
READY = (DATA / "sglang-0.5.17-flashinfer-ready.log").read_text()


def test_the_default_backend_line_of_0_5_17_is_read():
    assert pattern_set("sglang", "0.5.17") == "sglang 0.5.17"
    facts, warnings = scan_log("sglang", FA3, {}, "0.5.17")
    assert facts["attention_backend"] == "fa3"
    assert "attention backend not specified: fa3 chosen by default" in warnings
    assert facts["log_patterns"] == "sglang 0.5.17"


def test_a_ready_0_5_17_launch_is_read():
    facts, warnings = scan_log("sglang", READY, {"attention_backend": "flashinfer"}, "0.5.17")
    assert facts["architecture"] == "LlamaForCausalLM"
    assert facts["weights_mem_gb"] == 1.56
    assert facts["kv_cache_dtype"] == "torch.bfloat16"
    assert not any("not specified" in w for w in warnings)
    assert "The server is fired up and ready to roll!" in READY


def test_the_flags_the_h200_run_gave_are_in_0_5_17s_table():
    choice = flag_table("sglang", "0.5.17")
    assert choice.exact and choice.release == "0.5.17"
    flags = engine_flags("sglang", "0.5.17")
    for name in ("dtype", "attention-backend", "mem-fraction-static", "cuda-graph-max-bs", "cuda-graph-max-bs-decode"):
        assert name in flags, name
    assert {"fa3", "flashinfer", "triton"} <= set(flags["attention-backend"].choices)
    # the deprecation the H200 log printed: 0.5.17 keeps the old spelling as an alias
    assert "'--cuda-graph-max-bs' is deprecated" in FA3
