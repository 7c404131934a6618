"""`transformers serve` (Hugging Face transformers, 5.x): runs on a CPU too.

- argv: the `transformers` console script, `serve MODEL --host --port`.
- readiness: /health 200.
- effective configuration: `continuous_batching` from the per-request
  `[Request received] ... CB: True|False` log line (so read it after
  traffic); False until a request says otherwise.
- client quirks (5.19): unknown request fields such as `ignore_eos` are
  rejected with HTTP 422 and prompts are text only. An exact output length
  is still possible through its own `generation_config` field (a JSON string
  replacing the model's generation config) with `max_new_tokens` =
  `min_new_tokens` = N; that replaces the model's sampling settings (greedy
  unless the model's config is passed): it is what "ignore_eos" means here.
  Streams end with a chunk carrying the finish reason and `usage`, no `[DONE]`.
"""

from __future__ import annotations

import re
from typing import Any

from specdsl.facts.engines import transformers as transformers_facts
from specdsl.servers.args import render_args
from specdsl.servers.base import Adapter, console_script

_CB = re.compile(r"\[Request received\].*CB: (True|False)")


class Transformers(Adapter):
    name = "transformers"
    facts = transformers_facts.ENGINE  # flags, quirks, log patterns, impact (specdsl/facts/engines/transformers.py)

    def argv(self, server, env, bind, port, host=None):
        head = console_script(env, "transformers", "transformers.cli.transformers", host)
        return [*head, "serve", server.model, "--host", bind, "--port", str(port), *render_args(self.name, server.args)]

    def report(self, server, handle, log, config) -> dict[str, Any]:
        seen = _CB.findall(log)
        if seen:
            return {"continuous_batching": seen[-1] == "True"}
        return {} if "continuous_batching" in config else {"continuous_batching": False}


ADAPTER = Transformers()
