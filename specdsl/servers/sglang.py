"""SGLang (`python -m sglang.launch_server`).

- readiness: /health 200, which SGLang gives only after its warmup.
- effective configuration: facts from the log (the attention backend and
  whether it was chosen by default: the story's silent triton fallback, KV
  cache dtype, the `server_args=ServerArgs(...)` dump), then the server's own
  `/server_info` (every resolved setting; `/get_server_info` on older
  versions), nested dicts flattened as `outer.inner`.
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

from specdsl.bench.quirks import ClientQuirks
from specdsl.hosts.http import session
from specdsl.servers.args import render_args
from specdsl.servers.base import Adapter

_NOT_SPECIFIED = r"Attention backend not specified\. Use (\S+) backend by default\."


class Sglang(Adapter):
    name = "sglang"
    distributions = ("sglang",)
    quirks = ClientQuirks(exact_len="ignore_eos", token_ids=True)
    keyed = {
        _NOT_SPECIFIED: ("attention_backend",),
        r"Attention backend not specified\. Falling back to '([^']+)' for deterministic inference\.": ("attention_backend",),
        r"(?:Use|Using) (\S+) as attention backend (?:on (\S+) )?for (\S+?)\.?$": ("attention_backend", None, None),
        r"Using hybrid attention backend for decode and prefill: decode_backend=(\S+), prefill_backend=(\S+)\.": (
            "decode_attention_backend", "prefill_attention_backend"),
        r"Using KV cache dtype: (\S+)": ("kv_cache_dtype",),
    }
    default_backend = frozenset({_NOT_SPECIFIED})
    kv_lists = frozenset({r"server_args=ServerArgs\((.*)\)$"})
    cache_reset = ("POST", "/flush_cache")
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
                return {}
            if resp.status_code == 200:
                data = resp.json()
                return _flatten(data) if isinstance(data, dict) else {}
        return {}


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
