"""Glue for the `state list`, `state show` and `force-unlock` commands.

`locate_state` finds the state folder as plan and apply do (`--state DIR`,
else `.specdsl` beside the spec named) or, with neither, `./.specdsl`.
Pure renderers (`state_list`, `state_show`) work on a State; the `cmd_*`
functions take the parsed argument values, do the I/O and return
`(exit code, text)`: exit 0 with text for stdout, or non-zero with an error
message for stderr (1: a user mistake or a bad state folder, 6: a conflict,
the CLI's exit codes). Nothing here prints.

Addresses: `environment.<identity>`, `server.<launch addr>` (e.g.
`server.launch.kimi`; `server.<identity>` when two servers share an addr),
`run.<id>`, `baseline.<track>`.
"""

from __future__ import annotations

import json
import math

import os
from pathlib import Path
from typing import Any

import tomli_w

from specdsl import secrets, stats
from specdsl.diag import did_you_mean
from specdsl.exits import Exit
from specdsl.names import natural_sorted
from specdsl.state.codec import encode_record
from specdsl.state.errors import StateError
from specdsl.state.lock import force_unlock
from specdsl.state.model import State
from specdsl.state.statefile import (
    RUNS_NAME, STATE_DIR_NAME, STATE_NAME, backup_path, load_state, state_dir_for, state_path,
)


class UnknownAddress(ValueError):
    """`state show` was given an address that is not in the state."""


def locate_state(spec: Path | None, state: Path | None, usage: str, *, need_state: bool = True) -> Path:
    """The state folder a state command reads, found as plan and apply find
    it: `state` (`--state DIR`) when given, else `.specdsl` beside the spec
    file `spec`, else `./.specdsl`. StateError, naming where it looked and
    how to point at the state (`usage` is the command as the user would
    retype it, e.g. `specdsl state list`), when `spec` is not a file, when
    the folder does not exist, or, with `need_state`, when it holds no
    state.toml."""
    point = f"name the spec (`{usage} SPEC`) or the state folder (`{usage} --state DIR`)"
    if state is not None:
        found = Path(state)
        missing = "No such state folder"
        how = f"check the path; a spec's state is in {STATE_DIR_NAME} beside it, which `{usage} SPEC` finds"
    elif spec is not None:
        spec = Path(spec)
        if spec.is_dir():
            hint = f"to read the state in it: `{usage} --state {spec}`" if state_path(spec).exists() else point
            raise StateError(spec, "Is a folder, not a spec file", hint)
        if not spec.exists():
            raise StateError(spec, "No such spec file", point)
        found = state_dir_for(spec)
        missing = f"No state beside {spec}: there is no {STATE_DIR_NAME} folder there"
        how = f"apply it first (`specdsl apply {spec}`), or pass `--state DIR` if its state was kept elsewhere"
    else:
        found = Path(STATE_DIR_NAME)
        if not found.is_dir():
            raise StateError(Path.cwd() / STATE_DIR_NAME, f"No state found: no {STATE_DIR_NAME} folder in the current directory",
                             f"state lives in {STATE_DIR_NAME} beside the spec it was applied from: {point}")
        missing, how = "", point
    if not found.is_dir():
        raise StateError(found, missing, how)
    # (a state.toml gone while its backup is there is load_state's to explain)
    if need_state and not state_path(found).exists() and not backup_path(found).exists():
        raise StateError(found, f"No state recorded in this folder (no {STATE_NAME})", how)
    return found


def _resources(state: State) -> dict[str, tuple[str, Any]]:
    """address -> (kind, record), in listing order: environments, servers,
    runs (in the order they ran), baselines, steps; within each kind by
    address, numbers by value (`grid[c=4]` before `grid[c=16]`)."""
    def by_address(items: dict[str, tuple[str, Any]]) -> dict[str, tuple[str, Any]]:
        return {addr: items[addr] for addr in natural_sorted(items)}

    out: dict[str, tuple[str, Any]] = {}
    out |= by_address({f"environment.{env.identity}": ("environment", env) for env in state.environments})
    servers = {}
    for server in state.servers:
        shared = len(state.servers_at(server.addr)) > 1
        servers[f"server.{server.identity if shared else server.addr}"] = ("server", server)
    out |= by_address(servers)
    for run in state.runs:
        out[f"run.{run.id}"] = ("run", run)
    out |= by_address({f"baseline.{b.track}": ("baseline", b) for b in state.baselines})
    # the plan's addresses: `state show launch.kimi`
    out |= by_address({step.addr: ("step", step) for step in state.steps})
    return out


def state_list(state: State | None, *, as_json: bool = False) -> str:
    """One address per line: environments, servers, runs, baselines, steps;
    `as_json`: `{"format_version": 1, "resources": [{"addr", "kind"}]}` in
    the same order (a step's kind is its step kind: `launch`, `check`)."""
    resources = _resources(state) if state is not None else {}
    if as_json:
        rows = [{"addr": addr, "kind": record.kind if kind == "step" else kind} for addr, (kind, record) in resources.items()]
        return json.dumps({"format_version": 1, "resources": rows}, indent=1) + "\n"
    return "".join(addr + "\n" for addr in resources)


# the fields of records that hold a path into the state folder
_PATH_FIELDS = {"run": ("folder",), "server": ("log",)}


def state_show(state: State | None, addr: str, *, state_dir: Path | None = None, cwd: Path | None = None,
               listing: str = "specdsl state list", expr_text=None, as_json: bool = False) -> str:
    """A readable TOML dump of the resource at `addr` (`as_json`: JSON); a
    step's content is a nested table, not the JSON text state keeps it as. Given the `state_dir`
    the state was read from, the paths it records (a run's folder, a
    server's log) are shown as paths to open from `cwd` (default: the
    current directory): relative to it when below it, else absolute.
    UnknownAddress (with a did-you-mean, else `listing`: the command that
    lists every address) when there is none."""
    resources = _resources(state) if state is not None else {}
    addr = run_address(addr, resources)
    if addr not in resources:
        hint = did_you_mean(addr, resources)
        message = f"No resource `{addr}` in the state"
        message += f"; {hint}" if hint else f"; run `{listing}` to see every address"
        raise UnknownAddress(message)
    kind, record = resources[addr]
    lines = [f"# {addr}"]
    if kind == "run" and dict(state.results).get(record.identity) == record.id:
        lines.append(f"# the current result of step {record.step} ({record.identity})")
    if kind == "run" and record.metrics and record.step.startswith("benchmark."):
        # one vocabulary for figures (specdsl.stats): say what these are
        lines.append(f"# metrics: each the {stats.RUN_MEDIAN} (of a paired benchmark: the candidate arm's runs; "
                     f"`specdsl diagnose` shows each arm's)")
    doc: dict[str, Any] = encode_record(record)
    if state_dir is not None:
        for field in _PATH_FIELDS.get(kind, ()):
            if doc.get(field):
                doc[field] = _from_here(state_dir, doc[field], Path.cwd() if cwd is None else cwd)
    if kind == "baseline":
        doc["promotions"] = [encode_record(p) for p in state.promotions_of(record.track)]
    if kind == "step" and record.kind == "check":
        doc = _check_doc(state, record, doc, expr_text)
    elif kind == "step" and isinstance(doc.get("content"), str):
        content = record.content_dict()
        if isinstance(content, dict):
            doc["content"] = content
    # What apply records is redacted already; a state written before it was
    # (or edited by hand) is redacted here: values under secret names,
    # sensitive flags of an argv, URL passwords, digests of secrets.
    doc = secrets.redact_tree(doc)
    if as_json:
        return json.dumps({"addr": addr, "kind": kind, **doc}, indent=1, sort_keys=True, default=str) + "\n"
    lines.append(tomli_w.dumps(_tomlable(doc)).rstrip("\n"))
    return "\n".join(lines) + "\n"


def _tomlable(value):
    """`value` as TOML can write it: None (TOML has no null) left out of a
    table and written `"(none)"` in a list, where leaving it out would move
    the rest."""
    if isinstance(value, dict):
        return {str(k): _tomlable(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [("(none)" if v is None else _tomlable(v)) for v in value]
    return value


def run_address(addr: str, resources) -> str:
    """`run.ID` for a bare run id (`20260101T120000Z-1a2b`): every command
    that takes a run accepts both spellings; `state list` prints `run.ID`."""
    if addr not in resources and f"run.{addr}" in resources:
        return f"run.{addr}"
    return addr


def _check_doc(state: State, record, doc: dict, expr_text=None) -> dict:
    """A check step as a user reads it: the assertion as written, its latest
    verdict with the evidence (the interval, n and threshold of its detail,
    the run that decided it, the benchmark runs it read)."""
    content = record.content_dict()
    out: dict[str, Any] = {"addr": record.addr, "kind": record.kind}
    if "assert" in content:
        # the state layer cannot print expressions: the caller's printer does (cli: model.printer)
        tree = content["assert"]
        out["assertion"] = expr_text(tree) if expr_text else json.dumps(tree, sort_keys=True)
    runs = [r for r in state.runs if r.step == record.addr]
    latest = runs[-1] if runs else None
    if latest is None:
        out["verdict"] = "none recorded"
    else:
        verdict = latest.verdict
        out["verdict"] = verdict.status.value if verdict is not None else latest.status
        detail = verdict.detail if verdict is not None else latest.reason
        if detail:
            out["evidence"] = detail
        numbers = _numbers(verdict) if verdict is not None else {}
        if numbers:
            out["numbers"] = numbers
        out["verdict_run"] = latest.id
        if latest.finished:
            out["decided"] = latest.finished
        if latest.identity != record.identity:
            out["note"] = "this verdict was recorded for an earlier identity of the check"
    results = dict(state.results)
    bench = content.get("benchmark")
    if isinstance(bench, str) and bench in results:
        out["reads"] = [f"run.{results[bench]}"]
    out["identity"] = record.identity
    if record.updated:
        out["updated"] = record.updated
    return out


def _numbers(verdict) -> dict[str, Any]:
    """A gating verdict's numbers (its Decision's estimate, interval, level,
    n, threshold, operator, detectable effect; a paired ratio's noise), the
    finite ones."""
    d = verdict.decision
    out: dict[str, Any] = {}
    if d is not None:
        out = {"estimate": d.estimate, "low": d.low, "high": d.high, "level": d.level, "n": d.n, "unit": d.unit,
               "threshold": d.threshold, "op": d.op, "mde": d.mde}
    if verdict.noise is not None:
        out["noise"] = verdict.noise
    return {k: v for k, v in out.items() if v is not None and not (isinstance(v, float) and not math.isfinite(v))}


def _from_here(state_dir: Path, recorded: str, cwd: Path) -> str:
    """A path into the state folder as recorded (relative to the state
    folder, `runs/ID/...`, or as its writer saw it, `WRITER'S/STATE/runs/ID/...`:
    taken from its `runs/` part on, within `state_dir`), as a path to open
    from `cwd`: relative to it when below it, else absolute. An absolute
    recorded path is kept as it is."""
    path = Path(recorded)
    if path.is_absolute():
        return recorded
    parts = path.parts
    if RUNS_NAME in parts:
        path = Path(*parts[len(parts) - 1 - parts[::-1].index(RUNS_NAME):])
    full = Path(os.path.abspath(Path(state_dir) / path))
    here = Path(os.path.abspath(cwd))
    return os.path.relpath(full, here) if full.is_relative_to(here) else str(full)


def _error(err: StateError) -> tuple[int, str]:
    return (Exit.CONFLICT if err.conflict else Exit.ERROR), str(err) + "\n"


def _no_state(state_dir: Path) -> tuple[int, str]:
    err = StateError(state_dir, f"No state recorded here (no {STATE_NAME} in this folder)",
                     f"check the path; a spec's state is in {STATE_DIR_NAME} beside it")
    return _error(err)


def cmd_state_list(state_dir: Path, *, as_json: bool = False) -> tuple[int, str]:
    """`specdsl state list` of the state in `state_dir` (1 when there is none)."""
    try:
        state = load_state(state_dir)
    except StateError as err:
        return _error(err)
    if state is None:
        return _no_state(state_dir)
    return Exit.OK, state_list(state, as_json=as_json)


def cmd_state_show(state_dir: Path, addr: str, listing: str = "specdsl state list", expr_text=None,
                   as_json: bool = False) -> tuple[int, str]:
    """`specdsl state show ADDR` of the state in `state_dir` (1 when there is
    none), its paths shown from the current directory."""
    try:
        state = load_state(state_dir)
        if state is None:
            return _no_state(state_dir)
        return Exit.OK, state_show(state, addr, state_dir=state_dir, listing=listing, expr_text=expr_text, as_json=as_json)
    except StateError as err:
        return _error(err)
    except UnknownAddress as err:
        where = state_path(state_dir)
        return Exit.ERROR, f"{where}: error: {err}\n"


def cmd_force_unlock(state_dir: Path, lock_id: str) -> tuple[int, str]:
    """`specdsl force-unlock ID`."""
    try:
        holder = force_unlock(state_dir, lock_id)
    except StateError as err:
        return _error(err)
    return Exit.OK, (f"Removed the lock {holder.id} of {holder.operation!r} "
               f"(pid {holder.pid} on {holder.host}, since {holder.created}).\n")
