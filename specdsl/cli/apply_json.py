"""`specdsl apply --json`: the outcome of an apply for CI, versioned.

    {"format_version": 1, "exit_code": N, "interrupted": bool, "wall_s": ..., "launches": N,
     "plan": {... as `plan --json` ...},
     "steps": [{"addr", "kind", "status", "reason", "detail", "elapsed_s", "log", "root"}],
     "verdicts": [{"experiment", "assertion", "verdict", "gating", "detail",
                   "evidence": {"estimate", "low", "high", "level", "n", "threshold", "op", "mde", "method", ("noise")} | null}],
     "benchmarks": [{"addr", "run", "runs": [{"index", "metrics", "valid", "invalid"?}],
                     "pairs": [{"pair", "blocks": [{"arm": "A"|"B", "runs": [...], "launch": k}]}]}],
     "invalid_runs": N, "dropped_launches": N,
     "warnings": [...],
     "state_failure": null | {"message": "...", "servers_left": [{"pid", "pgid"}]}}

A run's `valid` is false, and `invalid` says why, when it is not a
measurement (specdsl.bench.validity: failed requests above `max_failed`,
short outputs, its server lost); `invalid_runs` counts those this apply
made; `dropped_launches` the launches whose steady warm-up did not settle
(never measured: docs/verdicts.md, "Steady launches"). `state_failure` (added in format 1, always present) is null unless the
state file could not be written (exit 5): then `message` is what apply
prints on stderr (the cause, the serial on disk, what is NOT recorded,
what to do) and `servers_left` the servers this apply could not stop.

Codes, not prose, are what to match on: `status` and `reason` are the
values of `apply.Status` and `apply.Reason`; `verdict` is pass, fail,
inconclusive or error. Infinite interval ends are written as null.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from specdsl.apply.results import document_of
from specdsl.paired_result import PairedResult
from specdsl.plan.render import render_json
from specdsl.state import load_state

FORMAT_VERSION = 1


def _evidence(v) -> dict | None:
    """The numbers behind a gating verdict (its Decision, and a paired ratio's noise), or None."""
    d = v.decision
    if d is None:
        return None
    out = {"estimate": d.estimate, "low": d.low, "high": d.high, "level": d.level, "n": d.n, "threshold": d.threshold,
           "op": d.op, "mde": d.mde, "method": d.method, "verdict": d.verdict.value, "statistic": d.statistic, "unit": d.unit}
    if v.noise is not None:
        out["noise"] = v.noise
    return {k: _num(x) for k, x in out.items()}


def _num(x):
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def _state_failure(result) -> dict | None:
    if not result.state_failure:
        return None
    from specdsl.servers import lifecycle

    return {"message": result.state_failure,
            "servers_left": [{"pid": h.pid, "pgid": h.pgid} for _, h in lifecycle.live()]}


def render_apply_json(result, plan, state_dir: Path) -> str:
    state = load_state(state_dir)
    benches = []
    for o in result.outcomes:
        if o.kind != "benchmark" or state is None:
            continue
        change = plan.change(o.addr)
        run = state.result(change.identity) if change else None
        if run is None:
            continue
        doc = document_of(run, state_dir) or {}
        benches.append({
            "addr": o.addr, "run": run.id,
            "runs": [{"index": r.get("index"), "metrics": r.get("metrics", {}), "valid": not r.get("invalid"),
                      **({"invalid": r["invalid"]} if r.get("invalid") else {})} for r in doc.get("runs", ())],
            "pairs": [p.to_json() for p in got.pairs] if (got := PairedResult.of(doc)) else doc.get("pairs", []),
        })
    out = {
        "format_version": FORMAT_VERSION,
        "exit_code": result.exit_code(),
        "interrupted": result.interrupted,
        "wall_s": round(result.wall, 3),
        "launches": result.launches,
        "plan": json.loads(render_json(plan)),
        "steps": [{"addr": o.addr, "kind": o.kind, "status": o.status.value, "reason": o.reason.value, "detail": o.detail,
                   "elapsed_s": round(o.elapsed, 3), "log": o.log, "root": o.root} for o in result.outcomes],
        "verdicts": [{"experiment": exp, "assertion": v.name, "verdict": v.status.value, "gating": v.gating, "detail": v.detail,
                      "evidence": _evidence(v)}
                     for exp, v in result.verdicts],
        "benchmarks": benches,
        "invalid_runs": result.invalid_runs,
        "dropped_launches": result.dropped_launches,
        "warnings": list(result.warnings),
        "state_failure": _state_failure(result),
    }
    return json.dumps(out, indent=2, sort_keys=True, allow_nan=False) + "\n"
