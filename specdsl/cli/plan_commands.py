"""`specdsl plan`, `show`, `graph`, `state list|show`, `force-unlock`."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

from specdsl.cli.common import error, load_spec, say_problems, state_error
from specdsl.cli.lang_commands import add_var_args
from specdsl.cli.views import coloured_plan
from specdsl.exits import Exit
from specdsl.names import natural_key
from specdsl.operations import Session, plan_spec
from specdsl.operations.plan import ask_login_nodes, login_node_copies, slurm_problems, stale_servers
from specdsl.plan.files import render_copies
from specdsl.plan.planfile import PlanFileError, read_plan, write_plan
from specdsl.plan.render import render_json, render_text
from specdsl.plan.slurm import render_jobs
from specdsl.state import LockError, StateError, load_state, state_dir_for
from specdsl.state import commands as state_commands


def add_parsers(sub) -> None:
    p = sub.add_parser("plan", help="show what apply would do, against recorded state")
    p.add_argument("file", metavar="FILE", help="the spec to plan")
    p.add_argument("-o", "--out", metavar="PLANFILE", help="save the plan (TOML) for `specdsl apply PLANFILE`")
    p.add_argument("--json", action="store_true", help="machine-readable plan on stdout (schema: docs/plan.md)")
    p.add_argument("--detailed-exitcode", action="store_true", help="exit 0 no changes, 2 changes, 1 error")
    p.add_argument("--no-refresh", action="store_true", help="plan from recorded state alone; contact no host")
    add_common(p)
    p.set_defaults(handler=cmd_plan)

    p = sub.add_parser("show", help="print a saved plan")
    p.add_argument("planfile", metavar="PLANFILE", help="a plan saved with `specdsl plan FILE -o PLANFILE`")
    p.add_argument("--json", action="store_true", help="print the plan as JSON (schema: docs/plan.md)")
    p.set_defaults(handler=cmd_show)

    p = sub.add_parser("graph", help="print the step graph as DOT")
    p.add_argument("file", metavar="FILE", help="the spec whose steps to draw")
    p.add_argument("--no-refresh", action="store_true", help="label the steps from recorded state alone; contact no host")
    add_common(p, target=False)
    p.set_defaults(handler=cmd_graph)

    p = sub.add_parser("state", help="inspect recorded state")
    ssub = p.add_subparsers(dest="state_command", metavar="SUBCOMMAND", parser_class=type(p))
    ssub.required = True
    q = ssub.add_parser("list", help="one address per line")
    _add_state_location(q)
    q.add_argument("--servers", action="store_true", help="the recorded servers, and whether each runs and answers now")
    q.add_argument("--json", action="store_true", help="the addresses as JSON: {\"resources\": [{\"addr\", \"kind\"}]}")
    q.set_defaults(handler=cmd_state_list)
    q = ssub.add_parser("show", help="one resource")
    q.add_argument("addr", metavar="ADDR", help="an address that `specdsl state list` prints")
    _add_state_location(q)
    q.add_argument("--json", action="store_true", help="the resource as JSON (a step's content as a nested object)")
    q.set_defaults(handler=cmd_state_show)

    p = sub.add_parser("force-unlock", help="remove a state lock left by a process on another host")
    p.add_argument("lock_id", metavar="ID", help="the lock id that the lock error names")
    _add_state_location(p)
    p.set_defaults(handler=cmd_force_unlock)


def _add_state_location(p) -> None:
    """FILE and --state of the state commands: the state is found as plan
    and apply find it (`specdsl.state.commands.locate_state`)."""
    p.add_argument("file", metavar="FILE", nargs="?", help="the spec whose state to read: the .specdsl folder beside it")
    p.add_argument("--state", metavar="DIR", help="state folder (default: .specdsl beside FILE; without FILE, ./.specdsl)")


def add_common(p, target: bool = True) -> None:
    add_var_args(p)
    p.add_argument("--state", metavar="DIR", help="state folder (default: .specdsl beside the spec)")
    if target:
        p.add_argument("--target", action="append", default=[], metavar="NAME", help="only this experiment (and what it needs)")
        p.add_argument("--rerun", action="store_true", help="run benchmarks again even when results are recorded")
        p.add_argument("--more", type=_pairs_count, default=0, metavar="N",
                       help="an undecided paired comparison may add up to N pairs beyond its max_runs (recorded pairs are kept)")
        p.add_argument("--max-launches", type=_launch_count, default=None, metavar="N",
                       help="the apply's budget: its paired comparisons launch at most N servers in all (docs/language.md, budget)")
        p.add_argument("--max-time", type=_duration, default=None, metavar="D",
                       help="the apply's budget: at most D (`90m`, `2h`) of launches and runs of its paired comparisons")


def _pairs_count(text: str) -> int:
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of pairs") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value}: a number of pairs is 0 or more")
    return value


def _launch_count(text: str) -> int:
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of launches") from None
    if value < 4:
        raise argparse.ArgumentTypeError(f"{value}: a pair is two launches and an interval needs two pairs; give 4 or more")
    return value


def _duration(text: str) -> float:
    """`90s`, `20m`, `1.5h`, `500ms` -> seconds (the spec's duration units)."""
    import argparse
    import re

    from specdsl.model.ast import DURATION_UNITS

    m = re.fullmatch(rf"\s*([0-9]+(?:\.[0-9]+)?)\s*({'|'.join(sorted(DURATION_UNITS, key=len, reverse=True))})\s*", text)
    if m is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration: give a number and its unit, such as 90m or 2h "
                                         "(units: ms, s, m, h)")
    seconds = float(m.group(1)) * DURATION_UNITS[m.group(2)]
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: a budget of time is positive")
    return seconds


def read_state(args):
    """(state dir, State or None); raises StateError."""
    state_dir = state_dir_for(Path(args.file), Path(args.state) if args.state else None)
    return state_dir, load_state(state_dir)


def planned_for(args, loaded, state, state_dir: Path, *, no_refresh: bool, session=None):
    """The plan operation (`operations.plan_spec`) for the command's
    arguments: its targets, --rerun and --more."""
    return plan_spec(loaded.resolved.config, args.file, state, state_dir, digest=loaded.digest,
                     variables=loaded.variables, targets=getattr(args, "target", []),
                     rerun=getattr(args, "rerun", False), more=getattr(args, "more", 0), refresh=not no_refresh,
                     session=session, max_launches=getattr(args, "max_launches", None),
                     max_time=getattr(args, "max_time", None))


def _search_json(exp) -> dict:
    from specdsl.model.search import answer_asserts, grid, slo_asserts, worst_case

    s = exp.search
    values = grid(s.low, s.high, s.step)
    return {"experiment": exp.name, "over": s.over, "from": s.low, "to": s.high, "step": s.step, "values": len(values),
            "worst_case_probes": worst_case(values), "asserts": [a.name for a in slo_asserts(exp)],
            "answer_asserts": [a.name for a in answer_asserts(exp)]}


def _render_searches(searches, file: str) -> str:
    """The spec's search experiments: apply leaves them to `specdsl search`, which probes them."""
    if not searches:
        return ""
    from specdsl.model.search import describe

    lines = ["", "Searches (not applied by apply; each probe is an experiment of its own):"]
    for exp in searches:
        lines.append(f"  {describe(exp)}")
        lines.append(f"    run: specdsl search {exp.name} {file}")
    return "\n".join(lines) + "\n"


def _spec_plan(args, session):
    """(graph, plan, state) for args.file against its state, or an exit
    code when the spec, the state or the targets are wrong (reported)."""
    loaded = load_spec(args)
    if loaded is None:
        return Exit.ERROR
    args.searches = loaded.resolved.config.searches
    args.resolved_config = loaded.resolved.config
    try:
        state_dir, state = read_state(args)
    except StateError as exc:
        return state_error(exc)
    planned = planned_for(args, loaded, state, state_dir, no_refresh=args.no_refresh, session=session)
    if not planned.ok:
        say_problems(planned.problems)
        return Exit.ERROR
    for e in planned.refresh_errors:  # nothing recorded there: the plan stands, saying so
        print(f"specdsl: warning: cannot refresh: {e['detail']}: nothing is recorded there, so its environments are "
              "planned as new; apply must reach it (or plan offline with --no-refresh)", file=sys.stderr)
    args.refresh_errors = planned.refresh_errors
    return planned.graph, planned.plan, state


def cmd_plan(args) -> int:
    with Session() as session:
        return _plan(args, session)


def _plan(args, session) -> int:
    made = _spec_plan(args, session)
    if isinstance(made, int):
        return made
    graph, plan, state = made
    copies, problems = login_node_copies(graph, plan, Path(args.file).resolve().parent)
    if problems is not None:
        say_problems(problems)
        return Exit.ERROR
    if not args.no_refresh:  # the clusters asked, as refresh asks the hosts
        problems, unanswered = slurm_problems(graph, plan, session, state)
        if problems is not None:
            say_problems(problems)
            return Exit.ERROR
        known = {e["host"] for e in args.refresh_errors}
        for e in unanswered:  # nothing recorded there: the plan stands, saying so (once a host)
            if e["host"] not in known:
                print(f"specdsl: warning: cannot refresh: {e['detail']}: nothing is recorded there, so its "
                      "environments are planned as new; apply must reach it (or plan offline with --no-refresh)",
                      file=sys.stderr)
        args.refresh_errors = tuple(args.refresh_errors) + tuple(e for e in unanswered if e["host"] not in known)
    notes: dict = {}
    if copies and not args.no_refresh:
        copies, notes = ask_login_nodes(graph, plan, copies, session)
    stale = stale_servers(graph, state, refresh=not args.no_refresh, session=session)
    # the plan file first: when it cannot be written, the run is an error
    # and prints no plan that looks saved
    if args.out:
        try:
            write_plan(Path(args.out), plan)
        except PlanFileError as exc:
            error(str(exc))
            return Exit.ERROR
        except OSError as exc:
            error(f"cannot write the plan to {args.out}: {exc.strerror or exc}")
            return Exit.ERROR
    if args.json:
        doc = json.loads(render_json(plan))
        doc["valid"] = True  # the spec is; a host refresh could not reach is a refresh error, not the spec's
        doc["refresh_errors"] = list(getattr(args, "refresh_errors", ()))
        doc["stale_servers"] = [s.as_json() for s in stale]
        if copies:  # only for a plan with a host reached through a login node
            doc["login_node_files"] = [c.as_json() for c in copies]
        doc["searches"] = [_search_json(e) for e in getattr(args, "searches", ())]
        sys.stdout.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(coloured_plan(render_text(plan)) + render_jobs(graph, plan) + render_copies(copies, notes) + _render_stale(stale, _holder(args) if stale else None))
        sys.stdout.write(_render_searches(getattr(args, "searches", ()), args.file))
        if state is not None:  # a sweep along concurrency or rate: its frontier as recorded so far
            from specdsl.cli.apply_view import frontier_lines

            state_dir = state_dir_for(Path(args.file), Path(args.state) if args.state else None)
            for line in frontier_lines(args.resolved_config, state_dir, title="Recorded frontier"):
                print(line)
    if args.out and not args.json:
        print(f"\nSaved the plan to {args.out}. Apply exactly it with: specdsl apply {args.out}")
    if args.detailed_exitcode:
        acts = any(s.action != "keep" for s in stale)
        return Exit.CHANGES if plan.pending or acts else Exit.OK
    return Exit.OK


def _holder(args):
    """The live holder of the state's lock (an apply running now), or None."""
    from specdsl.state.lock import pid_alive, read_lock, this_host

    try:
        info = read_lock(state_dir_for(Path(args.file), Path(args.state) if args.state else None))
    except StateError:
        return None
    return info if info is not None and (info.host != this_host() or pid_alive(info.pid)) else None


def _render_stale(stale, holder=None) -> str:
    if not stale:
        return ""
    lines = ["", "Servers recorded by an earlier apply (killed, or no longer in the spec), which apply sees to before its walk:"]
    if holder is not None:
        lines.append(f"  (the state is locked by `{holder.operation}`, pid {holder.pid} on {holder.host}, since "
                     f"{holder.created}: these may be its servers, running now; an apply started now stops at the lock, exit 6)")
    for s in stale:
        lines += [f"  - {s.line()}", f"      {s.why}" + ("; apply keeps its record and reports it" if s.action == "keep" else "")]
    return "\n".join(lines) + "\n"


def cmd_show(args) -> int:
    try:
        plan = read_plan(Path(args.planfile))
    except PlanFileError as exc:
        error(str(exc))
        return Exit.ERROR
    sys.stdout.write(render_json(plan) if args.json else coloured_plan(render_text(plan)))
    return Exit.OK


def cmd_graph(args) -> int:
    with Session() as session:
        made = _spec_plan(args, session)
    if isinstance(made, int):
        return made
    graph, plan, _ = made
    sys.stdout.write(to_dot(graph, plan))
    return Exit.OK


def to_dot(graph, plan) -> str:
    lines = ["digraph specdsl {", "  rankdir=LR;", "  node [shape=box, fontname=monospace];"]
    for change in plan.changes:
        label = f"{change.action.value} {change.addr}"
        style = ', style=dashed' if change.action.value == "=" else ""
        lines.append(f'  "{change.addr}" [label="{_dot_escape(label)}"{style}];')
    for a, b in sorted(graph.dag.edges(), key=lambda edge: (natural_key(edge[0]), natural_key(edge[1]))):
        kind = "dotted" if a in graph.steps[b].after and a not in graph.steps[b].deps else "solid"
        lines.append(f'  "{a}" -> "{b}"' + (" [style=dotted];" if kind == "dotted" else ";"))
    lines.append("}")
    return "\n".join(lines) + "\n"


def _dot_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _located(args, *words: str, need_state: bool = True) -> Path | int:
    """The state folder the state command `specdsl WORDS...` reads, or the
    exit code when there is none (reported)."""
    usage = shlex.join(["specdsl", *words])
    try:
        return state_commands.locate_state(Path(args.file) if args.file else None, Path(args.state) if args.state else None,
                                           usage, need_state=need_state)
    except StateError as exc:
        return state_error(exc)


def _pointing(args) -> list[str]:
    """The FILE or --state the user gave, to repeat in a suggested command."""
    return [f"--state={args.state}"] if args.state else [args.file] if args.file else []


def cmd_state_list(args) -> int:
    if getattr(args, "servers", False):
        from specdsl.cli.destroy_commands import cmd_state_servers

        return cmd_state_servers(args)
    state_dir = _located(args, "state", "list")
    if isinstance(state_dir, int):
        return state_dir
    return _emit(*state_commands.cmd_state_list(state_dir, as_json=args.json))


def cmd_state_show(args) -> int:
    state_dir = _located(args, "state", "show", args.addr)
    if isinstance(state_dir, int):
        return state_dir
    listing = shlex.join(["specdsl", "state", "list", *_pointing(args)])
    from specdsl.model.printer import canonical_expr_text

    return _emit(*state_commands.cmd_state_show(state_dir, args.addr, listing, canonical_expr_text, as_json=args.json))


def cmd_force_unlock(args) -> int:
    state_dir = _located(args, "force-unlock", args.lock_id, need_state=False)
    if isinstance(state_dir, int):
        return state_dir
    return _emit(*state_commands.cmd_force_unlock(state_dir, args.lock_id))


def _emit(code: int, text: str) -> int:
    if code == 0:
        sys.stdout.write(text)
    else:
        print(text.rstrip("\n"), file=sys.stderr)
    return code


__all__ = ["add_parsers", "LockError"]
