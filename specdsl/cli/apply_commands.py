"""`specdsl apply FILE | PLANFILE [--yes] [--rerun] [--target NAME]`.

Exit codes: 0 every check passed, 1 error before anything ran,
3 a check failed, 4 a check was inconclusive, 5 a step failed while
executing (what completed is recorded; re-apply resumes), 5 also when the state file could not be written (disk full, read-only:
the message says what is and is not recorded), 6 conflict (state
locked, stale plan), 130 interrupted (servers stopped, state written).

Signals: SIGINT (Ctrl-C), SIGTERM and SIGHUP stop the walk, a second one
stops waiting (`specdsl.cli.console_walk`).

The command is parse (the spec or saved plan, the lock), operation (the
plan: `specdsl.operations.plan_spec`), confirm, operation (the walk:
`operations.apply.walk`), view; one host registry serves them all.

Before the walk, every server the state records is looked at (see
`specdsl.apply.orphans`): one that is gone, frozen, or no longer in the
spec is listed with the plan and stopped first (its record dropped only
once its process group is gone).
"""

from __future__ import annotations

import sys
from pathlib import Path

from specdsl.cli.apply_view import print_result, short_lines
from specdsl.cli.common import confirm, error, load_spec, say_problems, state_error
from specdsl.cli.console_walk import walk_with_console
from specdsl.cli.plan_commands import add_common, planned_for
from specdsl.cli.views import coloured_plan
from specdsl.exits import Exit
from specdsl.operations import Session
from specdsl.operations.plan import REFRESH_HINT, plan_saved
from specdsl.plan.planfile import PlanFileError, read_plan
from specdsl.plan.render import render_text
from specdsl.plan.slurm import render_jobs
from specdsl.state import StateError, load_state, locked, state_dir_for


def add_parsers(sub) -> None:
    p = sub.add_parser("apply", help="provision, launch, benchmark, check and promote")
    p.add_argument("file", metavar="FILE|PLANFILE", help="a spec (planned now) or a saved plan (applied exactly)")
    p.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    p.add_argument("--no-refresh", action="store_true", help="plan from recorded state alone")
    p.add_argument("--json", action="store_true",
                   help="print the outcome as JSON on stdout (schema: docs/apply.md); progress stays on stderr")
    add_common(p)
    p.set_defaults(handler=cmd_apply)


def _is_planfile(path: str) -> bool:
    return path.endswith(".plan.toml")


def cmd_apply(args) -> int:
    saved = None
    if _is_planfile(args.file):
        try:
            saved = read_plan(Path(args.file))
        except PlanFileError as exc:
            error(str(exc))
            return Exit.ERROR
        if (args.vars or args.var_files or args.target or args.rerun or getattr(args, "more", 0)
                or getattr(args, "max_launches", None) is not None or getattr(args, "max_time", None) is not None):
            error("a saved plan is applied exactly: -var, --var-file, --target, --rerun, --more, --max-launches and "
                  "--max-time belong to `specdsl plan`")
            return Exit.ERROR
        args.file = saved.spec
        args.vars = [f"{k}={v}" for k, v in saved.variables]
        args.target = list(saved.targets)
        args.rerun = saved.rerun
        args.more = saved.more
        args.max_launches, args.max_time = saved.max_launches, saved.max_time
    loaded = load_spec(args)
    if loaded is None:
        return Exit.ERROR
    state_dir = state_dir_for(Path(args.file), Path(args.state) if args.state else None)
    notes: list[str] = []
    try:
        with locked(state_dir, "apply", notify=notes.append) as lock:
            for note in notes:
                print(note, file=sys.stderr)
            with Session() as session:
                return _apply_locked(args, loaded, state_dir, lock, saved, session)
    except StateError as exc:  # LockError included
        return state_error(exc)


def _apply_locked(args, loaded, state_dir: Path, lock, saved, session) -> int:
    state = load_state(state_dir)
    if saved is not None:
        stale = _stale(saved, loaded, state)
        if stale:
            import shlex

            # the plan command that made `saved`, so the new plan is made the same way
            again = ["specdsl", "plan", saved.spec, *(f"-var={k}={v}" for k, v in saved.variables)]
            again += [f"--target={t}" for t in saved.targets] + (["--rerun"] if saved.rerun else [])
            again += [f"--more={saved.more}"] if saved.more else []
            again += [f"--max-launches={saved.max_launches}"] if saved.max_launches is not None else []
            again += [f"--max-time={saved.max_time:g}s"] if saved.max_time is not None else []
            again += ([f"--state={args.state}"] if args.state else []) + ["-o", saved.read_from]
            error(f"stale plan: {stale}; make a new plan with `{shlex.join(again)}`")
            return Exit.CONFLICT
        planned = plan_saved(loaded.resolved.config, args.file, saved)
    else:
        planned = planned_for(args, loaded, state, state_dir, no_refresh=args.no_refresh, session=session)
    if not planned.ok:
        say_problems(planned.problems)
        return Exit.ERROR
    if planned.refresh_errors:  # plan may stand without the host; apply needs it
        for e in planned.refresh_errors:
            error(f"cannot refresh: {e['detail']}")
        print(REFRESH_HINT, file=sys.stderr)
        return Exit.ERROR
    graph, plan = planned.graph, planned.plan
    from specdsl.apply.orphans import stale
    from specdsl.operations.apply import survey

    seen = survey(state, graph, session.registry)
    if not args.json:
        sys.stdout.write(coloured_plan(render_text(plan)) + render_jobs(graph, plan))
        _print_stale(stale(seen))
        sys.stdout.flush()
    live_stale = [s for s in stale(seen) if s.condition != "not running"]
    if saved is None and (plan.has_changes or live_stale):
        if not confirm(args, "apply changes things", "Apply this plan?", "Apply cancelled."):
            return Exit.ERROR
    result = walk_with_console(plan, graph, spec=args.file, state_dir=state_dir, state=state, lock=lock,
                               variables=dict(loaded.resolved.config.variables), registry=session.registry, seen=seen)
    if args.json:
        from specdsl.cli.apply_json import render_apply_json

        sys.stdout.write(render_apply_json(result, plan, state_dir))
    else:
        print_result(result, plan, why=short_lines(loaded.resolved.config, graph, state_dir, args.file))
        from specdsl.cli.apply_view import frontier_lines

        for line in frontier_lines(loaded.resolved.config, state_dir):
            print(line)
    if result.state_failure:
        print(result.state_failure + "\n" + _servers_left(), file=sys.stderr)
    return result.exit_code()


def _servers_left() -> str:
    from specdsl.servers import lifecycle

    left = lifecycle.live()
    if not left:
        return "  servers: none left running (every server this apply started or reused was stopped)"
    shown = ", ".join(f"pid {h.pid} (process group {h.pgid})" for _, h in left)
    return f"  servers: still running: {shown}: stop them with `specdsl destroy` once the state can be written"


def _print_stale(items) -> None:
    if not items:
        return
    print("\nServers recorded by an earlier apply, stopped (or their records dropped) before this one:")
    for s in items:
        print(f"  - {s.line()}\n      {s.why}")


def _stale(saved, loaded, state) -> str | None:
    if saved.spec_digest != loaded.digest:
        return f"{saved.spec} (or a file it imports, or a variable) changed since the plan was made"
    lineage = state.lineage if state is not None else None
    if saved.lineage != lineage:
        return "the state was replaced since the plan was made (lineage differs)"
    serial = state.serial if state is not None else 0
    if saved.serial != serial:
        return f"the state changed since the plan was made (serial {saved.serial} -> {serial})"
    return None
