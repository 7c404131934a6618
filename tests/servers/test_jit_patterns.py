"""The lines that mean a compile, an autotune or a CUDA graph capture
(specdsl/facts/*-jit-patterns.tsv), read on the real H200 logs of vLLM
0.26.0 and SGLang 0.5.17 kept in tests/servers/data."""

from __future__ import annotations

from pathlib import Path

import pytest

from specdsl import facts
from specdsl.hosts import LocalHost
from specdsl.servers.jit import LogProbe, jit_events, patterns_for

DATA = Path(__file__).parent / "data"


def events(name: str, engine: str, version: str):
    return jit_events((DATA / name).read_text(), patterns_for(engine, version))


def after(text: str, marker: str) -> str:
    return text[text.index(marker) + len(marker):]


@pytest.mark.parametrize("log", ["vllm-0.26.0-h200-triton.log", "vllm-0.26.0-h200-flashinfer.log",
                                 "vllm-0.26.0-h200-flash-attn.log"])
def test_vllm_startup_compiles_autotunes_and_captures(log):
    kinds = [e.kind for e in events(log, "vllm", "0.26.0")]
    assert {"compile", "autotune", "graph_capture"} <= set(kinds), kinds
    lines = [e.line for e in events(log, "vllm", "0.26.0")]
    assert any("Compiling a graph for compile range (1, 8192) takes" in line for line in lines)
    assert any("[Autotuner]: Autotuning process starts" in line for line in lines)
    assert any("Graph capturing finished in" in line for line in lines)
    # the monitor's own start and the autotune cache's name are not compiles
    assert not any("Kernel JIT monitor activated" in line or "autotune cache file" in line for line in lines)


def test_vllm_triton_compiled_a_kernel_after_it_was_ready():
    """TRITON_ATTN on the H200: a second after `Application startup
    complete.` its JIT monitor logged kernel_unified_attention: the one
    event of the serving part of the log."""
    text = (DATA / "vllm-0.26.0-h200-triton.log").read_text()
    (one,) = jit_events(after(text, "Application startup complete."), patterns_for("vllm", "0.26.0"))
    assert one.kind == "compile"
    assert "Triton kernel JIT compilation during inference: kernel_unified_attention" in one.line


@pytest.mark.parametrize("log", ["vllm-0.26.0-h200-flashinfer.log", "vllm-0.26.0-h200-flash-attn.log"])
def test_vllm_other_backends_compiled_nothing_while_serving(log):
    text = (DATA / log).read_text()
    assert jit_events(after(text, "Application startup complete."), patterns_for("vllm", "0.26.0")) == []


def test_flashinfer_attention_warmup_is_a_compile():
    lines = [e.line for e in events("vllm-0.26.0-h200-flashinfer.log", "vllm", "0.26.0") if e.kind == "compile"]
    assert any("Warming up FlashInfer attention" in line for line in lines)


def test_sglang_captures_its_cuda_graphs_before_ready_and_nothing_after():
    text = (DATA / "sglang-0.5.17-flashinfer-ready.log").read_text()
    before, serving = text.split("The server is fired up and ready to roll!", 1) if "fired up" in text else (text, "")
    got = jit_events(before, patterns_for("sglang", "0.5.17"))
    assert {e.kind for e in got} == {"graph_capture"}
    assert any("Capture target prefill CUDA graph begin" in e.line for e in got)
    assert any("Capture target decode CUDA graph begin" in e.line for e in got)
    # a batch line that says it ran in a CUDA graph is not a capture
    assert "cuda graph: True" in text
    assert not any("Prefill batch" in e.line for e in jit_events(text, patterns_for("sglang", "0.5.17")))
    assert jit_events(serving, patterns_for("sglang", "0.5.17")) == []


def test_sglang_slow_capture_on_the_h200():
    """The 176-s prefill capture of the story's first SGLang launch
    (benchmarks/gpu/vllm-0.26.0/pipeline.log): its progress bar and the
    decode capture's begin line."""
    got = events("sglang-0.5.17-h200-slow-capture.log", "sglang", "0.5.17")
    assert any("Capture target decode CUDA graph begin" in e.line for e in got)
    assert sum("Capturing batches" in e.line for e in got) >= 6
    assert not any("Capture target prefill CUDA graph end" in e.line or "Engine startup timings" in e.line for e in got)


def test_the_older_sglang_wording_and_flashinfer_jit_deep_gemm():
    patterns = patterns_for("sglang", "0.5.17")
    lines = ["[2025-05-02 16:14:33] Capture cuda graph begin. This can take up to several minutes. avail mem=0.00 GB",
             "2025-06-08 21:06:35,733 - INFO - flashinfer.jit: Loading JIT ops: cascade",
             "[2026-01-01 00:00:00 TP0] Entering DeepGEMM JIT Pre-Compile session. It may take a long time"]
    assert [e.kind for e in jit_events("\n".join(lines), patterns)] == ["graph_capture", "compile", "compile"]


def test_sets_by_release_and_a_command_server_reads_every_engines():
    assert facts.jit_set("vllm", "0.26.0") == "vllm 0.26.0" and facts.jit_set("vllm", "0.33.0") == "vllm 0.26.0"
    assert facts.jit_set("sglang", "0.5.6") == "sglang 0.5.17"  # the nearest: older than the first
    assert facts.jit_set("command") == "" and facts.jit_patterns("command") == ()
    vllm_line = "(EngineCore pid=1) WARNING 12-02 11:28:32 [jit_monitor.py:135] Triton kernel JIT compilation during inference: k."
    assert [e.kind for e in jit_events(vllm_line, patterns_for("command", None))] == ["compile"]
    for engine in ("vllm", "sglang"):
        assert all(p.kind in facts.JIT_KINDS and p.source for p in facts.jit_patterns(engine))


def test_a_probe_reads_only_what_the_log_gained_and_waits_for_a_whole_line(tmp_path):
    log = tmp_path / "server.log"
    log.write_text((DATA / "vllm-0.26.0-h200-flash-attn.log").read_text())
    probe = LogProbe(LocalHost(), log, "vllm", "0.26.0")
    assert probe() == []  # the startup's lines were there before the probe
    with open(log, "a") as f:
        f.write("(EngineCore pid=1) WARNING 12-02 11:28:32 [jit_monitor.py:135] Triton kernel JIT compilation during")
    assert probe() == []  # half a line
    with open(log, "a") as f:
        f.write(" inference: kernel_unified_attention. This causes a latency spike\nINFO: 200 OK\n")
    (one,) = probe()
    assert "kernel_unified_attention" in one.line
    assert probe() == []
    log.write_text("[Autotuner]: Autotuning process starts\n")  # a new, shorter log: read whole
    assert [e.kind for e in probe()] == ["autotune"]


class CountingHost(LocalHost):
    """TEST DOUBLE: this machine, counting the bytes the probe reads."""

    def __init__(self) -> None:
        super().__init__()
        self.read = 0

    def read_from(self, path, offset):
        data = super().read_from(path, offset)
        self.read += len(data)
        return data


def test_a_probe_reads_the_log_once_not_again_at_every_call(tmp_path):
    log = tmp_path / "server.log"
    log.write_text((DATA / "vllm-0.26.0-h200-flash-attn.log").read_text())
    size = log.stat().st_size
    host = CountingHost()
    probe = LogProbe(host, log, "vllm", "0.26.0")
    assert host.read == size  # the startup, read once to mark its end
    for _ in range(5):
        assert probe() == []
    line = "[Autotuner]: Autotuning process starts\n"
    with open(log, "a") as f:
        f.write(line)
    assert [e.kind for e in probe()] == ["autotune"]
    # five quiet calls and one that found a line: the new bytes (and a byte a call to see the log is not shorter)
    assert host.read <= size + len(line) + 6, host.read
