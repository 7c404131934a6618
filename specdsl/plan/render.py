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
    if not plan.has_changes:
        if lines[-1] != "":
            lines.append("")
        lines.append("No changes. Every step matches recorded state; checks re-evaluate on apply.")
    lines.append("")
    lines.append(summary_line(plan))
    return "\n".join(lines) + "\n"


def to_json(plan: Plan) -> dict:
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
            }
            for c in plan.changes
        ],
    }


def render_json(plan: Plan) -> str:
    return json.dumps(to_json(plan), indent=2, sort_keys=False, ensure_ascii=False) + "\n"


__all__ = ["render_text", "render_json", "to_json", "summary_line", "fmt_value"]
