"""`specdsl plan`, `show`, `graph`, `state list|show`, `force-unlock`."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

from specdsl.cli.common import EXIT_CHANGES, EXIT_CONFLICT, EXIT_ERROR, EXIT_OK, error, load_spec, state_error
from specdsl.cli.lang_commands import add_var_args
from specdsl.graph.build import build_graph
from specdsl.names import cell_parts, natural_key, natural_sorted, target_matches
from specdsl.plan.diff import make_plan
from specdsl.plan.files import job_files, missing_detail, missing_files, planned_copies, render_copies
from specdsl.plan.model import Refresh
from specdsl.plan.planfile import PlanFileError, read_plan, write_plan
from specdsl.cli.views import coloured_plan
from specdsl.plan.render import render_json, render_text
from specdsl.plan.slurm import render_jobs, slurm_jobs
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
    q.set_defaults(handler=cmd_state_list)
    q = ssub.add_parser("show", help="one resource")
    q.add_argument("addr", metavar="ADDR", help="an address that `specdsl state list` prints")
    _add_state_location(q)
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


def _pairs_count(text: str) -> int:
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of pairs") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value}: a number of pairs is 0 or more")
    return value


def read_state(args):
    """(state dir, State or None); raises StateError."""
    state_dir = state_dir_for(Path(args.file), Path(args.state) if args.state else None)
    return state_dir, load_state(state_dir)


def build_plan(args, loaded, state, *, no_refresh: bool):
    graph = build_graph(loaded.resolved.config, spec_dir=Path(args.file).parent)
    if graph.diags:
        from specdsl.cli.views import print_diags

        print_diags(graph.diags, {})
        return None, None
    experiments = loaded.resolved.config.experiments
    known = {e.name for e in experiments} | {e.group for e in experiments}
    unknown = [t for t in getattr(args, "target", []) if not any(target_matches(t, e.name) for e in experiments)]
    if unknown:
        from specdsl.diag import did_you_mean

        groups = natural_sorted({e.group for e in experiments})
        for target in unknown:
            parts = cell_parts(target)
            cells = [e for e in experiments if parts is not None and e.group == parts[0] and e.matrix]
            if cells and parts[1]:  # a slice no cell matches: say the keys and values there are
                shown = "; ".join(f"{k}: {', '.join(natural_sorted({str(dict(e.matrix)[k]) for e in cells}))}"
                                  for k in dict(cells[0].matrix))
                error(f"--target {target}: no cell of {parts[0]} has those values in {loaded.spec}; its matrix: {shown}")
                continue
            hint = did_you_mean(target, known) or "experiments: " + ", ".join(groups)
            error(f"--target {target}: no experiment of that name in {loaded.spec}; {hint}")
        return None, None
    if no_refresh:
        fresh = Refresh.from_state(state)
    else:  # asks hosts over HTTP: imported only when used (requests is slow to import)
        from specdsl.apply.refresh import Unreachable, refresh

        cfg = loaded.resolved.config
        names = {h.name: h for h in cfg.hosts} | {e.host.name: e.host for e in cfg.experiments}
        wanted = {s.identity: s.payload["host"] for s in graph.steps.values() if s.kind == "provision"}
        try:
            fresh = refresh(state, names=names, wanted=wanted, strict=True)
        except Unreachable as exc:
            for cause in exc.causes:
                error(f"cannot refresh: {cause}")
            print("  = hint: the plan needs to ask each host what still runs there; check the host and your ssh "
                  "config, or plan offline from recorded state with --no-refresh (-refresh=false)", file=sys.stderr)
            return None, None

    def planned(durations=None):
        return make_plan(graph, state, fresh, spec=loaded.spec, spec_digest=loaded.digest, variables=loaded.variables,
                         rerun=getattr(args, "rerun", False), targets=tuple(getattr(args, "target", [])),
                         more=getattr(args, "more", 0), durations=durations)

    plan = planned()
    # the costs' times: the durations recorded for what this plan runs or
    # leaves undecided, read from the state folder (only those run folders),
    # then the same plan with them (planning is pure and takes 0.04 s)
    wanted = {c.addr for c in plan.costs} | {graph.steps[u.check].deps[0] for u in plan.undecided}
    if wanted and state is not None and state.runs:
        from specdsl.plan.durations import recorded_durations

        state_dir = state_dir_for(Path(args.file), Path(args.state) if getattr(args, "state", None) else None)
        plan = planned(recorded_durations(state, state_dir, graph, wanted))
    if not dataset_errors(graph, plan, Path(args.file).parent):
        return None, None
    return graph, plan


def login_node_copies(graph, plan, spec_dir: Path) -> list | None:
    """The files the plan's jobs on login-node hosts (`ssh` with `slurm`)
    will have copied to the login node (`plan.files.planned_copies`), or
    None when one is not on this machine: an error at the block that names
    it (reported), as apply's preflight finds it."""
    jobs = [j for j in slurm_jobs(graph, plan) if getattr(j.host, "ssh", None)]
    if not jobs:
        return []
    files = [f for name in sorted({j.host.name for j in jobs}) for f in job_files(graph, jobs, name, spec_dir)]
    gone = missing_files(files)
    if gone:
        from specdsl.cli.views import print_diags
        from specdsl.diag import Diagnostic

        _print_located(print_diags, [
            Diagnostic.error(f"{f.what[0].upper()}{f.what[1:]}: a file to copy to the login node is missing", f.span,
                             missing_detail(f) + " (nothing was started)") for f in gone])
        return None
    return planned_copies(graph, jobs, spec_dir)


def ask_login_nodes(graph, plan, copies: list) -> tuple[list, dict]:
    """`copies` with what each login node says: "already there" or "will
    copy", asked in the one command apply's stage asks
    (`apply.slurm.files.present`); a login node that cannot be reached leaves its
    copies "copied unless already there", with why (host -> why)."""
    import attrs

    from specdsl.apply.slurm.files import present
    from specdsl.hosts import HostError, HostRegistry
    from specdsl.plan.files import COPY, THERE

    decls = {j.host.name: j.host for j in slurm_jobs(graph, plan)}
    out, notes = [], {}
    registry = HostRegistry()
    try:
        for name in sorted({c.host for c in copies}):
            mine = [c for c in copies if c.host == name]
            # the login shell starts in the home folder: a workdir under ~ is asked relative to it
            root = Path(mine[0].workdir.removeprefix("~/"))
            try:
                there = present(registry.get(decls[name]), sorted({root / c.folder for c in mine}))
            except (HostError, OSError) as exc:
                notes[name] = f"the login node was not reached: {str(exc).strip()[-200:]}"
                out += mine
                continue
            out += [attrs.evolve(c, status=THERE if str(root / c.folder) in there else COPY) for c in mine]
    finally:
        registry.close()
    return out, notes


def _print_located(print_diags, diags) -> None:
    """`diags` with their spec lines."""
    sources = {}
    for d in diags:
        if d.span is not None and d.span.file not in sources:
            try:
                sources[d.span.file] = Path(d.span.file).read_text()
            except OSError:
                pass
    print_diags(diags, sources)


def dataset_errors(graph, plan, spec_dir: Path) -> bool:
    """Each dataset file a benchmark to run cannot use is an error at its
    workload block, before any server starts; True when there is none."""
    from specdsl.bench.datasets import check_dataset
    from specdsl.cli.views import print_diags
    from specdsl.diag import Diagnostic

    diags, seen = [], set()
    for change in plan.changes:
        step = graph.steps[change.addr]
        if change.kind != "benchmark" or change.action.word != "run" or step.payload["experiment"].workload in seen:
            continue
        workload = step.payload["experiment"].workload
        seen.add(workload)
        why = check_dataset(workload, spec_dir)
        if why:
            diags.append(Diagnostic.error(f"Workload `{workload.name}`: its dataset cannot be used", workload.span,
                                          f"{why}; fix the file or `dataset` (nothing was started)"))
    if diags:
        _print_located(print_diags, diags)
    return not diags


def _spec_plan(args):
    """(graph, plan) for args.file against its state, or an exit code when
    the spec, the state or the targets are wrong (already reported)."""
    loaded = load_spec(args)
    if loaded is None:
        return EXIT_ERROR
    try:
        _, state = read_state(args)
    except StateError as exc:
        return state_error(exc)
    graph, plan = build_plan(args, loaded, state, no_refresh=args.no_refresh)
    return EXIT_ERROR if plan is None else (graph, plan, state)


def cmd_plan(args) -> int:
    made = _spec_plan(args)
    if isinstance(made, int):
        return made
    graph, plan, state = made
    copies = login_node_copies(graph, plan, Path(args.file).resolve().parent)
    if copies is None:
        return EXIT_ERROR
    notes: dict = {}
    if copies and not args.no_refresh:
        copies, notes = ask_login_nodes(graph, plan, copies)
    stale = _stale_servers(graph, state, refresh=not args.no_refresh)
    # the plan file first: when it cannot be written, the run is an error
    # and prints no plan that looks saved
    if args.out:
        try:
            write_plan(Path(args.out), plan)
        except PlanFileError as exc:
            error(str(exc))
            return EXIT_ERROR
        except OSError as exc:
            error(f"cannot write the plan to {args.out}: {exc.strerror or exc}")
            return EXIT_ERROR
    if args.json:
        doc = json.loads(render_json(plan))
        doc["stale_servers"] = [s.as_json() for s in stale]
        if copies:  # only for a plan with a host reached through a login node
            doc["login_node_files"] = [c.as_json() for c in copies]
        sys.stdout.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(coloured_plan(render_text(plan)) + render_jobs(graph, plan) + render_copies(copies, notes) + _render_stale(stale, _holder(args) if stale else None))
    if args.out and not args.json:
        print(f"\nSaved the plan to {args.out}. Apply exactly it with: specdsl apply {args.out}")
    if args.detailed_exitcode:
        acts = any(s.action != "keep" for s in stale)
        return EXIT_CHANGES if plan.pending or acts else EXIT_OK
    return EXIT_OK


def _stale_servers(graph, state, *, refresh: bool) -> list:
    """The recorded servers apply will stop or drop before its walk (left by
    an apply that was killed, or no longer in the spec): `orphans.for_plan`."""
    if state is None or not state.servers:
        return []
    from specdsl.apply.orphans import for_plan
    from specdsl.cli.recorded_servers import graph_hosts, launch_identities
    from specdsl.hosts import HostRegistry

    registry = HostRegistry()
    try:
        return for_plan(state, launch_identities(graph), refresh=refresh, registry=registry, decls=graph_hosts(graph))
    finally:
        registry.close()


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
        return EXIT_ERROR
    sys.stdout.write(render_json(plan) if args.json else coloured_plan(render_text(plan)))
    return EXIT_OK


def cmd_graph(args) -> int:
    made = _spec_plan(args)
    if isinstance(made, int):
        return made
    graph, plan, _ = made
    sys.stdout.write(to_dot(graph, plan))
    return EXIT_OK


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
    return _emit(*state_commands.cmd_state_list(state_dir))


def cmd_state_show(args) -> int:
    state_dir = _located(args, "state", "show", args.addr)
    if isinstance(state_dir, int):
        return state_dir
    listing = shlex.join(["specdsl", "state", "list", *_pointing(args)])
    from specdsl.model.printer import canonical_expr_text

    return _emit(*state_commands.cmd_state_show(state_dir, args.addr, listing, canonical_expr_text))


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


__all__ = ["add_parsers", "EXIT_CONFLICT", "LockError"]
