"""What runs inside a Slurm allocation: `python -m specdsl.apply.slurm.job JOBDIR`.

The controller (`controller.py`) wrote `JOBDIR/job.json` (versioned
JSON, `job_format`; the job folder's names are `folder`'s): the plan and graph of this job's steps (hosts made this machine's: the compute node is
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
`python -m specdsl.apply.slurm.job --check` imports what a job needs and prints
this specdsl's version (the preflight of a Slurm host over SSH runs it on
the login node with `slurm.python`).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from pathlib import Path

import attrs

from specdsl import private
from specdsl.apply.api import apply_plan
from specdsl.apply.slurm.folder import CHECK_OK, DONE, EVENTS, STATE, FileHooks, JobFormatError, read_description
from specdsl.exits import Exit
from specdsl.hosts import HostRegistry
from specdsl.state import write_state

# The job runner's own code (not a command's): its description cannot be read,
# or it was called wrongly (docs/slurm.md); the controller shows it as the job's failure.
JOB_UNREADABLE = 2


def run(jobdir: Path) -> int:
    jobdir = Path(jobdir)
    try:
        desc = read_description(jobdir)
    except JobFormatError as exc:
        print(f"specdsl: {exc}", file=sys.stderr)
        return JOB_UNREADABLE
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
    return Exit.OK if not result.interrupted else Exit.INTERRUPTED


def check() -> int:
    """Import what a job runs (the walk, the load generator, the verdicts'
    statistics) and print `specdsl-job-ok VERSION`."""
    import specdsl
    import specdsl.bench  # noqa: F401  (the walk, apply_plan, is imported above)

    print(f"{CHECK_OK} {specdsl.__version__}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args == ["--check"]:
        return check()
    if len(args) != 1:
        print("usage: python -m specdsl.apply.slurm.job JOBDIR | --check", file=sys.stderr)
        return JOB_UNREADABLE
    return run(Path(args[0]))


if __name__ == "__main__":
    sys.exit(main())
