"""`specdsl calibrate FILE EXPERIMENT [--pairs N]`: measure the noise.

The experiment is measured against itself, arm against arm (A/A pairs,
interleaved as a real comparison is), by an experiment built in code and
applied with `apply_plan`. The spread of each metric's per-pair log ratio
is the noise a comparison of this experiment meets; it is recorded in state
(a run of step `calibrate.EXPERIMENT`, metrics `noise.METRIC`) and `specdsl
plan` reads it to print each assertion's minimum detectable effect.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import attrs

from specdsl.cli.common import EXIT_ERROR, error, load_spec
from specdsl.cli.common import state_error
from specdsl.cli.plan_commands import add_common
from specdsl.model import config
from specdsl.state import StateError, load_state, locked, new_run_id, state_dir_for, utc_now

DEFAULT_PAIRS = 6
EFFECTS = (0.02, 0.05, 0.10)


def add_parsers(sub) -> None:
    p = sub.add_parser("calibrate", help="measure an experiment against itself (A/A pairs) and record its noise")
    # EXPERIMENT FILE, as diagnose, bisect, history and report take a name then the spec;
    # the old order (FILE EXPERIMENT) still works, with a note (cmd_calibrate)
    p.add_argument("experiment", metavar="EXPERIMENT", help="the experiment (cell) to measure")
    p.add_argument("file", metavar="FILE", help="the spec")
    p.add_argument("--pairs", type=int, default=DEFAULT_PAIRS, help=f"A/A pairs to measure (default {DEFAULT_PAIRS}, at least 2)")
    p.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    add_common(p, target=False)
    p.set_defaults(handler=cmd_calibrate)


def aa_config(cfg: config.Config, exp: config.Experiment, pairs: int) -> tuple[config.Config, str]:
    """A config whose one comparison measures `exp` against a copy of itself,
    with at least 2 runs on every launch (the run noise is the spread inside
    a launch, the launch noise what is left between launches)."""
    workload = attrs.evolve(exp.workload, runs=pairs, max_runs=pairs, block=max(2, exp.workload.block or 2))
    twin = attrs.evolve(exp, name=f"{exp.name}~aa", asserts=(), promote=None, baseline=None, workload=workload)
    cand = attrs.evolve(exp, name=f"{exp.name}~calibrate", asserts=(), promote=None, workload=workload,
                        baseline=config.BaselineRef("experiment", twin.name))
    return attrs.evolve(cfg, experiments=(twin, cand)), cand.name


def _old_order(first: str, second: str) -> bool:
    """Whether `calibrate FIRST SECOND` was written spec first: FIRST is a
    file (or names a .spec) and SECOND is not a file."""
    from pathlib import Path

    first_is_spec = Path(first).is_file() or first.endswith(".spec")
    return first_is_spec and not Path(second).is_file()


def cmd_calibrate(args) -> int:
    from specdsl.apply.judge import blocks_of
    from specdsl.apply.results import document_of
    from specdsl.cli.console_walk import walk_with_console
    from specdsl.operations import Session, plan_config
    from specdsl.verdict import mde_ratio, noise_of, pairs_needed

    if args.pairs < 2:
        error("--pairs: at least 2 (an interval needs two pairs)")
        return EXIT_ERROR
    if _old_order(args.experiment, args.file):
        args.experiment, args.file = args.file, args.experiment
        print(f"specdsl: warning: `specdsl calibrate FILE EXPERIMENT` is the old order; "
              f"write `specdsl calibrate {args.experiment} {args.file}` (every command takes the name, then the spec)",
              file=sys.stderr)
    loaded = load_spec(args)
    if loaded is None:
        return EXIT_ERROR
    cfg = loaded.resolved.config
    exp = cfg.experiment(args.experiment)
    if exp is None:
        from specdsl.diag import did_you_mean

        names = [e.name for e in cfg.experiments]
        error(f"no experiment {args.experiment!r} in {args.file}; {did_you_mean(args.experiment, names) or 'experiments: ' + ', '.join(names)}")
        return EXIT_ERROR
    aa, cand = aa_config(cfg, exp, args.pairs)
    state_dir = state_dir_for(Path(args.file), Path(args.state) if args.state else None)
    try:
        with locked(state_dir, "calibrate") as lock, Session() as session:
            state = load_state(state_dir)
            planned = plan_config(aa, args.file, state, digest=loaded.digest, rerun=True, targets=(cand,))
            graph, plan = planned.graph, planned.plan
            print(f"Calibrating {exp.name}: {args.pairs} A/A pairs (the experiment against itself, two fresh launches a pair).", file=sys.stderr)
            if not args.yes and not sys.stdin.isatty():
                error("calibrate runs servers: confirm with --yes (stdin is not a terminal)")
                return EXIT_ERROR
            result = walk_with_console(plan, graph, spec=args.file, state_dir=state_dir, state=state, lock=lock,
                                       variables=dict(cfg.variables), registry=session.registry)
            if result.exit_code() != 0:
                error(f"the A/A measurement did not complete (exit {result.exit_code()}); nothing recorded as noise")
                return result.exit_code()
            state = load_state(state_dir)
            run = state.result(graph.steps[f"benchmark.{cand}"].identity)
            doc = document_of(run, state_dir)
            base, _, pairs = blocks_of(doc, {})
            names = sorted({k for r in doc["runs"] for k, v in r.get("metrics", {}).items() if isinstance(v, (int, float))})
            noise = {}
            for name in names:
                values = [(_mean(a, name), _mean(b, name)) for a, b in pairs]
                if all(x > 0 and y > 0 for x, y in values):
                    noise[name] = noise_of(values)
            parts = components(doc, noise)
            costs = launch_and_run_costs(doc)
            from specdsl.state import RunRecord

            record = RunRecord(id=new_run_id(), step=f"calibrate.{exp.name}", identity=graph.steps[f"benchmark.{cand}"].identity,
                               experiment=exp.name, status="completed", started=run.started, finished=utc_now(),
                               folder=run.folder, runs=len(pairs),
                               metrics={f"noise.{k}": v for k, v in noise.items()} | parts | costs
                               | suggested_block(parts, costs, exp),
                               reason=f"A/A noise of {exp.name} over {len(pairs)} pairs")
            from specdsl.state import write_state

            write_state(state_dir, state.with_run(record), lock=lock)
    except StateError as exc:
        return state_error(exc)
    print(f"Noise of {exp.name} ({len(pairs)} A/A pairs; sd of the per-pair log ratio):")
    head = "  metric                          sd      " + "  ".join(f"pairs for {e:.0%}" for e in EFFECTS)
    print(head + f"  MDE at {exp.workload.runs} pairs")
    for name, sd in sorted(noise.items()):
        needs = "  ".join(f"{_fmt_pairs(pairs_needed(sd, 1 + e)):>13}" for e in EFFECTS)
        mde = mde_ratio(sd, max(2, exp.workload.runs)) if sd > 0 else 1.0
        print(f"  {name:<30} {sd:7.4f}  {needs}  {mde - 1:+.2%}")
    print("\nLaunch and run noise apart (sd of log values; variance components of the runs of each launch):")
    for name in sorted(noise):
        if f"noise_run.{name}" in parts:
            print(f"  {name:<30} run {parts[f'noise_run.{name}']:.4f}  launch {parts[f'noise_launch.{name}']:.4f}")
    if costs:
        print(f"Costs: a launch {costs.get('cost.launch_s', math.nan):.1f} s, a run {costs.get('cost.run_s', math.nan):.2f} s")
    block = suggested_block(parts, costs, exp)
    if block:
        print(f"Runs per launch that buy the most precision for the time: {int(block['block.suggested'])} "
              f"(used by pairs whose workload sets no `block`)")
    print(f"\nRecorded in {state_dir / 'state.toml'} as calibrate.{exp.name}; `specdsl plan` and `apply` use it.")
    return 0


def components(doc: dict, noise: dict[str, float]) -> dict[str, float]:
    """`noise_run.METRIC` and `noise_launch.METRIC`: the sd of a run's log
    value inside one launch and of a launch's own level (one-way
    random-effects ANOVA over the launches of both arms, each arm's mean
    removed: verdict.variance_components)."""
    from specdsl.verdict import variance_components

    runs = {r["index"]: r.get("metrics", {}) for r in doc.get("runs", ())}
    blocks = [b for p in doc.get("pairs", ()) for b in p["blocks"]]
    out: dict[str, float] = {}
    for name in noise:
        values = [[runs.get(i, {}).get(name) for i in b["runs"]] for b in blocks]
        if not all(v and all(isinstance(x, (int, float)) and x > 0 for x in v) for v in values):
            continue  # a launch without this metric, or a value no log takes
        by_arm: dict[str, list[list[float]]] = {}
        for b, v in zip(blocks, values):
            by_arm.setdefault(b["arm"], []).append([math.log(x) for x in v])
        groups = []
        for arm_groups in by_arm.values():  # an arm's own mean out: arms may differ by a constant
            mean = sum(sum(g) for g in arm_groups) / sum(len(g) for g in arm_groups)
            groups += [[x - mean for x in g] for g in arm_groups]
        try:
            parts = variance_components(groups)
        except ValueError:
            continue
        out[f"noise_run.{name}"] = math.sqrt(parts.run_var)
        out[f"noise_launch.{name}"] = math.sqrt(parts.launch_var)
    return out


def launch_and_run_costs(doc: dict) -> dict[str, float]:
    """`cost.launch_s` (median seconds from a launch's start to ready) and
    `cost.run_s` (median seconds of a run, as the walk timed it: requests,
    counters and records), from the A/A result."""
    import statistics

    launches = [x["launch_s"] for x in doc.get("launches", ()) if isinstance(x.get("launch_s"), (int, float))]
    runs = [t for x in doc.get("launches", ()) for t in x.get("run_s", ()) if isinstance(t, (int, float))]
    out = {}
    if launches:
        out["cost.launch_s"] = statistics.median(launches)
    if runs:
        out["cost.run_s"] = statistics.median(runs)
    return out


def suggested_block(parts: dict[str, float], costs: dict[str, float], exp: config.Experiment) -> dict[str, float]:
    """`block.suggested`: the runs per launch that give the most precise
    comparison for the time (verdict.runs_per_launch), for the metric the
    experiment's first ratio assertion reads (else output_throughput)."""
    from specdsl.model.assert_shape import noise_key, shape_of
    from specdsl.verdict import runs_per_launch

    metric = "output_throughput"
    for a in exp.asserts:
        shape = shape_of(a.expr)
        if shape.kind == "ratio":
            metric = noise_key(shape.candidate)
            break
    run, launch = parts.get(f"noise_run.{metric}"), parts.get(f"noise_launch.{metric}")
    if run is None or launch is None or "cost.launch_s" not in costs or "cost.run_s" not in costs:
        return {}
    try:
        return {"block.suggested": float(runs_per_launch(costs["cost.launch_s"], costs["cost.run_s"], run ** 2, launch ** 2))}
    except ValueError:
        return {}


def _mean(results, name: str) -> float:
    xs = [r[name] for r in results.runs if name in r]
    return sum(xs) / len(xs) if xs else math.nan


def _fmt_pairs(n) -> str:
    return str(n) if n is not None else "> 1000"
