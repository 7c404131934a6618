"""`specdsl apply FILE | PLANFILE [--yes] [--rerun] [--target NAME]`.

Exit codes: 0 every check passed, 1 error before anything ran,
3 a check failed, 4 a check was inconclusive, 5 a step failed while
executing (what completed is recorded; re-apply resumes), 6 conflict (state
locked, stale plan), 130 interrupted (servers stopped, state written).
"""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path

from specdsl.cli.apply_view import ConsoleHooks, print_result
from specdsl.cli.common import EXIT_CONFLICT, EXIT_ERROR, error, load_spec
from specdsl.cli.plan_commands import _state_error, add_common, build_plan
from specdsl.graph.build import build_graph
from specdsl.plan.planfile import PlanFileError, read_plan
from specdsl.plan.render import render_text
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
            return EXIT_ERROR
        if args.vars or args.var_files or args.target or args.rerun:
            error("a saved plan is applied exactly: -var, --var-file, --target and --rerun belong to `specdsl plan`")
            return EXIT_ERROR
        args.file = saved.spec
        args.vars = [f"{k}={v}" for k, v in saved.variables]
        args.target = list(saved.targets)
        args.rerun = saved.rerun
    loaded = load_spec(args)
    if loaded is None:
        return EXIT_ERROR
    state_dir = state_dir_for(Path(args.file), Path(args.state) if args.state else None)
    notes: list[str] = []
    try:
        with locked(state_dir, "apply", notify=notes.append) as lock:
            for note in notes:
                print(note, file=sys.stderr)
            return _apply_locked(args, loaded, state_dir, lock, saved)
    except StateError as exc:  # LockError included
        return _state_error(exc)


def _apply_locked(args, loaded, state_dir: Path, lock, saved) -> int:
    state = load_state(state_dir)
    if saved is not None:
        stale = _stale(saved, loaded, state)
        if stale:
            import shlex

            # the plan command that made `saved`, so the new plan is made the same way
            again = ["specdsl", "plan", saved.spec, *(f"-var={k}={v}" for k, v in saved.variables)]
            again += [f"--target={t}" for t in saved.targets] + (["--rerun"] if saved.rerun else [])
            again += ([f"--state={args.state}"] if args.state else []) + ["-o", saved.read_from]
            error(f"stale plan: {stale}; make a new plan with `{shlex.join(again)}`")
            return EXIT_CONFLICT
        graph = build_graph(loaded.resolved.config)
        plan = saved
    else:
        graph, plan = build_plan(args, loaded, state, no_refresh=args.no_refresh)
        if plan is None:
            return EXIT_ERROR
    if not args.json:
        sys.stdout.write(render_text(plan))
        sys.stdout.flush()
    if saved is None and plan.has_changes and not args.yes:
        if not sys.stdin.isatty():
            error("apply changes things: confirm with --yes (stdin is not a terminal)")
            return EXIT_ERROR
        answer = input("\nApply this plan? Only 'yes' is accepted: ").strip()
        if answer != "yes":
            print("Apply cancelled.")
            return EXIT_ERROR
    result = walk_with_console(plan, graph, state_dir=state_dir, state=state, lock=lock, spec_dir=Path(args.file).parent,
                               variables=dict(loaded.resolved.config.variables))
    if args.json:
        from specdsl.cli.apply_json import render_apply_json

        sys.stdout.write(render_apply_json(result, plan, state_dir))
    else:
        from specdsl.cli.diagnose_commands import short_lines

        print_result(result, plan, why=short_lines(loaded.resolved.config, graph, state_dir, args.file))
    return result.exit_code()


def walk_with_console(plan, graph, **kw):
    """`apply_plan` with progress on the console and Ctrl-C / SIGTERM
    turned into the walk's stop event (servers stopped, state written)."""
    from specdsl.apply import apply_plan

    stop = threading.Event()
    hooks = ConsoleHooks()
    previous = _on_signals(lambda: (stop.set(), hooks.note("interrupt received: finishing the running step, stopping servers")))
    try:
        return apply_plan(plan, graph, hooks=hooks, stop=stop, **kw)
    finally:
        _restore_signals(previous)
        hooks.close()


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


def _on_signals(handler):
    if threading.current_thread() is not threading.main_thread():
        return None
    previous = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        previous[sig] = signal.signal(sig, lambda *_: handler())
    return previous


def _restore_signals(previous) -> None:
    for sig, old in (previous or {}).items():
        signal.signal(sig, old)
