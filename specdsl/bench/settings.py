"""The settings of a benchmark's requests that change its results, recorded
with the result (`result.json` -> `settings`) so that a diff of two results
shows them: endpoint, dataset (with a digest of its file), lengths and the
exact-length mechanism, sampling (what the client sends; it sends no
temperature, top_p or sampling seed, so the server's defaults apply), the
seed of the prompts and the schedule, every field sent besides the prompt,
the request body as a template (specdsl.facts.client: what a benchmark's
identity holds), the tokenizer that built the prompts (with a digest of its
tokenizer.json), how many client processes sent them and the client's
versions.
"""

from __future__ import annotations

import hashlib
import json
import platform
from importlib import metadata
from pathlib import Path
from typing import Any

from specdsl.bench.datasets import PromptSource, tokenizer_file
from specdsl.bench.quirks import ClientQuirks, exact_len_fields
from specdsl.facts.client import request_template

_SAMPLING = ("temperature", "top_p", "top_k", "seed")


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def client_versions() -> dict[str, str | None]:
    import specdsl

    return {
        "specdsl": _version("specdsl") or specdsl.__version__,
        "aiohttp": _version("aiohttp"),
        "python": platform.python_version(),
    }


def exact_length(quirks: ClientQuirks, ignore_eos: bool | None) -> str:
    """How an exact output length is asked for, in words."""
    fields = exact_len_fields(quirks, ignore_eos, 1)
    if "ignore_eos" in fields:
        return "ignore_eos"
    if "generation_config" in fields:
        return "generation_config (min_new_tokens = max_new_tokens)"
    return "none: max_tokens only, the server may stop early at an end of sequence"


def tokenizer_record(spec: str | None) -> dict[str, Any] | None:
    """The tokenizer that built the prompts: its path and a digest of its
    tokenizer.json (None when the path holds none, e.g. a hub name)."""
    if not spec:
        return None
    file = tokenizer_file(spec)
    return {
        "path": str(Path(spec).resolve()) if Path(spec).exists() else spec,
        "tokenizer_json_sha256": hashlib.sha256(file.read_bytes()).hexdigest() if file else None,
    }


def steady_tolerance(workload: Any) -> float | None:
    """The tolerance of a steady warm-up (`warmup_tolerance`, 1% when only
    `warmup_time` is set); None when the warm-up is a count only."""
    from specdsl.bench.steady import DEFAULT_TOLERANCE

    tolerance = getattr(workload, "warmup_tolerance", None)
    if tolerance is not None:
        return tolerance
    return DEFAULT_TOLERANCE if getattr(workload, "warmup_time", None) else None


def request_settings(workload: Any, url: str, model: str, quirks: ClientQuirks, tokenizer: str | None,
                     source: PromptSource, sample_body: bytes) -> dict[str, Any]:
    """The settings of one benchmark (see the module doc); `sample_body` is
    one request as sent."""
    body = json.loads(sample_body)
    fields = {k: v for k, v in sorted(body.items()) if k not in ("prompt", "messages", "max_tokens")}
    dataset = source.describe()
    out: dict[str, Any] = {
        "url": url,
        "endpoint": workload.endpoint,
        "model": model,
        "dataset": dataset,
        "requests": workload.requests,
        "concurrency": workload.concurrency,
        "rate": workload.rate,
        "burstiness": workload.burstiness,
        "warmup": workload.warmup,
        "warmup_time": workload.warmup_time,
        "warmup_tolerance": steady_tolerance(workload),
        "duration": getattr(workload, "duration", None),
        "client_processes": getattr(workload, "client_processes", None) or 1,
        "input_len": workload.input_len if source.kind == "random" else None,
        "max_tokens": dataset.get("output_len", workload.output_len) if source.kind == "sharegpt" else workload.output_len,
        "exact_length": exact_length(quirks, workload.ignore_eos),
        "ignore_eos": workload.ignore_eos,
        "seed": workload.seed,
        "fresh_prompts": source.fresh,
        "token_id_prompts": isinstance(body.get("prompt"), list),
        "stream_usage": quirks.stream_usage,
        "request_fields": fields,
        "request_template": request_template(quirks, model=model, endpoint=workload.endpoint, dataset=workload.dataset,
                                              ignore_eos=workload.ignore_eos),
        "tokenizer": tokenizer_record(tokenizer),
        # per-request bounds (ms) of the goodput metrics; None: no goodput recorded
        "slo": dict(workload.slo) if getattr(workload, "slo", None) else None,
        # whether the prompts' lengths are tokens of that tokenizer (workload `tokenizer`)
        "prompt_lengths_in": "tokens of the tokenizer" if tokenizer else "no tokenizer: random ids or words; the server's usage counts",
        "client": client_versions(),
    }
    for key in _SAMPLING:
        # not sent: the server's default (null here); a value when a field sends it
        out["sampling_seed" if key == "seed" else key] = body.get(key)
    return out
