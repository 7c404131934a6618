"""The state a walk keeps: one State, changed under a mutex and written
after every step (so an interrupted apply keeps what completed), plus the
promotion lock files. State lives on this machine (the controller's), never
on a host."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import tomli_w

from specdsl import private, secrets
from specdsl.graph.build import server_content, stack_content
from specdsl.state import LockInfo, RunRecord, State, StepRecord, new_run_id, run_folder, utc_now, write_state


class StateWriter:
    def __init__(self, state_dir: Path, state: State, lock: LockInfo | None) -> None:
        self.state_dir = Path(state_dir)
        self.state = state
        self.lock = lock
        self._mutex = threading.Lock()

    def new_run(self) -> tuple[str, Path]:
        run_id = new_run_id()
        folder = run_folder(self.state_dir, run_id)
        private.make_dirs(folder)  # runs/ too: 0700 whatever the umask
        return run_id, folder

    def folder_text(self, folder: Path | None) -> str:
        return str(folder.relative_to(self.state_dir)) if folder is not None else ""

    def change(self, fn) -> State:
        """Apply `fn(state) -> state` and write it, atomically, under the mutex."""
        with self._mutex:
            self.state = write_state(self.state_dir, fn(self.state), lock=self.lock)
            return self.state

    def step_done(self, step, run: RunRecord | None, extra=None) -> None:
        record = StepRecord(step.addr, step.kind, step.identity, json.dumps(step.content, sort_keys=True), utc_now())

        def fn(state: State) -> State:
            if run is not None:
                state = state.with_run(run)
            if run is None or run.status == "completed":
                state = state.with_step(record)
            return extra(state) if extra else state

        self.change(fn)

    def run_record(self, step, run_id: str, folder: Path | None, started: str, status: str, *, reason: str = "",
                   metrics: dict[str, float] | None = None, effective: dict[str, Any] | None = None,
                   argv: tuple[str, ...] = ()) -> RunRecord:
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
