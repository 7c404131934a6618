"""The configuration a server actually runs with, and warnings from its log.

Effective config is a flat dict with normalized keys (argparse dest names:
`attention_backend`, `max_model_len`, plus `version`, and for transformers
`continuous_batching`). Layers, later ones winning:

1. the spec's args under their dest names (what we asked for);
2. facts read from the log with the patterns in specdsl/facts/*-log-patterns.tsv
   (what the server resolved on its own: a default attention backend, the
   max model length, KV cache size);
3. the server's own report: SGLang's `/server_info` (every resolved
   setting), vLLM's `non-default args: {...}` line, transformers' per-request
   `CB: True|False` line.

Warnings name silent choices and risks: "attention backend not specified:
triton chosen by default", and every log pattern whose meaning is a RISK.
"""

from __future__ import annotations

import ast
import re
from typing import Any

import requests

from specdsl.servers.launch import ServerHandle
from specdsl.facts import engine_flags, log_patterns
from specdsl.hosts.http import session
from specdsl.model.config import Server

_MAX_LOG_BYTES = 64 * 1024 * 1024

# Log patterns (by their regex text in the facts tables) that set effective
# keys: regex -> tuple of keys, one per group (None skips a group).
_KEYED = {
    # SGLang
    r"Attention backend not specified\. Use (\S+) backend by default\.": ("attention_backend",),
    r"Attention backend not specified\. Falling back to '([^']+)' for deterministic inference\.": ("attention_backend",),
    r"(?:Use|Using) (\S+) as attention backend (?:on (\S+) )?for (\S+?)\.?$": ("attention_backend", None, None),
    r"Using hybrid attention backend for decode and prefill: decode_backend=(\S+), prefill_backend=(\S+)\.": ("decode_attention_backend", "prefill_attention_backend"),
    r"Using KV cache dtype: (\S+)": ("kv_cache_dtype",),
    # vLLM
    r"vLLM server version (\S+), serving model (\S+)": ("version", None),
    r"version\s+(?:\x1b\[[0-9;]*m)?(\d+\.\d+\.\d+\S*)": ("version",),
    r"Resolved architecture: (\S+)": ("architecture",),
    r"Using max model len (\d+)": ("max_model_len",),
    r"Chunked prefill is enabled with max_num_batched_tokens=(\d+)\.": ("max_num_batched_tokens",),
    r"Using (\S+) attention backend out of potential backends: \[(.*)\]\.": ("attention_backend", None),
    r"Using AttentionBackendEnum\.(\S+) backend\.": ("attention_backend",),
    r"Using FlashAttention version (\d+)": ("flash_attn_version",),
}
# Patterns that say the server chose an attention backend on its own.
_DEFAULT_BACKEND = {
    r"Attention backend not specified\. Use (\S+) backend by default\.",
    r"Using (\S+) attention backend out of potential backends: \[(.*)\]\.",
}
_KV_LIST = {  # whole-config dumps: key=value, key=value, ...
    r"server_args=ServerArgs\((.*)\)$",
    r"Initializing a V1 LLM engine \(v(\S+)\) with config: (.*)",
}
_TF_CB = re.compile(r"\[Request received\].*CB: (True|False)")


def effective_config(server: Server, handle: ServerHandle) -> tuple[dict[str, Any], list[str]]:
    """(effective config, warnings) of a running (or just stopped) server.

    Reads its log (and, for SGLang, `/server_info`). For transformers call it
    after traffic: the `CB:` line is printed per request."""
    log = _read_log(handle.log_path)
    config: dict[str, Any] = {}
    flags = engine_flags(server.engine)
    for key, value in server.args:
        name = key.lstrip("-")
        info = flags.get(name)
        config[info.dest if info else name.replace("-", "_")] = value
    facts, warnings = scan_log(server.engine, log, asked=config)
    config.update(facts)
    if server.engine == "sglang":
        config.update(_sglang_server_info(handle))
    elif server.engine == "vllm":
        config.update(vllm_non_default_args(log))
    elif server.engine == "transformers":
        config.setdefault("continuous_batching", False)
        seen = _TF_CB.findall(log)
        if seen:
            config["continuous_batching"] = seen[-1] == "True"
    config.setdefault("version", handle.version)
    if config["version"] is None:
        del config["version"]
    return config, warnings


def scan_log(engine: str, log: str, asked: dict[str, Any] | None = None) -> tuple[dict[str, Any], list[str]]:
    """Facts (normalized keys) and warnings from a server log, by the
    engine's pattern table. Later lines win for a key."""
    asked = asked or {}
    facts: dict[str, Any] = {}
    warnings: list[str] = []
    patterns = log_patterns(engine)
    lines = log.splitlines()
    for pattern in patterns:
        text = pattern.regex.pattern
        for line in lines:
            m = pattern.regex.search(line)
            if not m:
                continue
            if text in _KEYED:
                for key, group in zip(_KEYED[text], m.groups()):
                    if key and group is not None:
                        facts[key] = _value(group)
            elif text in _KV_LIST:
                if text.startswith("Initializing"):
                    facts["version"] = m.group(1)
                facts.update({k: v for k, v in parse_kv_list(m.groups()[-1]).items() if k not in facts})
            if text in _DEFAULT_BACKEND and "attention_backend" not in asked:
                msg = f"attention backend not specified: {m.group(1)} chosen by default"
                if msg not in warnings:
                    warnings.append(msg)
            if pattern.meaning.startswith("RISK"):
                msg = f"{pattern.meaning} (log: {line.strip()[-200:]})"
                if msg not in warnings:
                    warnings.append(msg)
    return facts, warnings


def vllm_non_default_args(log: str) -> dict[str, Any]:
    """The dict of vLLM's last `non-default args: {...}` line ({} if none)."""
    found = re.findall(r"non-default args: (\{.*\})", log)
    if not found:
        return {}
    try:
        value = ast.literal_eval(found[-1])
    except (ValueError, SyntaxError):
        return {}
    return dict(value) if isinstance(value, dict) else {}


def parse_kv_list(text: str) -> dict[str, Any]:
    """`a=1, b='x', c=Foo(d=2, e=[1, 2])` -> {"a": 1, "b": "x", "c": "Foo(d=2, e=[1, 2])"}.

    Splits at top-level commas only; values that are Python literals are
    evaluated, others kept as text."""
    out: dict[str, Any] = {}
    depth, quote, start = 0, None, 0
    parts = []
    for i, ch in enumerate(text):
        if quote:
            if ch == quote and text[i - 1] != "\\":
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth = max(0, depth - 1)
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    for part in parts:
        key, sep, raw = part.strip().partition("=")
        if sep and re.fullmatch(r"[A-Za-z_]\w*", key):
            out[key] = _value(raw.strip())
    return out


def _value(raw: str) -> Any:
    try:
        return ast.literal_eval(raw)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return raw


def _sglang_server_info(handle: ServerHandle) -> dict[str, Any]:
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


def _read_log(path: str) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - _MAX_LOG_BYTES))
            return f.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return ""
