"""State <-> TOML text, by format version.

`encode_state` always writes the current `FORMAT_VERSION`. `decode_state`
reads `format_version` first and dispatches on it through `READERS`; a newer
version is refused (upgrade specdsl), an unknown older one too. A reader
checks every key and type and reports all problems at once, each with its key
path (`runs[2].metrics.output_throughput`), as one `StateError` naming the
file; it never guesses. On disk, mappings are TOML tables, records arrays of
tables, and `None` is an omitted key.

Format 2 keeps a check's verdict as a table of its run (`[runs.verdict]`:
status, detail, gating, noise, and `[runs.verdict.decision]`: the estimate,
its interval, level, n, threshold, operator); format 1 kept it as prose in
the run's `reason` (and some numbers as `evidence.*` metrics), which
`specdsl.state.upgrade` turns into that table when a format 1 file is read.
"""

from __future__ import annotations

import datetime as _dt
import math
import tomllib
from pathlib import Path
from typing import Any, Callable

import attrs
import tomli_w

from specdsl.diag import did_you_mean
from specdsl.state import upgrade
from specdsl.state.errors import StateError
from specdsl.state.model import (
    FORMAT_VERSION, SERVER_STATUSES, STATUSES, Baseline, Environment, Promotion, RunRecord, ServerRecord, State,
    StepRecord,
    is_mapping,
)
from specdsl.verdict.decision import MEAN, OPS, PAIRS, PER_RUN_STATISTICS, RATIO, RUNS, Decision, Status
from specdsl.verdict.record import Verdict

BACKUP_SUFFIX = ".backup"

# Field kinds (how a value is checked and decoded).
STR, INT, NUM, STATUS, STR_PAIRS, NUM_PAIRS, VALUE_PAIRS, STR_LIST, OPT_STR, OPT_INT, SERVER_STATUS = (
    "a string", "an integer", "a number", "a status", "a table of strings",
    "a table of numbers", "a table", "a list of strings", "a string", "an integer", "a server status",
)
BOOL, VERDICT, VERDICT_STATUS, OP, STATISTIC, UNIT = (
    "a boolean", "a verdict table", "a verdict", "an operator", "a statistic", "a unit",
)
# kinds whose values are one of a few words
CHOICES: dict[str, tuple[str, ...]] = {
    STATUS: STATUSES, SERVER_STATUS: SERVER_STATUSES, VERDICT_STATUS: tuple(s.value for s in Status),
    OP: tuple(OPS), STATISTIC: (RATIO, MEAN, *PER_RUN_STATISTICS), UNIT: (PAIRS, RUNS),
}
# [runs.verdict] and [runs.verdict.decision] (format 2); a key left out is
# its default, those without one must be there
VERDICT_FIELDS = {
    "name": STR, "status": VERDICT_STATUS, "detail": STR, "gating": BOOL, "noise": NUM, "needed": OPT_INT,
    "needed_beyond": BOOL,
}
DECISION_FIELDS = {
    "statistic": STATISTIC, "unit": UNIT, "estimate": NUM, "low": NUM, "high": NUM, "level": NUM, "n": INT,
    "threshold": NUM, "op": OP, "mde": NUM, "method": STR, "detail": STR, "p_pass": NUM, "p_fail": NUM,
}

RECORDS: dict[str, tuple[type, dict[str, str]]] = {
    "environments": (Environment, {
        "identity": STR, "host": STR, "path": STR, "python": STR, "python_version": STR,
        "packages": STR_PAIRS, "torch": STR_PAIRS, "created": STR, "nvcc": STR,
    }),
    "servers": (ServerRecord, {
        "identity": STR, "addr": STR, "host": STR, "pid": INT, "pgid": INT, "port": INT,
        "base_url": STR, "log": STR, "started": STR, "effective": VALUE_PAIRS,
        "status": SERVER_STATUS, "argv": STR_LIST, "spec": STR,
    }),
    "runs": (RunRecord, {
        "id": STR, "step": STR, "identity": STR, "experiment": STR, "status": STATUS,
        "started": STR, "finished": STR, "folder": STR, "metrics": NUM_PAIRS,
        "effective": VALUE_PAIRS, "reason": STR, "argv": STR_LIST, "runs": OPT_INT, "job": OPT_STR,
        "invalid": STR_LIST, "verdict": VERDICT,
    }),
    "baselines": (Baseline, {"track": STR, "run": STR, "experiment": STR, "promoted": STR}),
    "steps": (StepRecord, {"addr": STR, "kind": STR, "identity": STR, "content": STR, "updated": STR}),
    "promotions": (Promotion, {
        "track": STR, "run": STR, "experiment": STR, "checks": STR_LIST, "previous": OPT_STR,
        "time": STR, "verdicts": STR_LIST, "runs_seen": OPT_INT, "lock": STR,
    }),
}
TOP_KEYS = ("format_version", "lineage", "serial", "results", *RECORDS)


# -- writing ----------------------------------------------------------------
def _encode_value(value: Any) -> Any:
    if isinstance(value, tuple):
        if is_mapping(value):
            return {k: _encode_value(v) for k, v in value}
        return [_encode_value(v) for v in value]
    return value


def encode_verdict(verdict: Verdict) -> dict:
    """The `[runs.verdict]` table of a verdict (nan and inf are TOML floats)."""
    out: dict[str, Any] = {"name": verdict.name, "status": verdict.status.value, "detail": verdict.detail,
                           "gating": verdict.gating}
    if verdict.noise is not None:
        out["noise"] = verdict.noise
    if verdict.needed is not None:
        out["needed"] = verdict.needed
    if verdict.needed_beyond:
        out["needed_beyond"] = True
    if verdict.decision is not None:
        d = verdict.decision
        out["decision"] = {name: getattr(d, name) for name in DECISION_FIELDS if getattr(d, name) is not None}
    return out


def encode_record(record: Any) -> dict:
    out: dict[str, Any] = {}
    for field in attrs.fields(type(record)):
        value = getattr(record, field.name)
        if value is None:
            continue  # TOML has no null: an omitted key reads back as None
        if field.name in ("packages", "torch", "metrics", "effective"):
            value = {k: _encode_value(v) for k, v in value}
        elif isinstance(value, Verdict):
            value = encode_verdict(value)
        elif isinstance(value, tuple):
            value = list(value)
        out[field.name] = value
    return out


def encode_state(state: State) -> str:
    """The TOML text of `state`, in the current format."""
    doc: dict[str, Any] = {
        "format_version": FORMAT_VERSION,
        "lineage": state.lineage,
        "serial": state.serial,
        "results": dict(state.results),
    }
    for name in RECORDS:
        doc[name] = [encode_record(r) for r in getattr(state, name)]
    return tomli_w.dumps(doc)


# -- reading ----------------------------------------------------------------
def _show(value: Any) -> str:
    kind = {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            list: "an array", dict: "a table"}.get(type(value))
    if kind is None:
        kind = "a date/time" if isinstance(value, (_dt.date, _dt.time)) else type(value).__name__
    text = repr(value) if not isinstance(value, (dict, list)) else ""
    if len(text) > 40:
        text = text[:37] + "..."
    return f"{kind} {text}".rstrip()


class _Reader:
    """Checks a parsed document, collecting (key path, problem) pairs."""

    def __init__(self) -> None:
        self.problems: list[tuple[str, str]] = []

    def bad(self, where: str, expected: str, value: Any) -> None:
        self.problems.append((where, f"expected {expected}, found {_show(value)}"))

    def value(self, where: str, kind: str, value: Any) -> Any:
        if kind in (STR, OPT_STR):
            return value if isinstance(value, str) else self.bad(where, kind, value)
        if kind in (INT, OPT_INT):
            ok = isinstance(value, int) and not isinstance(value, bool)
            return value if ok else self.bad(where, kind, value)
        if kind == NUM:
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
            if not ok:
                return self.bad(where, kind, value)
            return math.nan if value != value else float(value)  # one nan, so records with it compare equal
        if kind == BOOL:
            return value if isinstance(value, bool) else self.bad(where, kind, value)
        if kind in CHOICES:
            if isinstance(value, str) and value in CHOICES[kind]:
                return value
            return self.bad(where, "one of " + ", ".join(repr(s) for s in CHOICES[kind]), value)
        if kind == VERDICT:
            return self.verdict(where, value)
        if kind == STR_LIST:
            if not isinstance(value, list):
                return self.bad(where, kind, value)
            return tuple(self.value(f"{where}[{i}]", STR, v) for i, v in enumerate(value))
        if kind in (STR_PAIRS, NUM_PAIRS, VALUE_PAIRS):
            if not isinstance(value, dict):
                return self.bad(where, "a table", value)
            inner = {STR_PAIRS: STR, NUM_PAIRS: NUM}.get(kind)
            return tuple(sorted(
                (k, self.value(f"{where}.{k}", inner, v) if inner else self.free(f"{where}.{k}", v))
                for k, v in value.items()
            ))
        raise AssertionError(kind)

    def free(self, where: str, value: Any) -> Any:
        """A configuration value: string, number, boolean, array or table."""
        if isinstance(value, dict):
            return tuple(sorted((k, self.free(f"{where}.{k}", v)) for k, v in value.items()))
        if isinstance(value, list):
            return tuple(self.free(f"{where}[{i}]", v) for i, v in enumerate(value))
        if isinstance(value, (str, int, float, bool)):
            return value
        return self.bad(where, "a string, number, boolean, array or table", value)

    def table(self, where: str, fields: dict[str, str], table: dict, required: tuple[str, ...]) -> dict[str, Any]:
        """The values of `table`'s keys, each checked against its kind in `fields`."""
        for key in table:
            if key not in fields:
                hint = did_you_mean(key, fields)
                self.problems.append((f"{where}.{key}", "unknown key" + (f"; {hint}" if hint else "")))
        for key in required:
            if key not in table:
                self.problems.append((f"{where}.{key}", "missing"))
        return {k: self.value(f"{where}.{k}", kind, table[k]) for k, kind in fields.items() if k in table}

    def verdict(self, where: str, table: Any) -> Verdict | None:
        """A check's verdict from its `[runs.verdict]` table."""
        if not isinstance(table, dict):
            return self.bad(where, "a table", table)
        before = len(self.problems)
        decision = table.get("decision")
        kwargs = self.table(where, VERDICT_FIELDS, {k: v for k, v in table.items() if k != "decision"},
                            ("name", "status"))
        if decision is not None:
            if not isinstance(decision, dict):
                self.bad(f"{where}.decision", "a table", decision)
            else:
                values = self.table(f"{where}.decision", DECISION_FIELDS, decision,
                                    tuple(k for k in DECISION_FIELDS if k not in ("mde", "p_pass", "p_fail")))
                if len(self.problems) == before:
                    values.setdefault("mde", None)  # left out: not computed (n < 2), or not recorded (format 1)
                    kwargs["decision"] = Decision(verdict=Status(kwargs["status"]), **values)
        return Verdict(**kwargs) if len(self.problems) == before else None

    def record(self, where: str, cls: type, fields: dict[str, str], table: Any) -> Any:
        """A record of `cls` from `table`, or None when it has problems."""
        if not isinstance(table, dict):
            return self.bad(where, "a table", table)
        before = len(self.problems)
        for key in table:
            if key not in fields:
                hint = did_you_mean(key, fields)
                self.problems.append((f"{where}.{key}", "unknown key" + (f"; {hint}" if hint else "")))
        kwargs: dict[str, Any] = {}
        for field in attrs.fields(cls):
            if field.name not in table:
                if field.default is attrs.NOTHING:
                    self.problems.append((f"{where}.{field.name}", "missing"))
                continue
            kwargs[field.name] = self.value(f"{where}.{field.name}", fields[field.name], table[field.name])
        return cls(**kwargs) if len(self.problems) == before else None

    def records(self, name: str, doc: dict) -> tuple:
        cls, fields = RECORDS[name]
        items = doc.get(name, [])
        if not isinstance(items, list):
            self.bad(name, "an array of tables", items)
            return ()
        return tuple(self.record(f"{name}[{i}]", cls, fields, t) for i, t in enumerate(items))


def _read_v2(doc: dict, path: Path, version: int = 2) -> State:
    r = _Reader()
    for key in doc:
        if key not in TOP_KEYS:
            hint = did_you_mean(key, TOP_KEYS)
            r.problems.append((key, "unknown key" + (f"; {hint}" if hint else "")))
    for key in ("lineage", "serial"):
        if key not in doc:
            r.problems.append((key, "missing"))
    lineage = r.value("lineage", STR, doc.get("lineage", ""))
    serial = r.value("serial", INT, doc.get("serial", 0))
    if isinstance(serial, int) and serial < 0:
        r.problems.append(("serial", f"expected a count (0 or more), found {serial}"))
    results = r.value("results", STR_PAIRS, doc.get("results", {}))
    records = {name: r.records(name, doc) for name in RECORDS}
    if not r.problems:
        state = State(format_version=version, lineage=lineage, serial=serial, results=results, **records)
        r.problems.extend(state.problems())
    if r.problems:
        raise _invalid(path, r.problems)
    return state


def _read_v1(doc: dict, path: Path) -> State:
    """Format 1: its verdicts (prose in a check run's `reason`) become
    structured first (specdsl.state.upgrade), then it reads as format 2."""
    return _read_v2(upgrade.v1_to_v2(doc), path, version=1)


READERS: dict[int, Callable[[dict, Path], State]] = {1: _read_v1, 2: _read_v2}


def _restore_hint(path: Path) -> str:
    backup = path.with_name(path.name + BACKUP_SUFFIX)
    if not backup.exists():
        return "fix the file by hand (there is no backup: it has been written only once)"
    return (f"fix the file by hand, or restore the previous version with `cp {backup} {path}` "
            "(it is one write older)")


def _invalid(path: Path, problems: list[tuple[str, str]]) -> StateError:
    shown = [f"{where}: {what}" for where, what in problems[:10]]
    if len(problems) > 10:
        shown.append(f"... and {len(problems) - 10} more")
    return StateError(path, "Invalid state file:\n    " + "\n    ".join(shown), _restore_hint(path))


def decode_state(text: str, path: Path) -> State:
    """Parse the TOML `text` of the state file at `path` (named in errors).
    StateError on bad TOML, a missing or newer `format_version`, or any
    wrong key or type."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise StateError(path, f"State file is not valid TOML ({err}); it may be truncated or "
                         "hand-edited", _restore_hint(path)) from None
    version = doc.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool):
        found = "missing" if version is None else f"{_show(version)}, expected an integer"
        raise StateError(path, f"State file has no valid format_version ({found})", _restore_hint(path))
    if version > FORMAT_VERSION:
        raise StateError(
            path, f"State was written by a newer specdsl (format {version}; this one reads up to "
            f"format {FORMAT_VERSION})", "upgrade specdsl (pip install -U specdsl); the file was left as it is")
    reader = READERS.get(version)
    if reader is None:
        raise StateError(path, f"Unknown state format_version {version}", _restore_hint(path))
    return reader(doc, path)
