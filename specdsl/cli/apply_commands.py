"""`specdsl apply FILE | PLANFILE [--yes] [--rerun] [--target NAME]`.

Exit codes: 0 every check passed, 1 error before anything ran,
3 a check failed, 4 a check was inconclusive, 5 a step failed while
executing (what completed is recorded; re-apply resumes), 5 also when the state file could not be written (disk full, read-only:
the message says what is and is not recorded), 6 conflict (state
locked, stale plan), 130 interrupted (servers stopped, state written).

Signals: SIGINT (Ctrl-C), SIGTERM and SIGHUP (a closed terminal or SSH
session) stop the walk: nothing new starts, running steps end as
interrupted, servers are stopped, state is written. A second signal stops
waiting: every server's process group is killed at once, and if apply has
not ended `HURRY_EXIT_S` later it exits 130 there and then (state.toml is
whole whenever that happens: every write is atomic). The handlers take no
lock and print with a plain `os.write`: a signal that lands while the main
thread draws progress cannot deadlock it.

Before the walk, every server the state records is looked at (see
`specdsl.apply.orphans`): one that is gone, frozen, or no longer in the
spec is listed with the plan and stopped first (its record dropped only
once its process group is gone).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path

from specdsl.cli.apply_view import ConsoleHooks, print_result
from specdsl.cli.common import EXIT_CONFLICT, EXIT_ERROR, error, load_spec
from specdsl.cli.common import state_error
from specdsl.cli.plan_commands import add_common, build_plan
from specdsl.cli.recorded_servers import graph_hosts, launch_identities
from specdsl.graph.build import build_graph
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
            return EXIT_ERROR
        if args.vars or args.var_files or args.target or args.rerun or getattr(args, "more", 0):
            error("a saved plan is applied exactly: -var, --var-file, --target, --rerun and --more belong to `specdsl plan`")
            return EXIT_ERROR
        args.file = saved.spec
        args.vars = [f"{k}={v}" for k, v in saved.variables]
        args.target = list(saved.targets)
        args.rerun = saved.rerun
        args.more = saved.more
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
        return state_error(exc)


def _apply_locked(args, loaded, state_dir: Path, lock, saved) -> int:
    state = load_state(state_dir)
    if saved is not None:
        stale = _stale(saved, loaded, state)
        if stale:
            import shlex

            # the plan command that made `saved`, so the new plan is made the same way
            again = ["specdsl", "plan", saved.spec, *(f"-var={k}={v}" for k, v in saved.variables)]
            again += [f"--target={t}" for t in saved.targets] + (["--rerun"] if saved.rerun else [])
            again += [f"--more={saved.more}"] if saved.more else []
            again += ([f"--state={args.state}"] if args.state else []) + ["-o", saved.read_from]
            error(f"stale plan: {stale}; make a new plan with `{shlex.join(again)}`")
            return EXIT_CONFLICT
        graph = build_graph(loaded.resolved.config, spec_dir=Path(args.file).parent)
        plan = saved
        from specdsl.cli.plan_commands import dataset_errors

        if not dataset_errors(graph, plan, Path(args.file).parent):
            return EXIT_ERROR
    else:
        graph, plan = build_plan(args, loaded, state, no_refresh=args.no_refresh)
        if plan is None:
            return EXIT_ERROR
    from specdsl.apply.orphans import stale, survey
    from specdsl.hosts import HostRegistry

    registry = HostRegistry()
    seen = survey(state, registry, graph_hosts(graph), launch_identities(graph))
    if not args.json:
        sys.stdout.write(render_text(plan) + render_jobs(graph, plan))
        _print_stale(stale(seen))
        sys.stdout.flush()
    live_stale = [s for s in stale(seen) if s.condition != "not running"]
    if saved is None and (plan.has_changes or live_stale) and not args.yes:
        if not sys.stdin.isatty():
            error("apply changes things: confirm with --yes (stdin is not a terminal)")
            return EXIT_ERROR
        answer = input("\nApply this plan? Only 'yes' is accepted: ").strip()
        if answer != "yes":
            print("Apply cancelled.")
            return EXIT_ERROR
    try:
        result = walk_with_console(plan, graph, state_dir=state_dir, state=state, lock=lock,
                                   spec_dir=Path(args.file).parent, variables=dict(loaded.resolved.config.variables),
                                   registry=registry, seen=seen)
    finally:
        registry.close()
    if args.json:
        from specdsl.cli.apply_json import render_apply_json

        sys.stdout.write(render_apply_json(result, plan, state_dir))
    else:
        from specdsl.cli.diagnose_commands import short_lines

        print_result(result, plan, why=short_lines(loaded.resolved.config, graph, state_dir, args.file))
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


HURRY_EXIT_S = 20.0


class _Signals:
    """Turns signals into the walk's stop event, then into a hurry. Takes
    no lock in the handler (see the module docstring)."""

    def __init__(self, stop: threading.Event) -> None:
        self.stop = stop
        self.count = 0
        self.done = threading.Event()

    def handle(self, signum, _frame=None) -> None:
        self.count += 1
        name = signal.Signals(signum).name
        if self.count == 1:
            self.stop.set()
            _say(f"{name} received: finishing the running step, stopping servers, writing state "
                 "(send it again to stop at once)")
        elif self.count == 2:
            _say(f"{name} again: stopping at once (killing every server's process group)")
            threading.Thread(target=self._hurry, name="hurry", daemon=True).start()
        else:
            _say(f"{name}: already stopping at once")

    def _hurry(self) -> None:
        from specdsl.servers import lifecycle

        for line in lifecycle.hurry():
            _say(f"could not stop a server: {line}")
        if not self.done.wait(HURRY_EXIT_S):
            for line in lifecycle.hurry():
                _say(f"could not stop a server: {line}")
            _say(f"apply did not end {HURRY_EXIT_S:g}s after the second signal: exiting now "
                 "(state.toml is as last written; re-apply resumes)")
            os._exit(130)


def _say(message: str) -> None:
    try:
        os.write(2, f"\n{message}\n".encode())
    except OSError:  # the terminal is gone (SIGHUP)
        pass


class _SafeHooks:
    """Progress that never takes the walk down: a console gone with its
    terminal (SIGHUP) makes writes fail; the walk goes on without them."""

    def __init__(self, hooks) -> None:
        self.hooks = hooks

    def __getattr__(self, name):
        method = getattr(self.hooks, name)

        def call(*args, **kw):
            try:
                return method(*args, **kw)
            except (OSError, ValueError):  # ValueError: a closed stream
                return None

        return call


def walk_with_console(plan, graph, *, registry=None, seen=None, **kw):
    """`apply_plan` with progress on the console and Ctrl-C, SIGTERM and
    SIGHUP turned into the walk's stop event (servers stopped, state
    written); a second signal kills the servers at once. Recorded servers
    that the walk will not reuse (`seen`, else surveyed here) are stopped
    first."""
    from specdsl.apply import apply_plan
    from specdsl.apply.orphans import stop_stale, survey
    from specdsl.apply.outcome import ApplyResult
    from specdsl.apply.state_writer import StateWriter
    from specdsl.hosts import HostRegistry
    from specdsl.servers import lifecycle

    stop = threading.Event()
    hooks = ConsoleHooks()
    signals = _Signals(stop)
    lifecycle.reset_hurry()
    own_registry = registry is None
    registry = registry or HostRegistry()
    previous = _on_signals(signals.handle)
    try:
        if seen is None:
            seen = survey(kw.get("state"), registry, graph_hosts(graph), launch_identities(graph))
        problems: list[str] = []
        if any(s.why for s in seen):
            writer = StateWriter(Path(kw["state_dir"]).resolve(), kw.get("state"), kw.get("lock"))
            problems = stop_stale(writer, seen)
            kw["state"] = writer.state
            if writer.failure is not None:
                return ApplyResult(state_failure=writer.report(), warnings=problems)
        result = apply_plan(plan, graph, hooks=_SafeHooks(hooks), stop=stop, registry=registry, **kw)
        for line in problems:
            result.warn(line)
        return result
    finally:
        signals.done.set()
        _restore_signals(previous)
        _SafeHooks(hooks).close()
        if own_registry:
            registry.close()


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


SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _on_signals(handler):
    if threading.current_thread() is not threading.main_thread():
        return None
    previous = {}
    for sig in SIGNALS:
        previous[sig] = signal.signal(sig, handler)
    return previous


def _restore_signals(previous) -> None:
    for sig, old in (previous or {}).items():
        signal.signal(sig, old)
