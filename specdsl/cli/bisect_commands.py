"""`specdsl bisect EXPERIMENT FILE [--max-experiments N] [--yes]`: find, by
experiment, the smallest set of differences from its baseline that
reproduces a failed candidate's regression (docs/diagnose.md).

Each intermediate experiment is shown as a plan and run with the normal
apply (`apply_plan`, under the state lock): recorded like any other and
reused when its identity matches, so an interrupted bisect, run again,
resumes from what was recorded.
"""

from __future__ import annotations

import sys
from pathlib import Path

from specdsl.cli.common import confirm, error, load_spec
from specdsl.cli.common import state_error
from specdsl.cli.plan_commands import add_common
from specdsl.exits import Exit
from specdsl.operations import Session
from specdsl.state import StateError, load_state, locked, state_dir_for
from specdsl.verdict.decision import Status


def add_parsers(sub) -> None:
    p = sub.add_parser("bisect", help="find the differences that cause a candidate's regression, by experiment")
    p.add_argument("experiment", metavar="EXPERIMENT", help="a candidate whose check failed")
    p.add_argument("file", metavar="FILE", help="the spec")
    p.add_argument("--max-experiments", type=int, default=None, metavar="N",
                   help="run at most N intermediate experiments (reused results are free)")
    p.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    add_common(p, target=False)
    p.set_defaults(handler=cmd_bisect)


def failed_checks(state, graph, name: str) -> tuple[list[str], list[str]]:
    """(assertions whose latest verdict failed, assertions with a verdict) of experiment `name`."""
    failed, judged = [], []
    for addr in graph.by_experiment.get(name, {}).get("checks", ()):
        step = graph.steps[addr]
        runs = [r for r in state.runs_of(addr) if r.identity == step.identity and r.verdict is not None] if state is not None else []
        if runs:
            judged.append(addr)
            if runs[-1].verdict.status is Status.FAIL:
                failed.append(addr)
    return failed, judged


def cmd_bisect(args) -> int:
    from specdsl.diagnose import DiagnoseError, compare, sides_of
    from specdsl.diagnose.bisect import bisect
    from specdsl.diagnose.ddmin import bound_for_one_cause, experiments_asked
    from specdsl.graph.build import paired_with
    from specdsl.operations import spec_graph

    if args.max_experiments is not None and args.max_experiments < 1:
        error("--max-experiments: at least 1")
        return Exit.ERROR
    loaded = load_spec(args)
    if loaded is None:
        return Exit.ERROR
    cfg = loaded.resolved.config
    graph = spec_graph(cfg, args.file)
    state_dir = state_dir_for(Path(args.file), Path(args.state) if args.state else None)
    try:
        state = load_state(state_dir)
        sides = sides_of(state, cfg, graph, args.experiment, spec=args.file)
    except StateError as exc:
        return state_error(exc)
    except DiagnoseError as exc:
        error(str(exc))
        return Exit.ERROR
    cand = sides.candidate
    base = cfg.experiment(cand.baseline.name) if cand.baseline.kind == "experiment" else sides.baseline
    if base is None:
        error(f"the baseline run of {cand.name!r} is of an experiment no longer in {args.file}: nothing to build from")
        return Exit.ERROR
    failed, judged = failed_checks(state, graph, cand.name)
    if not judged:
        error(f"{cand.name!r} has no verdicts recorded: run `specdsl apply {args.file} --target {cand.name}` first")
        return Exit.ERROR
    if not failed:
        print(f"{cand.name} did not fail ({', '.join(a.split('.')[-1] for a in judged)} recorded without a FAIL): "
              "nothing to bisect; nothing was run.")
        return Exit.OK
    diagnosis = compare(state, sides.baseline_run, sides.candidate_run, state_dir=state_dir, baseline=sides.baseline,
                        candidate=sides.candidate, labels=sides.labels)
    paired = paired_with(cfg, cand) is not None
    diffs = [d for d in diagnosis.bisectable() if not (paired and d.category == "workload")]
    if not diffs:
        print(f"{cand.name} and {base.name} differ in nothing an experiment can change "
              "(see `specdsl diagnose`): nothing to bisect.")
        return Exit.UNDECIDED
    bound = bound_for_one_cause(len(diffs))
    print(f"Bisecting {cand.name} against {base.name}: {len(diffs)} differences "
          f"(one cause needs at most {bound} experiments"
          + (f"; at most {args.max_experiments} will run" if args.max_experiments else "") + "):")
    for d in diffs:
        print(f"  - {d.line()}")
    if not confirm(args, "bisect runs servers", "Run these experiments?", "Bisect cancelled."):
        return Exit.ERROR
    try:
        with locked(state_dir, "bisect") as lock, Session() as session:
            result = bisect(cfg, cand, base, diffs, paired=paired, budget=args.max_experiments,
                            run=_runner(args, loaded, state_dir, lock, session))
    except StateError as exc:
        return state_error(exc)
    return _report(result, diffs, bound, experiments_asked(result.search))


def _runner(args, loaded, state_dir: Path, lock, session):
    """Each intermediate experiment: planned against what is recorded
    (`operations.plan_config`), shown, walked on the console; one host
    registry for all of them (the session's)."""
    from specdsl.cli.console_walk import walk_with_console
    from specdsl.operations import plan_config
    from specdsl.plan.model import Action
    from specdsl.plan.render import render_text

    def run(trial_cfg, name: str, may_run: bool):
        state = load_state(state_dir)
        planned = plan_config(trial_cfg, args.file, state, digest=loaded.digest, variables=dict(trial_cfg.variables),
                              targets=(name,))
        graph, plan = planned.graph, planned.plan
        bench = plan.change(f"benchmark.{name}")
        reused = bench is not None and bench.action is not Action.RUN
        if not reused and not may_run:
            from specdsl.diagnose.ddmin import OutOfBudget

            print(f"\n{name}: not run (--max-experiments reached)")
            raise OutOfBudget
        print(f"\n{name}: " + ("results recorded, reused" if reused else "running"))
        sys.stdout.write(render_text(plan))
        sys.stdout.flush()
        result = walk_with_console(plan, graph, spec=args.file, state_dir=state_dir, state=state, lock=lock,
                                   variables=dict(trial_cfg.variables), registry=session.registry)
        failure = next((f"{o.addr}: {o.detail.splitlines()[0] if o.detail else 'failed'}"
                        for o in result.outcomes if o.status.name == "FAILED"), "")
        verdicts = [v for exp, v in result.verdicts if exp == name]
        for v in verdicts:
            print(f"  {name}: {v.name}  {v.status.upper()}  {v.detail}")
        if result.interrupted:
            raise KeyboardInterrupt
        return reused, verdicts, failure

    return run


def _report(result, diffs, bound: int, asked: int) -> int:
    search = result.search
    print(f"\nBisect of {result.candidate}: {result.experiments_run} experiments run, "
          f"{sum(1 for t in result.trials if t.reused)} reused (one cause needs at most {bound}).")
    by_label = {d.label: d for d in diffs}
    for label, why in result.unapplicable:
        print(f"  cannot be applied alone: {label} ({why})")
    if not search.reproduced:
        print("No set of differences reproduces the regression: the candidate itself did not fail again "
              "(noise, load or drift; see `specdsl diagnose`).")
        return Exit.UNDECIDED
    culprit = [by_label[x] for x in search.culprit]
    if not search.minimal:
        kind = "the smallest set found so far (--max-experiments reached; not proven minimal)"
    elif result.undecided:
        kind = (f"the smallest set the decided experiments allow ({len(result.undecided)} undecided; "
                "minimal only as far as the decided experiments go)")
    else:
        kind = "the cause" if len(culprit) == 1 else f"the {len(culprit)} differences that cause it together"
    print(f"Reproduces the regression: {kind}:")
    for d in culprit:
        print(f"  {d.line()}")
    for t in result.trials:
        if set(t.applied) == set(search.culprit) and t.verdicts:
            for name, status, detail in t.verdicts:
                print(f"  evidence: {t.experiment}: {name}  {status.upper()}  {detail}")
    if result.undecided:
        print("Undecided (inconclusive or an error: counted neither as reproducing nor as not; "
              "had one reproduced, a smaller or another set would have been found):")
        for subset in result.undecided:
            print(f"  {{{', '.join(subset)}}}: {_why_undecided(result, subset)}")
        print("  (more runs can decide them: raise the workload's `runs` and bisect again; each recorded "
              "experiment then runs only the rest and is judged again)")
    if not search.minimal or result.undecided:
        print("INCONCLUSIVE: the answer rests on experiments that were not run or not decided.")
        return Exit.UNDECIDED
    return Exit.OK


def _why_undecided(result, subset) -> str:
    trial = result.trial_of(subset)
    if trial is None:
        return "undecided"
    if trial.failure:
        return f"{trial.experiment}: {trial.failure}"
    verdicts = "; ".join(f"{name} {status.upper()} {detail}".strip() for name, status, detail in trial.verdicts)
    return f"{trial.experiment}: {verdicts or 'no verdict'}"
