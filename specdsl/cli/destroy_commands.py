"""`specdsl destroy [FILE] [--state DIR] [--yes]` and `specdsl state list --servers`.

`destroy` stops every server the state records, whatever became of it
(answering, frozen, dead), Terraform-style: it lists them as a plan, asks
for `yes` (or takes `--yes`), then stops each one's process group (TERM,
10 s, KILL) and drops its record once the group is gone. Environments,
runs, results and baselines are kept: they are records, not processes.
Exit codes: 0 nothing is left running, 1 a user mistake (no state, not
confirmed), 5 a server could not be stopped or the state not written
(each named; its record is kept), 6 the state is locked.

`state list --servers` shows the recorded servers, one a line, with what
their host says of them now.
"""

from __future__ import annotations

import sys
from pathlib import Path

from specdsl.cli.common import confirm, error, state_error
from specdsl.exits import Exit
from specdsl.operations.recorded_servers import spec_hosts

DESTROY_GRACE_S = 10.0


def add_parsers(sub) -> None:
    p = sub.add_parser("destroy", help="stop every server the state records")
    p.add_argument("file", metavar="FILE", nargs="?", help="the spec whose state to read: the .specdsl folder beside it")
    p.add_argument("--state", metavar="DIR", help="state folder (default: .specdsl beside FILE; without FILE, ./.specdsl)")
    p.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    p.set_defaults(handler=cmd_destroy)


def _locate(args, words: list[str]) -> Path | int:
    from specdsl.state import StateError
    from specdsl.state import commands as state_commands

    try:
        return state_commands.locate_state(Path(args.file) if args.file else None,
                                           Path(args.state) if args.state else None, " ".join(["specdsl", *words]))
    except StateError as exc:
        return state_error(exc)


def cmd_state_servers(args) -> int:
    """`specdsl state list --servers`."""
    from specdsl.apply.orphans import survey
    from specdsl.hosts import HostRegistry
    from specdsl.state import StateError, load_state

    state_dir = _locate(args, ["state", "list", "--servers"])
    if isinstance(state_dir, int):
        return state_dir
    try:
        state = load_state(state_dir)
    except StateError as exc:
        return state_error(exc)
    registry = HostRegistry()
    try:
        # every record counts as reused: listing stops nothing
        seen = survey(state, registry, spec_hosts(args.file), {s.identity for s in state.servers} if state else set())
    finally:
        registry.close()
    for s in seen:
        print(s.line())
    return Exit.OK


def cmd_destroy(args) -> int:
    from specdsl.apply.orphans import DEAD, survey
    from specdsl.apply.state_writer import StateWriter
    from specdsl.apply.steps.launch import stop_recorded
    from specdsl.hosts import HostRegistry
    from specdsl.state import StateError, load_state, locked

    state_dir = _locate(args, ["destroy"])
    if isinstance(state_dir, int):
        return state_dir
    registry = HostRegistry()
    try:
        with locked(state_dir, "destroy", notify=lambda note: print(note, file=sys.stderr)) as lock:
            state = load_state(state_dir)
            seen = survey(state, registry, spec_hosts(args.file))  # nothing reused: every one is stopped
            if not seen:
                print("Nothing to destroy: the state records no server.")
                return Exit.OK
            print(f"Servers recorded in {state_dir}:\n")
            for s in seen:
                action = "drop the record" if s.condition == DEAD else "stop"
                print(f"  - {s.line()}\n      {action}")
            print(f"\nDestroy: {len(seen)} server{'s' if len(seen) != 1 else ''} to stop "
                  "(environments, runs and baselines are kept).")
            if not confirm(args, "destroy stops servers", "Stop these servers?", "Destroy cancelled."):
                return Exit.ERROR
            writer = StateWriter(Path(state_dir).resolve(), state, lock)
            problems = []
            for s in seen:
                if s.host is None:
                    problems.append(f"{s.addr}: {s.why}; its record is kept (name the spec that declares it: "
                                    f"`specdsl destroy SPEC`)")
                    continue
                problem = stop_recorded(writer, s.record, s.host, grace_s=DESTROY_GRACE_S)
                if problem:
                    problems.append(problem)
                else:
                    print(f"  - {s.addr}: {'record dropped' if s.condition == DEAD else 'stopped'}")
            for line in problems:
                error(line)
            if writer.failure is not None:
                print(writer.report(), file=sys.stderr)
                return Exit.FAILED
            return Exit.FAILED if problems else Exit.OK
    except StateError as exc:
        return state_error(exc)
    finally:
        registry.close()
