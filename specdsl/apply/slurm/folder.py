"""What the controller and a job exchange through the job folder.

The controller (`controller.py`) writes `JOBDIR/job.json`, the job's
description (versioned JSON, `job_format`); the job (`job.py`, inside the
allocation) appends each hook call as one JSON line to
`JOBDIR/events.jsonl` (`FileHooks`), records into the state folder
`JOBDIR/state` and says how its walk ended in `JOBDIR/done.json`. Both
sides take the names and the outcome's JSON form from here; neither
imports the other.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import attrs

from specdsl.apply.outcome import Outcome, Reason, Status
from specdsl.apply.slurm.job_format import NAME as DESCRIPTION
from specdsl.apply.slurm.job_format import JobFormatError, dumps, loads

CHECK_OK = "specdsl-job-ok"
EVENTS = "events.jsonl"
DONE = "done.json"
STATE = "state"


def outcome_doc(outcome) -> dict[str, Any]:
    doc = attrs.asdict(outcome, recurse=False)
    doc["status"] = outcome.status.value
    doc["reason"] = outcome.reason.value
    return doc


def outcome_of(doc: dict[str, Any]) -> Outcome:
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
