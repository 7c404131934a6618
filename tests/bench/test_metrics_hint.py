"""A server that answers 404 at /metrics: SGLang's warning names the switch
that serves them (`--enable-metrics`); an engine that serves them by
default (vLLM) says nothing more."""

from __future__ import annotations

from specdsl.bench import run_benchmark
from specdsl.model.config import Workload
from specdsl.servers import adapter_for


def wl() -> Workload:
    return Workload(name="w", requests=4, concurrency=2, input_len=4, output_len=5, runs=1, warmup=0)


def test_sglang_names_enable_metrics_on_a_404(instant_server, tmp_path):
    side = adapter_for("sglang").server_side()
    run = run_benchmark(wl(), instant_server, "instant", tmp_path / "s", quirks=adapter_for("sglang").quirks, server=side).runs[0]
    assert run.server["metrics"] == ("unavailable: GET /metrics answered http 404; SGLang serves /metrics only with "
                                     "`--enable-metrics` (args = { enable-metrics = true })")
    assert any(w.startswith("no server metrics: unavailable") and "--enable-metrics" in w for w in run.warnings)
    vllm = run_benchmark(wl(), instant_server, "instant", tmp_path / "v", quirks=adapter_for("vllm").quirks,
                         server=adapter_for("vllm").server_side()).runs[0]
    assert vllm.server["metrics"] == "unavailable: GET /metrics answered http 404"
