"""SGLang (`python -m sglang.launch_server`): its facts (see base.Engine).

Flag tables read from each release's package (specdsl/facts, their
headers name the wheel); log patterns per release: 0.5.6 says "Attention
backend not explicitly specified", 0.5.9 "not specified", 0.5.17 moved most
of the resolution lines to srt/arg_groups/.
"""

from __future__ import annotations

from specdsl.facts.client import ClientQuirks
from specdsl.facts.engines.base import Engine, size


def _gpus(args: dict[str, object]) -> int:
    """Tensor x pipeline x data parallel size, the data parallel size left
    out with `--enable-dp-attention` (attention DP runs inside the TP
    group), divided by `--nnodes`; expert parallelism is inside TP too."""
    need = size(args, "tensor_parallel_size") * size(args, "pipeline_parallel_size")
    if args.get("enable_dp_attention") is not True:
        need *= size(args, "data_parallel_size")
    return max(1, -(-need // size(args, "nnodes")))


_NOT_SPECIFIED = r"Attention backend not specified\. Use (\S+) backend by default\."  # 0.5.9
_NOT_EXPLICIT = r"Attention backend not explicitly specified\. Use (\S+) backend by default\."  # 0.5.6
# log pattern (regex text, as in its pattern sets) -> the effective keys its groups set
KEYED = {
    _NOT_SPECIFIED: ("attention_backend",),
    _NOT_EXPLICIT: ("attention_backend",),
    r"Attention backend not specified\. Falling back to '([^']+)' for deterministic inference\.": ("attention_backend",),
    r"(?:Use|Using) (\S+) as attention backend (?:on (\S+) )?for (\S+?)\.?$": ("attention_backend", None, None),
    r"Use (\S+) as attention backend on (\S+) for Llama4 model": ("attention_backend", None),  # 0.5.6
    r"Using hybrid attention backend for decode and prefill: decode_backend=(\S+), prefill_backend=(\S+)\.": (
        "decode_attention_backend", "prefill_attention_backend"),
    r"Using KV cache dtype: (\S+)": ("kv_cache_dtype",),
    r"Load weight end\. elapsed=([\d.]+) s, type=(\w+), dtype=(\S+), avail mem=([\d.]+) GB, mem usage=([\d.]+) GB\.": (
        None, "architecture", "dtype", None, "weights_mem_gb"),
    r"Load weight end\. type=(\w+), dtype=(\S+), avail mem=([\d.]+) GB, mem usage=([\d.]+) GB\.": (
        "architecture", "dtype", None, "weights_mem_gb"),
    # 0.5.17: no dtype= in the weights line; the KV cache line names its dtype
    r"Load weight end\. elapsed=([\d.]+) s, type=(\w+), (?:[^,]*, )?avail mem=([\d.]+) GB, mem usage=([\d.]+) GB\.": (
        None, "architecture", None, "weights_mem_gb"),
    r"KV Cache is allocated\. dtype: (\S+), #tokens: (\d+), (?:K size: ([\d.]+) GB, V size: ([\d.]+) GB|KV size: ([\d.]+) GB)": (
        "kv_cache_dtype", None, None, None, None),
}
DEFAULT_BACKEND = frozenset({_NOT_SPECIFIED, _NOT_EXPLICIT})
KV_LISTS = frozenset({r"server_args=ServerArgs\((.*)\)$"})
CACHE_RESET = ("POST", "/flush_cache")
# for diagnosis: the effective keys and distributions that move its performance, and why
IMPACT = {
    "attention_backend": "the attention kernel runs in every layer of every step",
    "decode_attention_backend": "the decode attention kernel runs in every decode step",
    "prefill_attention_backend": "the prefill attention kernel sets time to first token",
    "speculative_algorithm": "speculative decoding changes tokens per step",
    "speculative_num_steps": "draft length changes accepted tokens per step",
    "speculative_eagle_topk": "draft width changes accepted tokens per step",
    "speculative_num_draft_tokens": "draft tokens per step change accepted tokens and verify cost",
    "kv_cache_dtype": "the KV cache precision changes memory traffic of attention",
    "disable_cuda_graph": "without CUDA graphs every decode step pays kernel launch overhead",
    "cuda_graph_max_bs": "batches above it run without CUDA graphs",
    "tp_size": "tensor parallelism changes per-GPU work and all-reduce traffic",
    "ep_size": "expert parallelism changes MoE all-to-all traffic",
    "dp_size": "data parallel attention changes per-GPU batch",
    "enable_dp_attention": "data parallel attention changes per-GPU batch",
    "moe_runner_backend": "the MoE kernel runs in every MoE layer",
    "moe_a2a_backend": "the MoE all-to-all path",
    "quantization": "quantized weights change kernels and precision",
    "dtype": "the weights' precision",
    "mem_fraction_static": "the KV pool size bounds running requests",
    "max_running_requests": "caps the batch size",
    "chunked_prefill_size": "prefill chunking trades TTFT for decode smoothness",
    "disable_radix_cache": "without the radix cache shared prefixes are recomputed",
    "disable_overlap_schedule": "without the overlap scheduler CPU work stalls the GPU",
    "enable_torch_compile": "torch.compile changes the kernels",
    "enable_symm_mem": "symmetric memory changes all-reduce",
    "enable_flashinfer_allreduce_fusion": "fused all-reduce changes TP communication",
    "disable_custom_all_reduce": "falls back to NCCL all-reduce",
    "page_size": "KV page size can force another attention kernel",
}
# chosen afresh at each launch (specdsl picks the port; SGLang draws the rest)
VOLATILE = frozenset({"port", "nccl_port", "random_seed", "dist_init_addr"})
IMPACT_PACKAGES = {
    "sglang": "the serving engine itself",
    "sgl-kernel": "SGLang's own kernels (attention, MoE, quantization)",
    "flashinfer-python": "the flashinfer attention and sampling kernels",
    "torch": "the kernels, CUDA runtime and NCCL every step runs",
    "triton": "the triton kernels (the triton attention backend among them)",
    "deep-gemm": "the DeepGEMM FP8 matmul kernels",
}
# the client's server-side quantities -> its Prometheus metrics (beside the API)
COUNTERS = {
    "requests": "sglang:num_requests",
    "prompt_tokens": "sglang:prompt_tokens",
    "generation_tokens": "sglang:generation_tokens",
    "cached_prompt_tokens": "sglang:cached_tokens",
}
# the scheduler's running prefix-cache hit rate (metrics/collector.py): the
# hit rate of a run where the counters are not there (the counters win)
GAUGES = {"spec_accept_length": "sglang:spec_accept_length", "spec_accept_rate": "sglang:spec_accept_rate",
          "prefix_cache_hit_rate": "sglang:cache_hit_rate"}


ENGINE = Engine(
    name="sglang",
    label="SGLang",
    distributions=("sglang",),
    flag_tables=(("0.5.6", "sglang-v0.5.6-server-args.tsv"), ("0.5.9", "sglang-v0.5.9-server-args.tsv"),
                 ("0.5.17", "sglang-v0.5.17-server-args.tsv")),
    # the table of a stack that pins no release (the one every spec was
    # checked against before tables per release)
    default_release="0.5.9",
    pattern_sets=(("0.5.6", "sglang-v0.5.6-log-patterns.tsv"), ("0.5.9", "sglang-log-patterns.tsv"),
                  ("0.5.17", "sglang-v0.5.17-log-patterns.tsv")),
    jit_sets=(("0.5.17", "sglang-v0.5.17-jit-patterns.tsv"),),
    # the facts its adapter reads from the log and /server_info beside the
    # table's dests
    effective_extra=("attention_backend", "decode_attention_backend", "prefill_attention_backend", "kv_cache_dtype",
                     "architecture", "dtype", "weights_mem_gb",
                     # ServerArgs' field names, which /server_info reports; the 0.5.9
                     # table has argparse dests `tensor_parallel_size` etc. for them
                     "tp_size", "dp_size", "ep_size", "pp_size"),
    quirks=ClientQuirks(exact_len="ignore_eos", token_ids=True),
    # set from the server block (model, port) or needed to reach it
    managed={"model-path": "model", "model": "model", "port": "port", "host": None},
    started_by=lambda argv: "sglang.launch_server" in " ".join(argv),
    gpus=_gpus,
    keyed=KEYED,
    default_backend=DEFAULT_BACKEND,
    kv_lists=KV_LISTS,
    cache_reset=CACHE_RESET,
    # sglang/srt/entrypoints/http_server.py adds /metrics only when enable_metrics
    metrics_hint="SGLang serves /metrics only with `--enable-metrics` (args = { enable-metrics = true })",
    impact_packages=IMPACT_PACKAGES,
    impact=IMPACT,
    volatile=VOLATILE,
    counters=COUNTERS,
    gauges=GAUGES,
)
