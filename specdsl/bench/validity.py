"""Whether a run measured what was asked: a broken run is never a measurement.

A run is *valid* only when its requests completed as asked. It is invalid
when
- more of its requests failed than the workload's `max_failed` allows (a
  count, or a fraction of the run's requests; default 0: one failure makes
  the run invalid);
- completed requests ended short of their length where an exact length was
  asked for (specdsl.bench.lengths);
- its server died or stopped answering during it (apply's watch says so,
  specdsl.apply.server_watch);
- its server's log gained a compile, autotune or CUDA graph capture line
  during it (`jit_invalid`; the engine's lines: specdsl.facts
  `jit_patterns`): a kernel compiled inside the run stalled its batch, so
  the run measured the compiler, not the server.

An invalid run stays in the result document with `"invalid": REASON`
(nothing measured is lost) but no verdict reads it (`valid_document`), and
it does not count towards the workload's `runs` (a re-apply makes the runs
that are missing). Pure: no I/O.
"""

from __future__ import annotations

import math
from typing import Any

from specdsl.paired_result import PairedResult


def allowed_failures(workload: Any, requests: int) -> int:
    """How many failed requests of a run of `requests` a workload allows:
    `max_failed` (a count) or `max_failed_fraction` x requests, rounded down;
    neither set: 0."""
    count = getattr(workload, "max_failed", None)
    fraction = getattr(workload, "max_failed_fraction", None)
    if fraction is not None:
        return math.floor(fraction * requests + 1e-9)
    return int(count or 0)


def describe_limit(workload: Any) -> str:
    """`max_failed 0`, `max_failed 3`, `max_failed 1%`."""
    fraction = getattr(workload, "max_failed_fraction", None)
    if fraction is not None:
        return f"max_failed {fraction * 100:g}%"
    return f"max_failed {int(getattr(workload, 'max_failed', None) or 0)}"


def run_invalid(metrics: dict[str, float], workload: Any, short: str | None = None) -> str:
    """Why a run of the built-in client is invalid ('' when valid), from its
    metrics (`completed`, `failed`) and its short-outputs warning."""
    failed, completed = int(metrics.get("failed", 0)), int(metrics.get("completed", 0))
    total = failed + completed
    reasons = []
    limit = allowed_failures(workload, total)
    if failed > limit:
        reasons.append(f"{failed} of {total} requests failed ({describe_limit(workload)})")
    if short:
        reasons.append(short)
    return "; ".join(reasons)


def jit_invalid(events) -> str:
    """Why a run during which the server's log gained compile lines
    (`events`, each with `kind` and `line`) is invalid; '' for none."""
    if not events:
        return ""
    from specdsl.bench.steady import jit_lines

    return f"a compile during the run: {jit_lines(events)}"


def invalid_runs(doc: dict | None) -> list[tuple[int, str]]:
    """(index, reason) of every invalid run of a result document, in order."""
    return [(int(r.get("index", -1)), str(r["invalid"])) for r in (doc or {}).get("runs", ()) if r.get("invalid")]


def describe_invalid(invalid: list[tuple[int, str]]) -> str:
    """`run 0: 208 of 240 requests failed (max_failed 0); run 2: ...`."""
    return "; ".join(f"run {i}: {why}" for i, why in invalid)


def valid_document(doc: dict | None) -> dict | None:
    """The result document without its invalid runs, and for a paired result
    without every pair one of whose blocks holds an invalid run (both arms'
    blocks go: a ratio needs both). The same document when all are valid."""
    if doc is None:
        return None
    bad = {i for i, _ in invalid_runs(doc)}
    if not bad:
        return doc
    out = dict(doc)
    out["runs"] = [r for r in doc.get("runs", ()) if int(r.get("index", -1)) not in bad]
    got = PairedResult.of(doc)
    if got is not None:
        out["pairs"] = [p.to_json() for p in got.pairs if not any(i in bad for b in p.blocks for i in b.runs)]
    return out


def excluded_pairs(doc: dict | None) -> list[tuple[int, str]]:
    """(pair index, reason) of the pairs of a paired result left out of its
    verdicts because a run of one of their blocks is invalid."""
    why = dict(invalid_runs(doc))
    out = []
    got = PairedResult.of(doc)
    for p in got.pairs if got else ():
        reasons = [f"arm {b.arm} run {i}: {why[i]}" for b in p.blocks for i in b.runs if i in why]
        if reasons:
            out.append((p.pair, "; ".join(reasons)))
    return out
