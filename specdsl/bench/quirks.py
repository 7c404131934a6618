"""What a server's OpenAI-compatible API accepts, as the load generator
needs to know it: a value each server adapter (specdsl/servers) provides,
so the client asks for exactly what the server allows.

Token counts come from the server's `usage` when it sends one; otherwise
from the tokenizer (when given) over the streamed text; otherwise one token
per streamed chunk.
"""

from __future__ import annotations

import json

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


def exact_len_fields(quirks: ClientQuirks, ignore_eos: bool | None, output_len: int) -> dict:
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
