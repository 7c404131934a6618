"""The prompts a workload sends.

- `random` (seeded by `workload.seed`): exactly `input_len` prompt tokens.
  Token ids when the endpoint accepts them (completions on vllm/sglang);
  otherwise text built with the model's tokenizer so that it re-encodes to
  exactly `input_len` tokens (without the special tokens the server may
  add). Without a tokenizer and without token-id prompts, the text is
  `input_len` random words: the length is then approximate, and the
  server's `usage` gives the real count.
- a JSONL file (`dataset = "path/to/prompts.jsonl"` or `"jsonl:PATH"`): one
  object per line with `prompt` (text) or `messages` (chat), and optionally
  `output_len`; lines are used in order, cycling when fewer than
  `requests`.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specdsl.bench.results import BenchError

_WORDS = (
    "the quick brown fox jumps over lazy dog server answers requests benchmark measures "
    "how fast throughput tokens per second latency time first token between plan says "
    "what will change apply does state records happened hello world model random weights"
).split()


@dataclass(frozen=True, slots=True)
class Prompt:
    """One request's input: `prompt` (text or token ids) for completions,
    `messages` for chat. `prompt_len` is the known token count (0 when
    unknown); `output_len` the tokens asked for."""

    prompt: str | list[int] | None
    messages: list[dict[str, Any]] | None
    prompt_len: int
    output_len: int


class Tokenizer:
    """A thin wrapper over a `tokenizers.Tokenizer` (or a transformers one)."""

    def __init__(self, backend: Any, kind: str):
        self._backend = backend
        self._kind = kind
        self._pool: list[int] | None = None

    def encode(self, text: str) -> list[int]:
        if self._kind == "tokenizers":
            return list(self._backend.encode(text, add_special_tokens=False).ids)
        return list(self._backend(text, add_special_tokens=False).input_ids)

    def decode(self, ids: list[int]) -> str:
        if self._kind == "tokenizers":
            return self._backend.decode(ids, skip_special_tokens=True)
        return self._backend.decode(ids, skip_special_tokens=True)

    def normal_ids(self) -> list[int]:
        """Ids of ordinary tokens that stand as text on their own: not
        special or added, and decoding to text that encodes back to that
        one id (a lone byte of a multi-byte character does not)."""
        if self._pool is None:
            if self._kind == "tokenizers":
                vocab = self._backend.get_vocab(with_added_tokens=False)
                special = set(self._backend.get_added_tokens_decoder())
            else:
                vocab = self._backend.get_vocab()
                special = set(self._backend.all_special_ids)
            candidates = sorted(i for i in vocab.values() if i not in special)
            self._pool = [i for i in candidates if self.encode(self.decode([i])) == [i]] or candidates
        return self._pool


def load_tokenizer(spec: str | None) -> Tokenizer | None:
    """The tokenizer at `spec`: a folder holding tokenizer.json, or that file.
    Falls back to transformers' AutoTokenizer when it is installed. None
    when `spec` is None."""
    if not spec:
        return None
    path = Path(spec)
    candidate = path / "tokenizer.json" if path.is_dir() else path
    if candidate.is_file():
        try:
            from tokenizers import Tokenizer as HFTokenizer
        except ImportError:  # pragma: no cover - tokenizers is a dependency
            HFTokenizer = None
        if HFTokenizer is not None:
            return Tokenizer(HFTokenizer.from_file(str(candidate)), "tokenizers")
    try:
        from transformers import AutoTokenizer  # type: ignore[import-not-found]
    except ImportError:
        raise BenchError(f"cannot load tokenizer {spec!r}: no tokenizer.json there and transformers is not installed")
    try:
        return Tokenizer(AutoTokenizer.from_pretrained(spec), "transformers")
    except Exception as exc:  # any loader failure is a user-facing error
        raise BenchError(f"cannot load tokenizer {spec!r}: {exc}") from exc


def jsonl_path(dataset: str) -> Path | None:
    """The JSONL file a `dataset` value names, or None for a built-in dataset."""
    if dataset.startswith("jsonl:"):
        return Path(dataset[len("jsonl:") :])
    if dataset.endswith(".jsonl"):
        return Path(dataset)
    return None


def build_prompts(
    workload: Any, count: int, *, chat: bool, token_ids: bool, tokenizer: Tokenizer | None, seed_offset: int = 0
) -> list[Prompt]:
    """`count` prompts for `workload` (see the module doc)."""
    path = jsonl_path(workload.dataset)
    if path is not None:
        return _jsonl_prompts(path, count, chat=chat, output_len=workload.output_len)
    if workload.dataset != "random":
        raise BenchError(f"unknown dataset {workload.dataset!r}: use 'random' or a .jsonl file of prompts")
    rng = random.Random(workload.seed + seed_offset)
    return [
        _random_prompt(rng, workload.input_len, workload.output_len, chat=chat, token_ids=token_ids, tokenizer=tokenizer)
        for _ in range(count)
    ]


def _random_prompt(
    rng: random.Random, input_len: int, output_len: int, *, chat: bool, token_ids: bool, tokenizer: Tokenizer | None
) -> Prompt:
    if tokenizer is not None:
        pool = tokenizer.normal_ids()
        ids = [rng.choice(pool) for _ in range(input_len)]
        if token_ids and not chat:
            return Prompt(ids, None, input_len, output_len)
        text, n = _text_of_exact_length(rng, tokenizer, ids, pool, input_len)
        return _text_prompt(text, n, output_len, chat)
    if token_ids and not chat:
        # No tokenizer: ids from a range every real vocabulary has as ordinary tokens.
        return Prompt([rng.randrange(1000, 2000) for _ in range(input_len)], None, input_len, output_len)
    text = " ".join(rng.choice(_WORDS) for _ in range(input_len))
    return _text_prompt(text, 0, output_len, chat)


def _text_of_exact_length(
    rng: random.Random, tokenizer: Tokenizer, ids: list[int], pool: list[int], input_len: int
) -> tuple[str, int]:
    """Text that re-encodes to `input_len` tokens: decode, re-encode, trim or
    top up, repeat until stable (decode/encode is not an exact round trip)."""
    text = tokenizer.decode(ids)
    for _ in range(64):
        again = tokenizer.encode(text)
        if len(again) == input_len:
            return text, input_len
        if len(again) > input_len:
            again = again[:input_len]
        else:
            again = again + [rng.choice(pool) for _ in range(input_len - len(again))]
        text = tokenizer.decode(again)
    return text, len(tokenizer.encode(text))


def _text_prompt(text: str, prompt_len: int, output_len: int, chat: bool) -> Prompt:
    if chat:
        return Prompt(None, [{"role": "user", "content": text}], prompt_len, output_len)
    return Prompt(text, None, prompt_len, output_len)


def _jsonl_prompts(path: Path, count: int, *, chat: bool, output_len: int) -> list[Prompt]:
    try:
        lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    except OSError as exc:
        raise BenchError(f"cannot read dataset {path}: {exc}") from exc
    items: list[Prompt] = []
    for lineno, line in enumerate(lines, 1):
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise BenchError(f"{path}:{lineno}: not JSON: {exc}") from exc
        if not isinstance(obj, dict) or not ("prompt" in obj or "messages" in obj):
            raise BenchError(f"{path}:{lineno}: expected an object with 'prompt' or 'messages'")
        out_len = int(obj.get("output_len", output_len))
        if "messages" in obj:
            if not chat:
                raise BenchError(f"{path}:{lineno}: 'messages' needs endpoint = \"chat\"")
            items.append(Prompt(None, list(obj["messages"]), 0, out_len))
        else:
            items.append(_text_prompt(str(obj["prompt"]), 0, out_len, chat))
    if not items:
        raise BenchError(f"dataset {path} has no prompts")
    return [items[k % len(items)] for k in range(count)]
