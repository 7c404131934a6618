"""Warnings said once: the same message from many runs of one benchmark
(`benchmark.x pair 3 arm B (cand): run 7: no server metrics: ...`, once a
run) becomes one line with its count and where it came from. Pure text in,
text out: apply's summary (cli) and the report (report) both say them so.
"""

from __future__ import annotations

import re

# `STEP pair N arm X (NAME[, launch N]): [run N: ]MESSAGE` (a paired benchmark's)
_PAIRED = re.compile(r"^(?P<step>\S+) pair (?P<pair>\d+) arm (?P<arm>\w+) \((?P<name>[^),]*)[^)]*\): (?:run \d+: )?(?P<msg>.+)$",
                     re.DOTALL)
# `STEP: run N: MESSAGE` (a benchmark measured alone)
_ALONE = re.compile(r"^(?P<step>\S+): run \d+: (?P<msg>.+)$", re.DOTALL)


def said_once(warnings: list[str] | tuple[str, ...]) -> list[str]:
    """`warnings` with each message that several runs (or pairs) of one
    step said replaced by one line, where it first came:
    `STEP: MESSAGE (said by 15 runs: pairs 1-8, arms A (base) and B (cand))`. A message
    said once stays as it was; the order is otherwise kept."""
    groups: dict[tuple[str, str], list[re.Match]] = {}
    keyed: list[tuple[str, str] | str] = []
    for w in warnings:
        m = _PAIRED.match(w) or _ALONE.match(w)
        if m is None:
            keyed.append(w)
            continue
        key = (m["step"], m["msg"])
        if key not in groups:
            keyed.append(key)
        groups.setdefault(key, []).append(m)
    out: list[str] = []
    for item in keyed:
        if isinstance(item, str):
            out.append(item)
            continue
        found = groups[item]
        if len(found) == 1:
            out.append(found[0].string)
            continue
        step, msg = item
        out.append(f"{step}: {msg} (said by {len(found)} runs{_where(found)})")
    return out


def _where(found: list[re.Match]) -> str:
    pairs = sorted({int(m["pair"]) for m in found if "pair" in m.re.groupindex})
    arms = sorted({(m["arm"], m["name"]) for m in found if "arm" in m.re.groupindex})
    named = [f"{arm} ({name})" if name else arm for arm, name in arms]
    parts = []
    if pairs:
        parts.append(_span("pair", pairs))
    if named:
        parts.append(f"arm {named[0]}" if len(named) == 1 else f"arms {', '.join(named[:-1])} and {named[-1]}")
    return f": {', '.join(parts)}" if parts else ""


def _span(word: str, numbers: list[int]) -> str:
    if len(numbers) == 1:
        return f"{word} {numbers[0]}"
    if numbers == list(range(numbers[0], numbers[-1] + 1)):
        return f"{word}s {numbers[0]}-{numbers[-1]}"
    return f"{word}s {', '.join(str(n) for n in numbers)}"
