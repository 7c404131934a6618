"""The state a walk keeps: one State, changed under a mutex and written
after every step (so an interrupted apply keeps what completed), plus the
promotion lock files. State lives on this machine (the controller's), never
on a host.

When the state file cannot be written (disk full, read-only), nothing is
lost in memory: the change is kept and written with the next write that
succeeds (the serial on disk is unchanged, so the compare-and-swap still
holds). The first failure calls `on_failure` (apply stops the walk), a step
whose result could not be written counts as failed (`step_done` raises
`StepFailed`, and a later write records its run as failed, not completed),
and `report()` says what is and is not on disk."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import attrs
import tomli_w

from specdsl import private, secrets
from specdsl.apply.outcome import StepFailed
from specdsl.graph.content import server_content, stack_content
from specdsl.state import (
    LockInfo, RunRecord, State, StateError, StepRecord, new_run_id, run_folder, state_path, utc_now, write_state,
)
from specdsl.verdict.record import Verdict


class StateWriter:
    def __init__(self, state_dir: Path, state: State, lock: LockInfo | None, *, on_failure=None) -> None:
        self.state_dir = Path(state_dir)
        self.state = state
        self.lock = lock
        self._mutex = threading.Lock()
        self._on_failure = on_failure
        self.failure: StateError | None = None  # the first write that failed
        self.unwritten: list[str] = []  # what the state in memory holds and the file does not
        self.disk_serial = state.serial  # the serial of the file on disk, as this writer last saw it
        self.last_written = ""  # what the last write that succeeded recorded
        self.flushed = False
        self.stopped_walk = False  # the failure (not a signal) stopped the walk

    def new_run(self) -> tuple[str, Path]:
        run_id = new_run_id()
        folder = run_folder(self.state_dir, run_id)
        private.make_dirs(folder)  # runs/ too: 0700 whatever the umask
        return run_id, folder

    def folder_text(self, folder: Path | None) -> str:
        return str(folder.relative_to(self.state_dir)) if folder is not None else ""

    def change(self, fn, what: str | None = "", *, unwritten=None) -> State:
        """Apply `fn(state) -> state` and write it, atomically, under the
        mutex. When the file cannot be written the change is kept in memory
        (as `unwritten(state)` when given: what to keep instead) for the next
        write; a conflict (another writer, a force-unlock) still raises."""
        with self._mutex:
            before = self.state
            try:
                self.state = write_state(self.state_dir, fn(before), lock=self.lock)
            except StateError as err:
                if err.conflict:
                    raise
                first = self.failure is None
                self.failure = self.failure or err
                self.state = (unwritten or fn)(before)
                if what is not None:
                    self.unwritten.append(what or "a change")
                if first and self._on_failure is not None:
                    self.stopped_walk = self._on_failure() is not False
                return self.state
            self.disk_serial = self.state.serial
            self.unwritten.clear()
            self.last_written = what or self.last_written
            self.flushed = True
            return self.state

    @property
    def failed(self) -> bool:
        return bool(self.unwritten)

    def flush(self) -> bool:
        """Try once more to write what is only in memory; True when the file
        now holds everything."""
        if not self.unwritten:
            return True
        self.change(lambda s: s, None)
        return not self.unwritten

    def report(self) -> str:
        """What is and is not on disk after a write failed ("" when none did)."""
        if self.failure is None:
            return ""
        path = state_path(self.state_dir)
        cause = self.failure.summary
        lines = [f"{path}: error: {cause}"]
        if not self.unwritten:
            lines.append(f"  recorded: everything, in the end (serial {self.disk_serial}); the walk was stopped when "
                         "the first write failed")
        else:
            lines.append(f"  recorded: state.toml as of serial {self.disk_serial}"
                         + (f" (its last write: {self.last_written})" if self.last_written else "")
                         + "; nothing recorded before was lost")
            shown = list(dict.fromkeys(self.unwritten))
            lines.append("  NOT recorded: " + "; ".join(shown))
        lines.append(f"  = hint: free space in {self.state_dir} (or make it writable), then re-apply: "
                     "a step whose result was not recorded runs again")
        return "\n".join(lines)

    def step_done(self, step, run: RunRecord | None, extra=None) -> None:
        """Record that `step` ended (its `run`, and its step record when it
        completed). StepFailed when the state could not be written: the
        step's result is then not claimed (its run is kept as failed)."""
        record = StepRecord(step.addr, step.kind, step.identity, json.dumps(step.content, sort_keys=True), utc_now())

        def fn(state: State, run=run) -> State:
            if run is not None:
                state = state.with_run(run)
            if run is None or run.status == "completed":
                state = state.with_step(record)
            return extra(state) if extra else state

        def unwritten(state: State) -> State:
            if run is None or run.status != "completed":
                return fn(state)
            failed = attrs.evolve(run, status="failed", reason=f"its result could not be recorded: {self.failure_summary()}")
            state = state.with_run(failed)
            return extra(state) if extra else state

        status = run.status if run is not None else "done"
        self.change(fn, f"{step.addr} ({status})", unwritten=unwritten)
        if self.unwritten and (run is None or run.status == "completed"):
            raise StepFailed(f"its result could not be recorded: {self.failure_summary()}; the walk stops "
                             f"(see {state_path(self.state_dir)})")

    def failure_summary(self) -> str:
        return self.failure.summary if self.failure is not None else "the state file cannot be written"

    def run_record(self, step, run_id: str, folder: Path | None, started: str, status: str, *, reason: str = "",
                   metrics: dict[str, float] | None = None, effective: dict[str, Any] | None = None,
                   argv: tuple[str, ...] = (), verdict: Verdict | None = None) -> RunRecord:
        """A record of one run of `step` (`verdict`: a check's), secrets redacted."""
        if folder is not None:
            # What the step wrote there (results, effective config, logs a
            # server or script made) is the owner's only from here on,
            # whichever code wrote it and whatever the umask.
            private.tighten(folder)
        return RunRecord(
            id=run_id,
            step=step.addr,
            identity=step.identity,
            experiment=step.experiments[0] if step.experiments else "",
            status=status,
            started=started,
            finished=utc_now(),
            folder=self.folder_text(folder),
            metrics=metrics or {},
            # a server reports its secrets too (SGLang's /server_info has api_key)
            effective=_plain(secrets.redact_tree(effective or {})),
            reason=secrets.redact(reason),
            argv=tuple(secrets.redact_argv(argv)),
            verdict=attrs.evolve(verdict, detail=secrets.redact(verdict.detail)) if verdict is not None else None,
        )


def _plain(effective: dict[str, Any]) -> dict[str, Any]:
    """Effective config as TOML-safe values (nested lists/dicts kept, None dropped)."""
    out = {}
    for key, value in effective.items():
        if value is None:
            continue
        if isinstance(value, (str, int, float, bool)):
            out[key] = value
        else:
            out[key] = json.dumps(value, sort_keys=True, default=str)
    return out


def write_stack_lock(spec_dir: Path, track: str, experiment, env: dict | None, server_argv: list[str] | None,
                     run_id: str, metrics: dict[str, float]) -> Path:
    """`stacks/TRACK.lock.toml` beside the spec: what exactly passed, the
    owner's only, with every sensitive value written `(sensitive)`."""
    stack = experiment.stack
    doc: dict[str, Any] = {
        "format_version": 1,
        "track": track,
        "experiment": experiment.name,
        "run": run_id,
        "promoted": utc_now(),
        # the same fields the step identities hash (TOML cannot hold None)
        "stack": {k: v for k, v in stack_content(stack).items() if v is not None},
        "server": {k: v for k, v in server_content(experiment.server).items() if v is not None},
        "metrics": dict(sorted(metrics.items())),
    }
    if env:
        doc["resolved"] = {k: v for k, v in env.items() if v is not None and k != "packages"}
        doc["resolved"]["packages"] = dict(sorted(env.get("packages", {}).items()))
    if server_argv:
        doc["server"]["argv"] = secrets.redact_argv(server_argv, dict(stack.env) | dict(experiment.server.env))
    doc = secrets.redact_tree(doc)
    path = Path(spec_dir) / "stacks" / f"{track}.lock.toml"
    # what this promotion replaced, so a candidate measured beside the
    # track's configuration keeps that arm once it is the track (graph/track_arm)
    try:
        import tomllib

        old = tomllib.loads(path.read_text())
    except (OSError, ValueError):
        old = None
    if isinstance(old, dict) and old.get("run") != run_id:
        doc["previous"] = {k: old[k] for k in ("experiment", "run", "promoted", "stack", "server", "resolved") if k in old}
    elif isinstance(old, dict) and isinstance(old.get("previous"), dict):
        doc["previous"] = old["previous"]
    private.write_text(path, "# written by specdsl when this stack was promoted; do not edit\n" + tomli_w.dumps(doc))
    return path
