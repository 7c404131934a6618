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

from specdsl.facts.engines import sglang as sglang_facts
from specdsl.hosts.http import session
from specdsl.servers.args import render_args
from specdsl.servers.base import Adapter

# what /server_info says for a setting it leaves to be resolved at startup
_UNRESOLVED = ("auto", None, "")


class Sglang(Adapter):
    name = "sglang"
    facts = sglang_facts.ENGINE  # flags, quirks, log patterns, impact (specdsl/facts/engines/sglang.py)

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
                return resolved_over(flatten(data), config) if isinstance(data, dict) else {}
        return {}


def resolved_over(report: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    """The server's report without the unresolved values (`'auto'`, None)
    of keys the log (or the spec) already resolved: what was resolved wins."""
    return {k: v for k, v in report.items()
            if not (_is_unresolved(v) and k in config and not _is_unresolved(config[k]))}


def _is_unresolved(value: Any) -> bool:
    return isinstance(value, (str, type(None))) and value in _UNRESOLVED


def flatten(data: dict[str, Any]) -> dict[str, Any]:
    """SGLang's /server_info as one level: top-level keys as they are;
    nested dicts (e.g. internal states) as `outer.inner` (also read by
    specdsl.servers.endpoint for a server already running)."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict):
            for inner, v in value.items():
                out[f"{key}.{inner}"] = v
        else:
            out[key] = value
    return out


ADAPTER = Sglang()
