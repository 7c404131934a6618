"""Prefix-cache hits of a paired comparison's arms: two arms served from
the cache at different rates measure the cache as well as the change, so
their comparison is not decided (apply.judge: its ratio and difference
verdicts are ERROR with this reason).

Each arm's hit rate is the mean of its valid runs' `prefix_cache_hit_rate`
(the engine's own counters over the run, specdsl.bench.serverside). They
differ when more than `TOLERANCE` apart (absolute). An arm whose engine
reports no hits (no counters) cannot be compared: nothing is said.
"""

from __future__ import annotations

from specdsl.bench.validity import valid_document
from specdsl.paired_result import PairedResult

TOLERANCE = 0.02
METRIC = "prefix_cache_hit_rate"


def arm_rates(doc: dict | None) -> dict[str, tuple[float, int]]:
    """Arm ("A", "B") -> (mean hit rate, runs it is read from), for the arms
    whose valid runs report one."""
    paired = PairedResult.of(valid_document(doc))
    if paired is None:
        return {}
    runs = {r["index"]: r for r in paired.runs}
    values: dict[str, list[float]] = {}
    for _pair, block in paired.blocks():
        for i in block.runs:
            rate = runs.get(i, {}).get("metrics", {}).get(METRIC)
            if rate is not None:
                values.setdefault(block.arm, []).append(float(rate))
    return {arm: (sum(v) / len(v), len(v)) for arm, v in values.items() if v}


def mismatch(doc: dict | None) -> str:
    """Why the arms of a paired result are not comparable for their cache
    hits ('' when they are, or when an arm reports none)."""
    rates = arm_rates(doc)
    if "A" not in rates or "B" not in rates:
        return ""
    (a, na), (b, nb) = rates["A"], rates["B"]
    if abs(a - b) <= TOLERANCE:
        return ""
    return (f"the arms ran at different prefix-cache hit rates: arm A {a:.1%} ({na} run{'s' if na != 1 else ''}), "
            f"arm B {b:.1%} ({nb} run{'s' if nb != 1 else ''}), more than {TOLERANCE:.0%} apart, so a difference "
            "between them may be the cache's, not the change's (the workload's `prefix_cache`: \"off\" measures "
            "without it, \"reset\" empties it before each run)")
