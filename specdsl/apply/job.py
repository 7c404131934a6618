"""What runs inside a Slurm allocation: `python -m specdsl.apply.job JOBDIR`.

The controller (`apply/slurm.py`) wrote `JOBDIR/job.json` (versioned
JSON, `job_format`): the plan and graph of this job's steps (hosts made this machine's: the compute node is
a `LocalHost` here), a snapshot of the state, the variables, the spec's
folder and where environments live. This walks those steps with the
ordinary `apply_plan`, recording into `JOBDIR/state` (a state folder of
its own, of the same lineage) and reporting every hook call as one JSON
line in `JOBDIR/events.jsonl`, which the controller follows. SIGTERM
(scancel, the time limit) sets the stop event: servers are stopped and
steps end as interrupted. `JOBDIR/done.json` says how the walk ended.

The description is checked against its schema before anything runs: a
job file of another job format (another specdsl) or a damaged one ends the
job with one line saying why (exit 2), and nothing in it can run code.
`python -m specdsl.apply.job --check` imports what a job needs and prints
this specdsl's version (the preflight of a Slurm host over SSH runs it on
the login node with `slurm.python`).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import attrs

from specdsl import private
from specdsl.apply.job_format import NAME as DESCRIPTION
from specdsl.apply.job_format import JobFormatError, dumps, loads

CHECK_OK = "specdsl-job-ok"
EVENTS = "events.jsonl"
DONE = "done.json"
STATE = "state"


def outcome_doc(outcome) -> dict[str, Any]:
    doc = attrs.asdict(outcome, recurse=False)
    doc["status"] = outcome.status.value
    doc["reason"] = outcome.reason.value
    return doc


def outcome_of(doc: dict[str, Any]):
    from specdsl.apply.outcome import Outcome, Reason, Status

    fields = {f.name for f in attrs.fields(Outcome)}
    kw = {k: v for k, v in doc.items() if k in fields}
    kw["status"], kw["reason"] = Status(doc["status"]), Reason(doc["reason"])
    return Outcome(**kw)


class FileHooks:
    """Hooks that append each call to the events file, flushed at once."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()

    def _emit(self, doc: dict[str, Any]) -> None:
        doc["time"] = time.time()
        line = json.dumps(doc, sort_keys=True, default=str) + "\n"
        with self._lock:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            with os.fdopen(fd, "a", encoding="utf-8") as f:
                f.write(line)

    def start(self, addr: str, kind: str) -> None:
        self._emit({"event": "start", "addr": addr, "kind": kind})

    def progress(self, addr: str, message: str) -> None:
        self._emit({"event": "progress", "addr": addr, "message": message})

    def finish(self, outcome) -> None:
        self._emit({"event": "finish", "outcome": outcome_doc(outcome)})


def description_text(description: dict[str, Any]) -> str:
    """The job file's text of a description (`job_format.dumps`' keywords)."""
    return dumps(**description)


def write_description(jobdir: Path, description: dict[str, Any]) -> Path:
    path = Path(jobdir) / DESCRIPTION
    with private.replacing(path, "w") as f:
        f.write(description_text(description))
    return path


def read_description(jobdir: Path) -> dict[str, Any]:
    """The job's description; `JobFormatError` naming the file and why."""
    path = Path(jobdir) / DESCRIPTION
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise JobFormatError(f"{path}: no job description (the job folder has no {DESCRIPTION})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise JobFormatError(f"{path}: cannot read the job description ({exc})") from None
    return loads(text, path)


def run(jobdir: Path) -> int:
    from specdsl.apply.api import apply_plan
    from specdsl.hosts import HostRegistry
    from specdsl.state import write_state

    jobdir = Path(jobdir)
    try:
        desc = read_description(jobdir)
    except JobFormatError as exc:
        print(f"specdsl: {exc}", file=sys.stderr)
        return 2
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1):
        signal.signal(sig, lambda *_: stop.set())
    state_dir = jobdir / STATE
    private.make_dirs(state_dir)
    # a state folder of its own, starting from the controller's snapshot
    state = write_state(state_dir, attrs.evolve(desc["state"], serial=0))
    hooks = FileHooks(jobdir / EVENTS)
    hooks.progress(desc["first"], f"running on {os.uname().nodename} (slurm job {os.environ.get('SLURM_JOB_ID', '?')})")
    registry = HostRegistry(env_root=Path(desc["env_root"]))
    result = apply_plan(desc["plan"], desc["graph"], state_dir=state_dir, state=state, lock=None,
                        spec_dir=Path(desc["spec_dir"]), registry=registry, hooks=hooks, stop=stop,
                        variables=desc["variables"], workers=2)
    done = {"exit_code": result.exit_code(), "interrupted": result.interrupted, "warnings": result.warnings,
            "verdicts": len(result.verdicts)}
    private.write_text(jobdir / DONE, json.dumps(done, sort_keys=True))
    return 0 if not result.interrupted else 130


def check() -> int:
    """Import what a job runs (the walk, the load generator, the verdicts'
    statistics) and print `specdsl-job-ok VERSION`."""
    import specdsl
    import specdsl.apply.api  # noqa: F401
    import specdsl.bench  # noqa: F401

    print(f"{CHECK_OK} {specdsl.__version__}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args == ["--check"]:
        return check()
    if len(args) != 1:
        print("usage: python -m specdsl.apply.job JOBDIR | --check", file=sys.stderr)
        return 2
    return run(Path(args[0]))


if __name__ == "__main__":
    sys.exit(main())
