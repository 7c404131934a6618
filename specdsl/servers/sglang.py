"""SGLang (`python -m sglang.launch_server`).

- readiness: /health 200, which SGLang gives only after its warmup.
- effective configuration: facts from the log (the attention backend and
  whether it was chosen by default: the story's silent triton fallback, KV
  cache dtype, the `server_args=ServerArgs(...)` dump), then the server's own
  `/server_info` (every resolved setting; `/get_server_info` on older
  versions, tried also when the first refuses the connection), nested
  dicts flattened as `outer.inner`. The report gives settings as they
  were asked, some unresolved (`kv_cache_dtype: 'auto'`, `attention_backend:
  None`): a value the log resolved (`Using KV cache dtype: torch.bfloat16`)
  is kept over an unresolved one.
- log patterns per release (specdsl/facts): 0.5.6 (read from its release
  wheel) says "Attention backend not explicitly specified. Use flashinfer
  backend by default.", its weight-loading line has no `elapsed=` and its
  lines carry no level name or file:line; 0.5.9 says "not specified".
- client quirks: `ignore_eos`, token-id prompts, usage in the stream.
- beside the API: `POST /flush_cache` empties the radix (prefix) cache
  (200, or 400 while requests are running); Prometheus metrics at /metrics
  only with `--enable-metrics` (sglang/srt/metrics/collector.py): counters
  of prompt, generation and cached prompt tokens and of requests, and the
  gauges `sglang:spec_accept_length` and `sglang:spec_accept_rate` (the
  most recent batch's figures, not a run's average).
"""

from __future__ import annotations

from typing import Any

import requests

from specdsl.bench.quirks import QUIRKS
from specdsl.hosts.http import session
from specdsl.servers.args import render_args
from specdsl.servers.base import Adapter

_NOT_SPECIFIED = r"Attention backend not specified\. Use (\S+) backend by default\."  # 0.5.9
_NOT_EXPLICIT = r"Attention backend not explicitly specified\. Use (\S+) backend by default\."  # 0.5.6
# what /server_info says for a setting it leaves to be resolved at startup
_UNRESOLVED = ("auto", None, "")


class Sglang(Adapter):
    name = "sglang"
    distributions = ("sglang",)
    quirks = QUIRKS["sglang"]  # one source with planning (specdsl.facts.engines)
    keyed = {
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
    default_backend = frozenset({_NOT_SPECIFIED, _NOT_EXPLICIT})
    kv_lists = frozenset({r"server_args=ServerArgs\((.*)\)$"})
    cache_reset = ("POST", "/flush_cache")
    impact = {
        "attention_backend": "the attention kernel runs in every layer of every step (the story's triton fallback)",
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
    volatile = frozenset({"port", "nccl_port", "random_seed", "dist_init_addr"})
    impact_packages = {
        "sglang": "the serving engine itself",
        "sgl-kernel": "SGLang's own kernels (attention, MoE, quantization)",
        "flashinfer-python": "the flashinfer attention and sampling kernels",
        "torch": "the kernels, CUDA runtime and NCCL every step runs",
        "triton": "the triton kernels (the triton attention backend among them)",
        "deep-gemm": "the DeepGEMM FP8 matmul kernels",
    }
    counters = {
        "requests": "sglang:num_requests",
        "prompt_tokens": "sglang:prompt_tokens",
        "generation_tokens": "sglang:generation_tokens",
        "cached_prompt_tokens": "sglang:cached_tokens",
    }
    gauges = {"spec_accept_length": "sglang:spec_accept_length", "spec_accept_rate": "sglang:spec_accept_rate"}

    def argv(self, server, env, bind, port, host=None):
        return [env.python, "-m", "sglang.launch_server", "--model-path", server.model, "--host", bind, "--port", str(port),
                *render_args(self.name, server.args)]

    def report(self, server, handle, log, config) -> dict[str, Any]:
        http = session(10.0)
        for path in ("/server_info", "/get_server_info"):
            try:
                resp = http.get(handle.base_url + path)
            except requests.RequestException:
                continue  # a refused or broken connection on one path: the other may answer
            if resp.status_code == 200:
                try:
                    data = resp.json()
                except ValueError:
                    continue
                return resolved_over(_flatten(data), config) if isinstance(data, dict) else {}
        return {}


def resolved_over(report: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    """The server's report without the unresolved values (`'auto'`, None)
    of keys the log (or the spec) already resolved: what was resolved wins."""
    return {k: v for k, v in report.items()
            if not (_is_unresolved(v) and k in config and not _is_unresolved(config[k]))}


def _is_unresolved(value: Any) -> bool:
    return isinstance(value, (str, type(None))) and value in _UNRESOLVED


def _flatten(data: dict[str, Any]) -> dict[str, Any]:
    """Top-level keys as they are; nested dicts (e.g. internal states) as `outer.inner`."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict):
            for inner, v in value.items():
                out[f"{key}.{inner}"] = v
        else:
            out[key] = value
    return out


ADAPTER = Sglang()
