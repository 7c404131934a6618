"""Saved plans: `specdsl plan FILE -o plans/NAME.plan.toml`.

TOML, versioned (`format_version`), with a checksum over the body so a
hand-edited plan is refused rather than applied. Field values that TOML
cannot hold (None, mixed lists) are stored as JSON text.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from pathlib import Path

import attrs
import tomli_w

from specdsl import private, secrets
from specdsl.plan.model import PLAN_FORMAT, Action, Change, FieldChange, Plan


class PlanFileError(Exception):
    """A plan file that cannot be used; the message says why and what to do."""


def _body(plan: Plan) -> dict:
    body = {
        "spec": plan.spec,
        "spec_digest": plan.spec_digest,
        "variables": dict(plan.variables),
        "serial": plan.serial,
        "rerun": plan.rerun,
        "more": plan.more,
        "targets": list(plan.targets),
        "drift": list(plan.drift),
        "changes": [
            {
                "addr": c.addr,
                "kind": c.kind,
                "action": c.action.value,
                "reason": c.reason,
                "identity": c.identity,
                "deps": list(c.deps),
                "after": list(c.after),
                "experiments": list(c.experiments),
                "host": c.host,
                "fields": [{"path": f.path, "before": json.dumps(secrets.shown(f.before)),
                            "after": json.dumps(secrets.shown(f.after))} for f in c.fields],
                **({"endpoint": json.dumps(c.endpoint, sort_keys=True)} if c.endpoint is not None else {}),
                **({"shares": list(c.shares)} if c.shares else {}),
            }
            for c in plan.changes
        ],
    }
    # the costs and the undecided verdicts (specdsl.plan.cost), present only
    # when there are some; TOML has no null: a None field is left out
    if plan.costs:
        body["costs"] = [_no_none(attrs.asdict(c)) for c in plan.costs]
    if plan.undecided:
        body["undecided"] = [_no_none(attrs.asdict(u)) for u in plan.undecided]
    # the apply-wide budget, and the worst cases against it (specdsl.plan.budget)
    if plan.max_launches is not None:
        body["max_launches"] = plan.max_launches
    if plan.max_time is not None:
        body["max_time"] = plan.max_time
    if plan.worsts:
        body["worsts"] = [_no_none(attrs.asdict(w)) for w in plan.worsts]
    if plan.apply_worst is not None:
        body["apply_worst"] = _no_none(attrs.asdict(plan.apply_worst))
    if plan.lineage:
        body["lineage"] = plan.lineage
    return body


def _no_none(d: dict) -> dict:
    return {k: v for k, v in d.items() if v is not None}


def _checksum(body: dict) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


HEADER = "# specdsl saved plan: apply it with `specdsl apply THIS_FILE`; do not edit.\n"


def dumps(plan: Plan) -> str:
    body = _body(plan)
    doc = {"format_version": PLAN_FORMAT, "checksum": _checksum(body), **body}
    return HEADER + tomli_w.dumps(doc)


def write_plan(path: Path, plan: Plan) -> None:
    """Write atomically (temp file + rename). Replaces an earlier saved plan,
    never another file: `-o` pointing at a spec or a state file by mistake
    is a PlanFileError and the file is left as it is."""
    if path.is_dir():
        raise PlanFileError(f"{path}: is a folder; name a file, e.g. {path / 'NAME.plan.toml'}")
    if path.exists() and not _is_plan_file(path):
        raise PlanFileError(f"{path}: exists and is not a specdsl plan file; it was left as it is. "
                            "Name another file (plans/NAME.plan.toml) or remove this one first")
    # the owner's only (0600; a folder it makes 0700): a plan names hosts,
    # paths and arguments
    private.write_text(path, dumps(plan))


def _is_plan_file(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            return f.read(len(HEADER.encode())) == HEADER.encode()
    except OSError:
        return False


def read_plan(path: Path) -> Plan:
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise PlanFileError(f"{path}: no such plan file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PlanFileError(f"{path}: cannot read the plan file ({exc})") from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PlanFileError(f"{path}: not a valid plan file ({exc}); make a new one with `specdsl plan SPEC -o {path}`") from None
    version = doc.get("format_version")
    if not isinstance(version, int):
        raise PlanFileError(f"{path}: not a specdsl plan file (no format_version)")
    if version > PLAN_FORMAT:
        raise PlanFileError(f"{path}: written by a newer specdsl (plan format {version}, this one reads {PLAN_FORMAT}); upgrade specdsl")
    if version != PLAN_FORMAT:
        raise PlanFileError(f"{path}: plan format {version} is not supported; make a new plan")
    checksum = doc.pop("checksum", None)
    doc.pop("format_version")
    if checksum != _checksum(doc):
        raise PlanFileError(f"{path}: the plan file was changed after it was written; make a new plan with `specdsl plan`")
    try:
        return attrs.evolve(_from_body(doc), read_from=str(path))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise PlanFileError(f"{path}: malformed plan file ({exc}); make a new plan") from None


def _from_body(doc: dict) -> Plan:
    changes = []
    for c in doc["changes"]:
        fields = tuple(FieldChange(f["path"], json.loads(f["before"]), json.loads(f["after"])) for f in c["fields"])
        changes.append(
            Change(
                addr=c["addr"],
                kind=c["kind"],
                action=Action(c["action"]),
                reason=c["reason"],
                identity=c["identity"],
                fields=fields,
                deps=tuple(c["deps"]),
                after=tuple(c["after"]),
                experiments=tuple(c["experiments"]),
                host=c["host"],
                endpoint=json.loads(c["endpoint"]) if "endpoint" in c else None,
                shares=tuple(c.get("shares", ())),
            )
        )
    from specdsl.plan.budget import ApplyWorst, Worst
    from specdsl.plan.cost import Cost, Undecided

    return Plan(
        costs=tuple(Cost(**c) for c in doc.get("costs", ())),
        undecided=tuple(Undecided(**u) for u in doc.get("undecided", ())),
        spec=doc["spec"],
        spec_digest=doc["spec_digest"],
        variables=tuple(sorted(doc["variables"].items())),
        lineage=doc.get("lineage"),
        serial=doc["serial"],
        changes=tuple(changes),
        drift=tuple(doc["drift"]),
        rerun=doc["rerun"],
        targets=tuple(doc["targets"]),
        more=int(doc.get("more", 0)),
        max_launches=int(doc["max_launches"]) if "max_launches" in doc else None,
        max_time=float(doc["max_time"]) if "max_time" in doc else None,
        worsts=tuple(Worst(**w) for w in doc.get("worsts", ())),
        apply_worst=ApplyWorst(**doc["apply_worst"]) if "apply_worst" in doc else None,
    )
