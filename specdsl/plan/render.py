"""Plan -> text (the human view) and Plan -> JSON document (`--json`).

The same plan gives the same bytes. JSON schema (format_version 1) is
documented in docs/plan.md.
"""

from __future__ import annotations

import json

from specdsl import secrets
from specdsl.plan.diff import HELD, fmt_value
from specdsl.plan.model import Action, Plan

_ORDER = (Action.CREATE, Action.REPLACE, Action.RUN, Action.CHECK, Action.PROMOTE, Action.DESTROY, Action.REUSE)
_PHRASE = {
    Action.CREATE: "to create",
    Action.REPLACE: "to replace",
    Action.RUN: "to run",
    Action.CHECK: "to check",
    Action.PROMOTE: "to promote",
    Action.DESTROY: "to destroy",
    Action.REUSE: "reused",
}


def summary_line(plan: Plan) -> str:
    counts = plan.summary()
    parts = [f"{counts[a.word]} {_PHRASE[a]}" for a in _ORDER]
    return "Plan: " + ", ".join(parts) + "."


def render_text(plan: Plan, verbose: bool = False) -> str:
    lines = [f"Plan for {plan.spec}"]
    if plan.lineage:
        lines.append(f"against state {plan.lineage} serial {plan.serial}")
    else:
        lines.append("against an empty state (none recorded yet)")
    if plan.targets:
        lines.append("targets: " + ", ".join(plan.targets))
    for note in plan.drift:
        lines.append(f"drift: {note}")
    lines.append("")
    width = max((len(c.addr) for c in plan.changes), default=0)
    for c in plan.changes:
        if c.action is Action.REUSE and not verbose and not plan.has_changes and not c.reason.startswith(HELD):
            continue  # (a held promotion waits on the user: always shown)
        lines.append(f"{c.action.value:>3} {c.addr.ljust(width)}  ({c.reason})")
    lines += cost_lines(plan)
    lines += budget_lines(plan)
    lines += undecided_lines(plan)
    if not plan.has_changes:
        if lines[-1] != "":
            lines.append("")
        if plan.undecided:
            n = len(plan.undecided)
            lines.append(f"No changes to the steps, but {n} gating verdict{'s are' if n != 1 else ' is'} undecided (above): "
                         "nothing more is measured until you act.")
        else:
            lines.append("No changes. Every step matches recorded state; checks re-evaluate on apply.")
    lines.append("")
    lines.append(summary_line(plan))
    return "\n".join(lines) + "\n"


def cost_lines(plan: Plan) -> list[str]:
    """Each benchmark that runs: pairs, launches, runs and the time
    estimated from recorded durations (specdsl.plan.cost); then the total."""
    if not plan.costs:
        return []
    width = max(len(c.addr) for c in plan.costs)
    out = ["", "Cost (estimated from recorded launch and run durations of the same server and workload):"]
    out += [f"  {c.addr.ljust(width)}  {c.line()}" for c in plan.costs]
    out.append(f"  {'total'.ljust(width)}  {plan.total().line()}")
    return out


def budget_lines(plan: Plan) -> list[str]:
    """Each paired comparison's worst case (every pair its max_runs allow)
    in launches and time, estimated even on an empty state, against its
    budget and the apply's (specdsl.plan.budget)."""
    if not plan.worsts:
        return []
    width = max([len(w.addr) for w in plan.worsts] + [len("apply")])
    out = ["", "Budget (worst case, before anything runs):"]
    out += [f"  {w.addr.ljust(width)}  {w.line()}" for w in plan.worsts]
    if plan.apply_worst is not None:
        out.append(f"  {'apply'.ljust(width)}  {plan.apply_worst.line()}")
    return out


def undecided_lines(plan: Plan) -> list[str]:
    """The gating verdicts the last apply left INCONCLUSIVE, that nothing
    was promoted, and what would decide them."""
    if not plan.undecided:
        return []
    out = ["", "Undecided (recorded INCONCLUSIVE; apply measures nothing more for them as planned):"]
    for u in plan.undecided:
        first, *rest = u.lines()
        out.append(f"  ? {first}")
        out += [f"      {line}" for line in rest]
    return out


def to_json(plan: Plan) -> dict:
    costs = {c.addr: c for c in plan.costs}
    worsts = {w.addr: w for w in plan.worsts}
    return {
        "format_version": plan.format_version,
        "spec": plan.spec,
        "spec_digest": plan.spec_digest,
        "variables": dict(plan.variables),
        "state": {"lineage": plan.lineage, "serial": plan.serial},
        "rerun": plan.rerun,
        "more": plan.more,
        "targets": list(plan.targets),
        "drift": list(plan.drift),
        "has_changes": plan.has_changes,
        "pending": plan.pending,
        "summary": plan.summary(),
        "changes": [
            {
                "addr": c.addr,
                "kind": c.kind,
                "action": c.action.value,
                "action_name": c.action.word,
                "reason": c.reason,
                "identity": c.identity,
                "fields": [{"path": f.path, "before": secrets.shown(f.before), "after": secrets.shown(f.after)}
                           for f in c.fields],
                "depends_on": list(c.deps),
                "after": list(c.after),
                "experiments": list(c.experiments),
                "host": c.host,
                **({"endpoint": c.endpoint} if c.endpoint is not None else {}),
                **({"cost": costs[c.addr].as_json()} if c.addr in costs else {}),
                **({"budget": worsts[c.addr].as_json()} if c.addr in worsts else {}),
            }
            for c in plan.changes
        ],
        "cost": plan.total().as_json(),
        "budget": {"max_launches": plan.max_launches, "max_seconds": plan.max_time,
                   "worst": plan.apply_worst.as_json() if plan.apply_worst is not None else None},
        "undecided": [u.as_json() for u in plan.undecided],
    }


def render_json(plan: Plan) -> str:
    return json.dumps(to_json(plan), indent=2, sort_keys=False, ensure_ascii=False) + "\n"


__all__ = ["render_text", "render_json", "to_json", "summary_line", "fmt_value"]
