"""What a server's OpenAI-compatible API accepts, as the benchmark client
needs to know it (`ClientQuirks`, one per engine: specdsl.facts.engines
`QUIRKS`), and the request
the client sends, as a template (`request_template`).

Pure: planning reads the template into a benchmark's identity (graph/build:
a change of what the client would send, or of how it works within the
server's API, reruns the benchmark, and `specdsl plan` names the field);
the load generator (specdsl.bench.loadgen `request_body`) sends it with the
prompt and the length filled in. The engine adapters (specdsl/servers)
take their quirks from the engines' facts, so there is one source of them.

Token counts come from the server's `usage` when it sends one; otherwise
from the tokenizer (when given) over the streamed text; otherwise one token
per streamed chunk.
"""

from __future__ import annotations

import json
from typing import Any

import attrs


@attrs.frozen
class ClientQuirks:
    """`exact_len`: how an exact output length is requested: "ignore_eos",
    "generation_config" (a JSON generation config with max = min new
    tokens) or "" (not possible by default). `token_ids`: the completions
    endpoint accepts a list of token ids as the prompt. `stream_usage`: send
    `stream_options.include_usage`."""

    exact_len: str
    token_ids: bool
    stream_usage: bool = True


BASIC = ClientQuirks(exact_len="", token_ids=False)
# Each engine's quirks are in its module of specdsl.facts.engines
# (`engines.QUIRKS`: by engine name); each adapter's `quirks` is its entry.

# What stands for the values of one request in a template.
PROMPT_TEXT, PROMPT_IDS, MESSAGES, MAX_TOKENS = "{prompt: text}", "{prompt: token ids}", "{messages}", "{max_tokens}"


def exact_len_fields(quirks: ClientQuirks, ignore_eos: bool | None, output_len: Any) -> dict:
    """Request fields that ask for exactly `output_len` tokens, or {} when
    not wanted. `ignore_eos` None means the engine's default: exact where
    the engine allows it; True forces `ignore_eos` on engines with no other
    way (the server may reject it: that shows up as failed requests)."""
    if ignore_eos is False:
        return {}
    if quirks.exact_len == "generation_config":
        config = {"max_new_tokens": output_len, "min_new_tokens": output_len}
        return {"generation_config": json.dumps(config, separators=(",", ":"))}
    if quirks.exact_len == "ignore_eos" or ignore_eos:
        return {"ignore_eos": True}
    return {}


def request_template(quirks: ClientQuirks, *, model: str, endpoint: str, dataset: str,
                     ignore_eos: bool | None) -> dict[str, Any]:
    """The body of every streaming request of a built-in workload, as
    `request_body` builds it, with `{prompt: text}`, `{prompt: token ids}`
    or `{messages}` for the prompt and `{max_tokens}` for the output length
    (inside `generation_config` too). Text prompts unless the endpoint is
    completions, the dataset is random and the server takes token ids."""
    body: dict[str, Any] = {"model": model, "stream": True, "max_tokens": MAX_TOKENS}
    if endpoint == "chat":
        body["messages"] = MESSAGES
    else:
        body["prompt"] = PROMPT_IDS if quirks.token_ids and dataset == "random" else PROMPT_TEXT
    if quirks.stream_usage:
        body["stream_options"] = {"include_usage": True}
    fields = exact_len_fields(quirks, ignore_eos, 0)
    if "generation_config" in fields:  # the length placeholder inside its JSON text
        fields["generation_config"] = fields["generation_config"].replace(":0", ":" + MAX_TOKENS)
    body.update(fields)
    return body


def client_settings(quirks: ClientQuirks) -> dict[str, Any]:
    """How the client works within the server's API, beside the body: the
    quirks it was given (they decide the prompt form and how tokens are
    counted)."""
    return attrs.asdict(quirks)
