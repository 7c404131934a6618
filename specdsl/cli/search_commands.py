"""`specdsl search EXPERIMENT FILE [--yes] [--json]`: the highest concurrency or rate
at which every assertion of a search experiment passes (docs/language.md,
"Searching for the highest load that meets an SLO").

Each probe is an experiment `NAME[concurrency=8]`, the search experiment
with its workload at that value, shown as a plan and run with the normal
apply (as bisect runs its experiments): recorded like any other (`state
list` shows it) and reused when its identity matches, so a search run
again, or one whose range grew, reads what is recorded. The probe sequence
is specdsl.model.search: geometric from `from`, then a bisection. An
assertion over the answer (`search.concurrency >= 16`) is decided once the
answer is known; a FAIL exits 3, as apply's failed check does. `--json`
prints one document (the probes, the answer, those verdicts) on stdout and
everything else (each probe's plan and apply) on stderr.
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

import attrs

from specdsl.cli.common import confirm, error, load_spec, state_error
from specdsl.exits import Exit
from specdsl.cli.plan_commands import add_common
from specdsl.state import StateError, load_state, locked, state_dir_for

# 0: the answer, every probe it rests on decided (and every assertion over it passed); 3: an
# assertion over the answer failed; 4: a probe undecided (inconclusive, an error, a failed run),
# the answer not known


def add_parsers(sub) -> None:
    p = sub.add_parser("search", help="find the highest concurrency or rate at which an experiment's assertions pass")
    p.add_argument("experiment", metavar="EXPERIMENT", help="an experiment with `search = { ... }`")
    p.add_argument("file", metavar="FILE", help="the spec")
    p.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    p.add_argument("--json", action="store_true",
                   help="print the probes, the answer and its verdicts as one JSON document (the rest on stderr)")
    add_common(p, target=False)
    p.set_defaults(handler=cmd_search)


def probe_of(exp, value: float):
    """The experiment that probes `value`: `exp` with its workload there."""
    over = exp.search.over
    x = int(value) if over == "concurrency" else value
    from specdsl.model.search import slo_asserts

    return attrs.evolve(exp, name=f"{exp.name}[{over}={x:g}]", workload=attrs.evolve(exp.workload, **{over: x}),
                        matrix=((over, x),), search=None, group=exp.name, asserts=slo_asserts(exp))


def cmd_search(args) -> int:
    if not getattr(args, "json", False):
        return _search(args)
    out = sys.stdout
    with contextlib.redirect_stdout(sys.stderr):
        code, doc = _search(args, want_doc=True)
    if doc is not None:
        out.write(json.dumps(doc, indent=1, sort_keys=True) + "\n")
        out.flush()
    return code


def _search(args, want_doc: bool = False):
    from specdsl.model.search import Probes, describe, grid
    from specdsl.operations import Session

    def done(code, doc=None):
        return (code, doc) if want_doc else code

    loaded = load_spec(args)
    if loaded is None:
        return done(Exit.ERROR)
    cfg = loaded.resolved.config
    exp = next((e for e in cfg.searches if e.name == args.experiment), None)
    if exp is None:
        names = ", ".join(e.name for e in cfg.searches) or "none"
        plain = cfg.experiment(args.experiment) is not None
        error(f"{args.experiment!r} is " + ("an experiment without `search = { ... }`" if plain else "not an experiment")
              + f" of {args.file} (search experiments: {names})")
        return done(Exit.ERROR)
    print(describe(exp))
    if not confirm(args, "search runs servers", f"Probe {exp.name} (each probe launches its servers)?", "Search cancelled."):
        return done(Exit.ERROR)
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
        return done(state_error(exc))
    code, doc = _report(exp, probes, rows, undecided, dict(cfg.variables))
    return done(code, doc)


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


def answer_verdicts(exp, best: float | None, first_fail: float | None, variables: dict) -> list:
    """The verdicts of the assertions over the answer (`search.concurrency >=
    16`): exact, read from the answer, which rests on the probes' own
    verdicts. No value that meets: each FAILs (there is no highest), saying
    so; every value met: the answer is `to`, a lower bound, said too."""
    from specdsl.apply import checks
    from specdsl.model.search import answer_asserts
    from specdsl.verdict.decision import Status
    from specdsl.verdict.record import Verdict

    over = exp.search.over
    out = []
    for a in answer_asserts(exp):
        if best is None:
            out.append(Verdict(a.name, Status.FAIL, f"no {over} from {exp.search.low:g} meets the SLO ({first_fail:g} does not)"))
            continue
        env = {f"var.{k}": v for k, v in variables.items()} | {f"search.{over}": int(best) if over == "concurrency" else best}
        v = checks.check(a.name, a.expr, None, None, env)
        if first_fail is None:
            v = attrs.evolve(v, detail=f"{v.detail}; every {over} up to `to` ({exp.search.high:g}) meets: at least that")
        out.append(v)
    return out


def _report(exp, probes, rows, undecided, variables: dict) -> tuple[int, dict]:
    from specdsl.report.frontier import table

    over = exp.search.over
    s = exp.search
    doc = {"experiment": exp.name, "over": over, "from": s.low, "to": s.high, "step": s.step,
           "probes": [{"experiment": r.name, over: r.value, "meets": r.meets, "metrics": r.metrics} for r in rows]}
    print(f"\nSearch of {exp.name}: {len(rows)} probes")
    for line in table(over, rows):
        print(f"  {line}")
    if undecided is not None:
        name, why = undecided
        print(f"UNDECIDED at {name}: {why}")
        print("  (more runs can decide it: raise the workload's `runs` and search again; recorded probes are reused)")
        return Exit.UNDECIDED, doc | {"status": "undecided", "undecided": {"experiment": name, "why": why},
                                      "highest_meeting": None, "first_not_meeting": None, "asserts": []}
    best, first_fail = probes.answer()
    if best is None:
        print(f"No {over} from {exp.search.low:g} meets the SLO: {first_fail:g} does not.")
    elif first_fail is None:
        print(f"Every {over} up to {exp.search.high:g} meets the SLO: the highest searched is {best:g}"
              " (raise `to` to look further).")
    else:
        print(f"Highest {over} that meets the SLO: {best:g} (the first that does not: {first_fail:g}).")
    verdicts = answer_verdicts(exp, best, first_fail, variables)
    for v in verdicts:
        print(f"  {v.name}  {v.status.upper()}  {v.detail}")
    failed = any(v.status != "pass" for v in verdicts)
    return (Exit.CHECK_FAILED if failed else Exit.OK), doc | {
        "status": "answered", "highest_meeting": best, "first_not_meeting": first_fail,
        "asserts": [{"name": v.name, "status": v.status, "detail": v.detail} for v in verdicts]}
