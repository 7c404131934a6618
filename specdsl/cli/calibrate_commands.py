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

from specdsl.cli.common import confirm, error, load_spec
from specdsl.cli.common import state_error
from specdsl.cli.plan_commands import add_common
from specdsl.exits import Exit
from specdsl.state import StateError, load_state, locked, state_dir_for

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


def _old_order(first: str, second: str) -> bool:
    """Whether `calibrate FIRST SECOND` was written spec first: FIRST is a
    file (or names a .spec) and SECOND is not a file."""
    from pathlib import Path

    first_is_spec = Path(first).is_file() or first.endswith(".spec")
    return first_is_spec and not Path(second).is_file()


def cmd_calibrate(args) -> int:
    from specdsl.cli.console_walk import walk_with_console
    from specdsl.operations import Session, calibrate as calibration, plan_config
    from specdsl.verdict import mde_ratio, pairs_needed

    if args.pairs < 2:
        error("--pairs: at least 2 (an interval needs two pairs)")
        return Exit.ERROR
    if _old_order(args.experiment, args.file):
        args.experiment, args.file = args.file, args.experiment
        print(f"specdsl: warning: `specdsl calibrate FILE EXPERIMENT` is the old order; "
              f"write `specdsl calibrate {args.experiment} {args.file}` (every command takes the name, then the spec)",
              file=sys.stderr)
    loaded = load_spec(args)
    if loaded is None:
        return Exit.ERROR
    cfg = loaded.resolved.config
    exp = cfg.experiment(args.experiment)
    if exp is None:
        from specdsl.diag import did_you_mean

        names = [e.name for e in cfg.experiments]
        error(f"no experiment {args.experiment!r} in {args.file}; {did_you_mean(args.experiment, names) or 'experiments: ' + ', '.join(names)}")
        return Exit.ERROR
    from specdsl.operations.calibrate import aa_config

    aa, cand = aa_config(cfg, exp, args.pairs)
    state_dir = state_dir_for(Path(args.file), Path(args.state) if args.state else None)
    try:
        with locked(state_dir, "calibrate") as lock, Session() as session:
            state = load_state(state_dir)
            planned = plan_config(aa, args.file, state, digest=loaded.digest, rerun=True, targets=(cand,))
            graph, plan = planned.graph, planned.plan
            unit = ("one run of each arm a pair, ABBA, on the server already running at its `url`" if exp.server.existing
                    else "two fresh launches a pair")
            print(f"Calibrating {exp.name}: {args.pairs} A/A pairs (the experiment against itself, {unit}).", file=sys.stderr)
            if not confirm(args, "calibrate runs servers", f"Run {args.pairs} A/A pairs?", "Calibrate cancelled."):
                return Exit.ERROR
            measured = {}

            def then(writer, result):  # the walk's own writer records the noise
                if result.exit_code() == Exit.OK:
                    measured["it"] = calibration.record(writer, graph, cand, exp, state_dir)

            result = walk_with_console(plan, graph, spec=args.file, state_dir=state_dir, state=state, lock=lock,
                                       variables=dict(cfg.variables), registry=session.registry, then=then)
            if result.exit_code() != Exit.OK:
                error(f"the A/A measurement did not complete (exit {result.exit_code()}); nothing recorded as noise")
                return result.exit_code()
            found = measured["it"]
    except StateError as exc:
        return state_error(exc)
    noise, parts, costs = found.noise, found.parts, found.costs
    print(f"Noise of {exp.name} ({found.pairs} A/A pairs; sd of the per-pair log ratio):")
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
    block = found.block
    if block:
        print(f"Runs per launch that buy the most precision for the time: {int(block['block.suggested'])} "
              f"(used by pairs whose workload sets no `block`)")
    print(f"\nRecorded in {state_dir / 'state.toml'} as calibrate.{exp.name}; `specdsl plan` and `apply` use it.")
    return Exit.OK


def _fmt_pairs(n) -> str:
    return str(n) if n is not None else "> 1000"
