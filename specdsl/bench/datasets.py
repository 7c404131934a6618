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
- a ShareGPT file (`dataset = "sharegpt:PATH"`, or a path ending in
  `.json`): a JSON list of `{"conversations": [{"from": "human", "value":
  ...}, {"from": "gpt", "value": ...}, ...]}`, sampled as `vllm bench serve
  --dataset-name sharegpt` does (vllm/benchmarks/datasets.py): entries
  shuffled with the seed, the first human turn the prompt (vLLM takes the
  first turn, which in ShareGPT is the human one) and the gpt turn after it
  giving the output length (its token count) unless `output_len` is set to
  other than its default (128: `output_len` = 128 written out cannot be
  told from no `output_len`); entries kept only with a prompt of 4-1024
  tokens, an output of >= 4 tokens (not checked when `output_len` fixes it)
  and prompt + output <= 2048 tokens; too few kept entries are topped up by
  drawing again among them. Token counts need the model's tokenizer; without
  one they are counted as whitespace-separated words (recorded as such).

Fresh prompts: `PromptSource.prompts(count, run)` seeds each run's prompts
from the workload's seed and the run's index (`prompt_seed`), so run 2 is not
served from a prefix cache that run 1 filled; the warmup has its own. A
random dataset gives new prompts each run, a ShareGPT file a new sample of
its entries; a JSONL file gives its own prompts, the same every run. A
run of `duration` asks for as many as it will send (specdsl.bench.loadgen,
`prompt_count`), so that no request meets a prompt of its own run.
"""

from __future__ import annotations

import functools
import hashlib
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import attrs

from specdsl.bench.results import BenchError
from specdsl.model.config import Workload
from specdsl.model.datasets import dataset_file

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
            return _tokenizer_file(str(candidate.resolve()), candidate.stat().st_mtime_ns)
    try:
        from transformers import AutoTokenizer  # type: ignore[import-not-found]
    except ImportError:
        raise BenchError(f"cannot load tokenizer {spec!r}: no tokenizer.json there and transformers is not installed")
    try:
        return Tokenizer(AutoTokenizer.from_pretrained(spec), "transformers")
    except Exception as exc:  # any loader failure is a user-facing error
        raise BenchError(f"cannot load tokenizer {spec!r}: {exc}") from exc


@functools.lru_cache(maxsize=8)
def _tokenizer_file(path: str, _mtime_ns: int) -> Tokenizer:
    """One loaded tokenizer.json per file and version of it: a paired
    benchmark calls the load generator once per run and per warm-up (each
    loading it took a parse of the file); its encode is read-only."""
    from tokenizers import Tokenizer as HFTokenizer

    return Tokenizer(HFTokenizer.from_file(path), "tokenizers")


def tokenizer_file(spec: str | None) -> Path | None:
    """The tokenizer.json that `spec` (as for load_tokenizer) names, if any."""
    if not spec:
        return None
    path = Path(spec)
    candidate = path / "tokenizer.json" if path.is_dir() else path
    return candidate if candidate.is_file() else None


def jsonl_path(dataset: str) -> Path | None:
    """The JSONL file a `dataset` value names (`model.datasets`' rule), or None."""
    found = dataset_file(dataset)
    return Path(found.path) if found is not None and found.kind == "jsonl" else None


def sharegpt_path(dataset: str) -> Path | None:
    """The ShareGPT file a `dataset` value names (`model.datasets`' rule), or None."""
    found = dataset_file(dataset)
    return Path(found.path) if found is not None and found.kind == "sharegpt" else None


def dataset_kind(dataset: str) -> tuple[str, Path | None]:
    """("random", None), ("jsonl", PATH) or ("sharegpt", PATH); BenchError
    for anything else."""
    if dataset == "random":
        return "random", None
    path = jsonl_path(dataset)
    if path is not None:
        return "jsonl", path
    path = sharegpt_path(dataset)
    if path is not None:
        return "sharegpt", path
    raise BenchError(f"unknown dataset {dataset!r}: use 'random', a .jsonl file of prompts or 'sharegpt:FILE.json'")


def prompt_seed(seed: int, run: int | str) -> int:
    """The seed of one run's prompts (`run` its index, or "warmup"): the
    same in every process (no hash randomization)."""
    return int.from_bytes(hashlib.sha256(f"{seed}/{run}".encode()).digest()[:8], "big")


def build_prompts(
    workload: Any, count: int, *, chat: bool, token_ids: bool, tokenizer: Tokenizer | None, seed_offset: int = 0,
    seed: int | None = None,
) -> list[Prompt]:
    """`count` prompts for `workload` (see the module doc), seeded by `seed`
    (default: the workload's seed + `seed_offset`)."""
    seed = workload.seed + seed_offset if seed is None else seed
    kind, path = dataset_kind(workload.dataset)
    if kind == "jsonl":
        prompts = _jsonl_prompts(path, count, chat=chat, output_len=workload.output_len)
        return [_counted(p, tokenizer) for p in prompts] if tokenizer is not None else prompts
    if kind == "sharegpt":
        return ShareGPT(path, tokenizer, fixed_output_len(workload)).sample(count, seed, chat=chat)[0]
    rng = random.Random(seed)
    return [
        _random_prompt(rng, workload.input_len, workload.output_len, chat=chat, token_ids=token_ids, tokenizer=tokenizer)
        for _ in range(count)
    ]


def _counted(prompt: Prompt, tokenizer: Tokenizer) -> Prompt:
    """A file's prompt with its length counted by `tokenizer` (the text, or
    each message's content)."""
    if isinstance(prompt.prompt, list):
        return prompt
    if prompt.messages is not None:
        n = sum(len(tokenizer.encode(str(m.get("content", "")))) for m in prompt.messages)
    else:
        n = len(tokenizer.encode(prompt.prompt or ""))
    return Prompt(prompt.prompt, prompt.messages, n, prompt.output_len)


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


def _jsonl_prompts(path: Path, count: int, *, chat: bool, output_len: int, all_lines: bool = False) -> list[Prompt]:
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
    if all_lines:
        return items
    return [items[k % len(items)] for k in range(count)]


# vLLM's filter of ShareGPT entries (vllm/benchmarks/datasets.py, is_valid_sequence)
SHAREGPT_MIN_LEN = 4
SHAREGPT_MAX_PROMPT_LEN = 1024
SHAREGPT_MAX_TOTAL_LEN = 2048
_HUMAN = ("human", "user")
_GPT = ("gpt", "assistant", "chatgpt")
_DEFAULT_OUTPUT_LEN = attrs.fields(Workload).output_len.default


def fixed_output_len(workload: Any) -> int | None:
    """The output length a ShareGPT workload fixes, or None: each request's
    gpt turn decides (`output_len` at its default)."""
    return None if workload.output_len == _DEFAULT_OUTPUT_LEN else int(workload.output_len)


class ShareGPT:
    """A ShareGPT file, read once; `sample` draws one run's prompts."""

    def __init__(self, path: Path, tokenizer: Tokenizer | None, output_len: int | None):
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise BenchError(f"cannot read dataset {path}: {exc}") from exc
        except ValueError as exc:
            raise BenchError(f"{path}: not JSON: {exc}") from exc
        if not isinstance(data, list):
            raise BenchError(f"{path}: a ShareGPT file is a JSON list of {{\"conversations\": [...]}} entries")
        self.path = Path(path)
        self.pairs = [pair for pair in map(_first_exchange, data) if pair is not None]
        if not self.pairs:
            raise BenchError(f"{path}: no entry has a human turn followed by a gpt turn")
        self.tokenizer = tokenizer
        self.output_len = output_len
        self.lengths_from = "tokenizer" if tokenizer is not None else "words"
        self._lens: dict[int, tuple[int, int]] = {}

    def _count(self, text: str) -> int:
        return len(self.tokenizer.encode(text)) if self.tokenizer is not None else len(text.split())

    def _lengths(self, k: int) -> tuple[int, int]:
        if k not in self._lens:
            prompt, completion = self.pairs[k]
            self._lens[k] = (self._count(prompt), self._count(completion))
        return self._lens[k]

    def sample(self, count: int, seed: int, *, chat: bool) -> tuple[list[Prompt], dict[str, Any]]:
        """`count` prompts (vLLM's sampling, see the module doc) and a note
        of what was drawn."""
        rng = random.Random(seed)
        order = list(range(len(self.pairs)))
        rng.shuffle(order)
        chosen: list[Prompt] = []
        for k in order:
            if len(chosen) >= count:
                break
            prompt_len, completion_len = self._lengths(k)
            out_len = self.output_len if self.output_len is not None else completion_len
            if not _valid(prompt_len, out_len, check_output=self.output_len is None):
                continue
            known = prompt_len if self.tokenizer is not None else 0
            chosen.append(_text_prompt(self.pairs[k][0], known, out_len, chat))
        if not chosen:
            raise BenchError(
                f"{self.path}: no entry passes vLLM's ShareGPT filter (prompt {SHAREGPT_MIN_LEN}-{SHAREGPT_MAX_PROMPT_LEN}"
                f" tokens, output >= {SHAREGPT_MIN_LEN}, prompt + output <= {SHAREGPT_MAX_TOTAL_LEN};"
                f" counted as {self.lengths_from})")
        note: dict[str, Any] = {"entries": len(self.pairs), "lengths_from": self.lengths_from}
        if len(chosen) < count:
            note["repeated"] = count - len(chosen)
            chosen += rng.choices(chosen, k=count - len(chosen))
        return chosen, note


def _first_exchange(entry: Any) -> tuple[str, str] | None:
    """(first human turn, the gpt turn after it) of a ShareGPT entry."""
    turns = entry.get("conversations") if isinstance(entry, dict) else None
    if not isinstance(turns, list):
        return None
    for k, turn in enumerate(turns):
        if isinstance(turn, dict) and turn.get("from") in _HUMAN:
            for later in turns[k + 1 :]:
                if isinstance(later, dict) and later.get("from") in _GPT:
                    return str(turn.get("value", "")), str(later.get("value", ""))
            return None
    return None


def _valid(prompt_len: int, output_len: int, *, check_output: bool) -> bool:
    if prompt_len < SHAREGPT_MIN_LEN or prompt_len > SHAREGPT_MAX_PROMPT_LEN:
        return False
    if check_output and output_len < SHAREGPT_MIN_LEN:
        return False
    return prompt_len + output_len <= SHAREGPT_MAX_TOTAL_LEN


class PromptSource:
    """The prompts of one benchmark, run by run (see "Fresh prompts" in the
    module doc). A dataset file is read once."""

    def __init__(self, workload: Any, *, chat: bool, token_ids: bool, tokenizer: Tokenizer | None):
        self.workload = workload
        self.chat = chat
        self.token_ids = token_ids
        self.tokenizer = tokenizer
        self.kind, self.path = dataset_kind(workload.dataset)
        self.fresh = self.kind in ("random", "sharegpt")
        self._jsonl: list[Prompt] | None = None
        self._sharegpt: ShareGPT | None = None
        if self.kind == "jsonl":
            self._jsonl = _jsonl_prompts(self.path, 1, chat=chat, output_len=workload.output_len, all_lines=True)
        elif self.kind == "sharegpt":
            self._sharegpt = ShareGPT(self.path, tokenizer, fixed_output_len(workload))

    def prompts(self, count: int, run: int | str) -> tuple[list[Prompt], dict[str, Any]]:
        """`count` prompts for run `run` (an index, or "warmup") and the
        record of how they were made."""
        w = self.workload
        if self.kind == "jsonl":
            items = self._jsonl
            return [items[k % len(items)] for k in range(count)], {
                "dataset": "jsonl", "fresh": False, "why": "a JSONL file's own prompts, the same every run"}
        seed = prompt_seed(w.seed, run)
        record: dict[str, Any] = {"dataset": self.kind, "fresh": True, "seed": w.seed, "run": run, "prompt_seed": seed}
        if self.kind == "sharegpt":
            prompts, note = self._sharegpt.sample(count, seed, chat=self.chat)
            return prompts, record | note
        return build_prompts(w, count, chat=self.chat, token_ids=self.token_ids, tokenizer=self.tokenizer, seed=seed), record

    def describe(self) -> dict[str, Any]:
        """The dataset as recorded in a result's settings."""
        out: dict[str, Any] = {"name": self.workload.dataset, "kind": self.kind}
        if self.path is not None:
            out["path"] = str(self.path.resolve())
            out["sha256"] = hashlib.sha256(self.path.read_bytes()).hexdigest()
        if self._sharegpt is not None:
            out["entries"] = len(self._sharegpt.pairs)
            out["lengths_from"] = self._sharegpt.lengths_from
            out["output_len"] = self._sharegpt.output_len if self._sharegpt.output_len is not None else "each entry's gpt turn"
        return out


def local_dataset(dataset: str, spec_dir: Path | str | None) -> str:
    """`dataset` with a relative file path made relative to the spec's
    folder (where the user wrote it), not to the current directory."""
    found = dataset_file(dataset)
    if spec_dir is None or found is None or Path(found.path).is_absolute():
        return dataset
    return found.prefix + str(found.under(spec_dir).resolve())


def check_dataset(workload: Any, spec_dir: Path | str | None = None) -> str | None:
    """Why `workload`'s dataset file cannot be used (missing, empty,
    malformed), read as the benchmark would read it, or None. Apply calls it
    for every benchmark it will run before anything starts."""
    if workload.command or workload.dataset == "random":
        return None
    try:
        kind, path = dataset_kind(local_dataset(workload.dataset, spec_dir))
        if kind == "jsonl":
            _jsonl_prompts(path, 1, chat=workload.endpoint == "chat", output_len=workload.output_len, all_lines=True)
        else:
            ShareGPT(path, None, fixed_output_len(workload))
    except BenchError as exc:
        return str(exc)
    return None
