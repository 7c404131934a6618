"""`specdsl search EXPERIMENT FILE [--yes]`: the highest concurrency or rate
at which every assertion of a search experiment passes (docs/language.md,
"Searching for the highest load that meets an SLO").

Each probe is an experiment `NAME[concurrency=8]`, the search experiment
with its workload at that value, shown as a plan and run with the normal
apply (as bisect runs its experiments): recorded like any other (`state
list` shows it) and reused when its identity matches, so a search run
again, or one whose range grew, reads what is recorded. The probe sequence
is specdsl.model.search: geometric from `from`, then a bisection.
"""

from __future__ import annotations

import sys
from pathlib import Path

import attrs

from specdsl.cli.common import confirm, error, load_spec, state_error
from specdsl.exits import Exit
from specdsl.cli.plan_commands import add_common
from specdsl.state import StateError, load_state, locked, state_dir_for

# 0: the answer, every probe it rests on decided; 4: a probe undecided (inconclusive,
# an error, a failed run), the answer not known


def add_parsers(sub) -> None:
    p = sub.add_parser("search", help="find the highest concurrency or rate at which an experiment's assertions pass")
    p.add_argument("experiment", metavar="EXPERIMENT", help="an experiment with `search = { ... }`")
    p.add_argument("file", metavar="FILE", help="the spec")
    p.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    add_common(p, target=False)
    p.set_defaults(handler=cmd_search)


def probe_of(exp, value: float):
    """The experiment that probes `value`: `exp` with its workload there."""
    over = exp.search.over
    x = int(value) if over == "concurrency" else value
    return attrs.evolve(exp, name=f"{exp.name}[{over}={x:g}]", workload=attrs.evolve(exp.workload, **{over: x}),
                        matrix=((over, x),), search=None, group=exp.name)


def cmd_search(args) -> int:
    from specdsl.model.search import Probes, describe, grid
    from specdsl.operations import Session

    loaded = load_spec(args)
    if loaded is None:
        return Exit.ERROR
    cfg = loaded.resolved.config
    exp = next((e for e in cfg.searches if e.name == args.experiment), None)
    if exp is None:
        names = ", ".join(e.name for e in cfg.searches) or "none"
        plain = cfg.experiment(args.experiment) is not None
        error(f"{args.experiment!r} is " + ("an experiment without `search = { ... }`" if plain else "not an experiment")
              + f" of {args.file} (search experiments: {names})")
        return Exit.ERROR
    print(describe(exp))
    if not confirm(args, "search runs servers", f"Probe {exp.name} (each probe launches its servers)?", "Search cancelled."):
        return Exit.ERROR
    state_dir = state_dir_for(Path(args.file), Path(args.state) if args.state else None)
    probes = Probes(grid(exp.search.low, exp.search.high, exp.search.step))
    rows, undecided = [], None
    try:
        with locked(state_dir, "search") as lock, Session() as session:
            run = _runner(args, loaded, state_dir, lock, session)
            while (index := probes.next()) is not None:
                value = probes.values[index]
                probe = probe_of(exp, value)
                print(f"\nprobe {len(probes.order) + 1}: {probe.name}")
                met, why, metrics = run(attrs.evolve(cfg, experiments=cfg.experiments + (probe,)), probe.name)
                from specdsl.report.frontier import Row

                rows.append(Row(value, metrics, met, probe.name))
                if met is None:
                    undecided = (probe.name, why)
                    print(f"  {probe.name}: undecided: {why}")
                    break
                print(f"  {probe.name}: {'meets the SLO' if met else 'does not meet the SLO'}")
                probes.record(index, met)
    except StateError as exc:
        return state_error(exc)
    return _report(exp, probes, rows, undecided)


def _runner(args, loaded, state_dir: Path, lock, session):
    """Each probe: planned against what is recorded, shown, walked on the console."""
    from specdsl.cli.console_walk import walk_with_console
    from specdsl.operations import plan_config
    from specdsl.plan.model import Action
    from specdsl.plan.render import render_text

    def run(trial_cfg, name: str):
        state = load_state(state_dir)
        planned = plan_config(trial_cfg, args.file, state, digest=loaded.digest, variables=dict(trial_cfg.variables),
                              targets=(name,))
        graph, plan = planned.graph, planned.plan
        bench = plan.change(f"benchmark.{name}")
        reused = bench is not None and bench.action is not Action.RUN
        print(f"  {'results recorded, reused' if reused else 'running'}")
        sys.stdout.write(render_text(plan))
        sys.stdout.flush()
        result = walk_with_console(plan, graph, spec=args.file, state_dir=state_dir, state=state, lock=lock,
                                   variables=dict(trial_cfg.variables), registry=session.registry)
        if result.interrupted:
            raise KeyboardInterrupt
        failure = next((f"{o.addr}: {o.detail.splitlines()[0] if o.detail else 'failed'}"
                        for o in result.outcomes if o.status.name == "FAILED"), "")
        verdicts = [v for exp, v in result.verdicts if exp == name]
        for v in verdicts:
            print(f"  {name}: {v.name}  {v.status.upper()}  {v.detail}")
        after = load_state(state_dir)
        step = graph.steps.get(f"benchmark.{name}")
        record = after.result(step.identity) if (after is not None and step is not None) else None
        metrics = dict(record.metrics) if record is not None else {}
        if failure:
            return None, failure, metrics
        statuses = [v.status for v in verdicts]
        if statuses and all(s == "pass" for s in statuses):
            return True, "", metrics
        if "fail" in statuses:
            return False, "", metrics
        why = "; ".join(f"{v.name} {v.status.upper()} {v.detail}" for v in verdicts if v.status != "pass")
        return None, why or "no verdict", metrics

    return run


def _report(exp, probes, rows, undecided) -> int:
    from specdsl.report.frontier import table

    over = exp.search.over
    print(f"\nSearch of {exp.name}: {len(rows)} probes")
    for line in table(over, rows):
        print(f"  {line}")
    if undecided is not None:
        name, why = undecided
        print(f"UNDECIDED at {name}: {why}")
        print("  (more runs can decide it: raise the workload's `runs` and search again; recorded probes are reused)")
        return Exit.UNDECIDED
    best, first_fail = probes.answer()
    if best is None:
        print(f"No {over} from {exp.search.low:g} meets the SLO: {first_fail:g} does not.")
    elif first_fail is None:
        print(f"Every {over} up to {exp.search.high:g} meets the SLO: the highest searched is {best:g}"
              " (raise `to` to look further).")
    else:
        print(f"Highest {over} that meets the SLO: {best:g} (the first that does not: {first_fail:g}).")
    return Exit.OK
