"""Facts and warnings from a server log, by the engine's pattern table
(specdsl/facts/*-log-patterns.tsv, read from the servers' sources) and the
adapter's map from patterns to effective keys.

The table is the one of the server's release (`facts.pattern_set`: SGLang
0.5.6 and 0.5.9 word their lines differently); the set used is recorded as
the fact `log_patterns` (`sglang 0.5.6`), so a reader knows which lines
could be recognized.

Warnings name silent choices and risks: "attention backend not specified:
triton chosen by default", and every pattern whose meaning is a RISK; each
once. They do not name the server: the caller, who knows the experiment
and the launch, does.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from specdsl.facts import log_patterns, pattern_set


def scan_log(adapter, log: str, asked: dict[str, Any] | None = None,
             version: str | None = None) -> tuple[dict[str, Any], list[str]]:
    """(facts under normalized keys, warnings) from a server log, read with
    the patterns of the engine's release `version` (None: the newest).
    Later lines win for a key. `adapter` is an `Adapter` (or an engine name)."""
    facts, warnings, _ = scan_log_sourced(adapter, log, asked, version)
    return facts, warnings


# what a logger puts before the message: "[2026-02-27 15:18:25 TP0] WARNING model_config.py:955: "
# (SGLang's), "(EngineCore pid=803) INFO 12-02 11:24:48 [cuda.py:482] " (vLLM's, whose
# multiprocess logs tag every line with the process and its pid)
_PREFIX = re.compile(r"^\s*(?:\([\w.-]+ pid=\d+\)\s*)?(?:\[[^\]]*\]\s*)?(?:(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\s+"
                     r"(?:[\w./-]+:\d+:|\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?\s+\[[^\]]*\])\s*)?")


def message_of(line: str) -> str:
    """A log line without its timestamp, rank, level and file:line: the
    same fact reads the same in every launch's log."""
    return _PREFIX.sub("", line, count=1).strip()


def scan_log_sourced(adapter, log: str, asked: dict[str, Any] | None = None,
                     version: str | None = None) -> tuple[dict[str, Any], list[str], dict[str, str]]:
    """As `scan_log`, and for each fact the message of the line it was read
    from (`message_of`), so a diagnosis can quote the server's own words."""
    if isinstance(adapter, str):
        from specdsl.servers.adapters import adapter_for

        adapter = adapter_for(adapter)
    asked = asked or {}
    facts: dict[str, Any] = {}
    sources: dict[str, str] = {}
    warnings: list[str] = []
    lines = log.splitlines()
    used = pattern_set(adapter.name, version)
    if used:
        facts["log_patterns"] = used
    for pattern in log_patterns(adapter.name, version):
        text = pattern.regex.pattern
        for line in lines:
            m = pattern.regex.search(line)
            if not m:
                continue
            if text in adapter.keyed:
                for key, group in zip(adapter.keyed[text], m.groups()):
                    if key and group is not None:
                        facts[key] = literal(group)
                        sources[key] = message_of(line)
            elif text in adapter.kv_lists:
                if len(m.groups()) > 1:
                    facts["version"] = m.group(1)
                for k, v in parse_kv_list(m.groups()[-1]).items():
                    if k not in facts:
                        facts[k] = v
                        sources[k] = message_of(line)
            if text in adapter.default_backend and "attention_backend" not in asked:
                _once(warnings, f"attention backend not specified: {m.group(1)} chosen by default")
            if pattern.meaning.startswith("RISK"):
                _once(warnings, f"{pattern.meaning} (log: {message_of(line)[-200:]})")
    return facts, warnings, sources


def _once(warnings: list[str], message: str) -> None:
    if message not in warnings:
        warnings.append(message)


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
            out[key] = literal(raw.strip())
    return out


def literal(raw: str) -> Any:
    """A Python literal's value, else the text itself."""
    try:
        return ast.literal_eval(raw)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return raw
