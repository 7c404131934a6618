"""What each engine's OpenAI-compatible server accepts, so the load
generator asks for exactly what the server allows.

- vllm, sglang: `ignore_eos` gives an exact output length; the completions
  endpoint takes a prompt of token ids; `stream_options.include_usage`
  makes the last chunk carry token counts.
- transformers (`transformers serve`, 5.19): rejects unknown fields such as
  `ignore_eos` or `repetition_penalty` with HTTP 422 and takes only text
  prompts. An exact output length is still possible through its own
  `generation_config` field (a JSON string replacing the model's generation
  config): `{"max_new_tokens": N, "min_new_tokens": N}` stops EOS from ending
  a request early. That replaces the model's own sampling settings (greedy
  decoding unless the model's config is passed); it is what "ignore_eos"
  means for this engine. Its streams end with a chunk that carries both the
  finish reason and `usage`, and no `[DONE]`.
- command (any other OpenAI-compatible server): nothing beyond the basic
  API is assumed; `ignore_eos` only when the workload asks for it.

Token counts come from the server's `usage` when it sends one; otherwise
from the tokenizer (when given) over the streamed text; otherwise one token
per streamed chunk.
"""

from __future__ import annotations

import attrs


@attrs.frozen
class EngineQuirks:
    """`exact_len`: how an exact output length is requested: "ignore_eos",
    "generation_config" or "" (not possible by default). `token_ids`: the
    completions endpoint accepts a list of token ids as the prompt.
    `stream_usage`: send `stream_options.include_usage`."""

    exact_len: str
    token_ids: bool
    stream_usage: bool = True


QUIRKS: dict[str, EngineQuirks] = {
    "vllm": EngineQuirks(exact_len="ignore_eos", token_ids=True),
    "sglang": EngineQuirks(exact_len="ignore_eos", token_ids=True),
    "transformers": EngineQuirks(exact_len="generation_config", token_ids=False, stream_usage=False),
    "command": EngineQuirks(exact_len="", token_ids=False),
}


def quirks_for(engine: str) -> EngineQuirks:
    """The quirks of `engine`; an unknown engine is treated like "command"."""
    return QUIRKS.get(engine, QUIRKS["command"])


def exact_len_fields(engine: str, ignore_eos: bool | None, output_len: int) -> dict:
    """Request fields that ask for exactly `output_len` tokens, or {} when
    not wanted. `ignore_eos` None means the engine's default: exact where
    the engine allows it; True forces `ignore_eos` on engines with no other
    way (the server may reject it: that shows up as failed requests)."""
    quirks = quirks_for(engine)
    if ignore_eos is False:
        return {}
    if quirks.exact_len == "generation_config":
        import json

        config = {"max_new_tokens": output_len, "min_new_tokens": output_len}
        return {"generation_config": json.dumps(config, separators=(",", ":"))}
    if quirks.exact_len == "ignore_eos" or ignore_eos:
        return {"ignore_eos": True}
    return {}
