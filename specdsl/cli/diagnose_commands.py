"""`specdsl diagnose EXPERIMENT [FILE]` and `specdsl diff A B [FILE]`:
what differs between two arms, ranked by likely impact (docs/diagnose.md).

Both read state only (no lock: they write nothing). `diagnose` compares an
experiment's recorded result with its baseline's; `diff` any two
experiments or recorded runs. The short form apply prints under a FAIL
is `cli.apply_view.short_lines`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from specdsl.cli.common import error, load_spec
from specdsl.cli.common import state_error
from specdsl.cli.plan_commands import add_common
from specdsl.exits import Exit
from specdsl.state import StateError, load_state, state_dir_for


def add_parsers(sub) -> None:
    p = sub.add_parser("diagnose", help="why an experiment differs from its baseline: the differences, ranked")
    p.add_argument("experiment", metavar="EXPERIMENT")
    p.add_argument("file", metavar="FILE", nargs="?", help="the spec (without it: the state in --state DIR or ./.specdsl)")
    p.add_argument("--json", action="store_true", help="the diagnosis as JSON (docs/diagnose.md)")
    p.add_argument("--all", action="store_true", dest="show_all",
                   help="also the differences hidden as noise (ports, seeds) or said by another line")
    add_common(p, target=False)
    p.set_defaults(handler=cmd_diagnose)
    p = sub.add_parser("diff", help="what differs between two experiments or recorded runs")
    p.add_argument("a", metavar="A", help="an experiment or a run id (the baseline side)")
    p.add_argument("b", metavar="B", help="an experiment or a run id (the candidate side)")
    p.add_argument("file", metavar="FILE", nargs="?", help="the spec (without it: the state in --state DIR or ./.specdsl)")
    p.add_argument("--json", action="store_true", help="the comparison as JSON (docs/diagnose.md)")
    p.add_argument("--all", action="store_true", dest="show_all",
                   help="also the differences hidden as noise (ports, seeds) or said by another line")
    add_common(p, target=False)
    p.set_defaults(handler=cmd_diff)


def _context(args):
    """(state dir, state, config, graph, spec) for a command with an optional FILE; None after an error."""
    cfg = graph = None
    spec = args.file or ""
    if args.file:
        loaded = load_spec(args)
        if loaded is None:
            return None
        from specdsl.operations import spec_graph

        cfg = loaded.resolved.config
        graph = spec_graph(cfg, args.file)
        state_dir = state_dir_for(Path(args.file), Path(args.state) if args.state else None)
    else:
        state_dir = Path(args.state) if args.state else Path(".specdsl")
    state = load_state(state_dir)
    return state_dir, state, cfg, graph, spec


def cmd_diagnose(args) -> int:
    from specdsl.diagnose import DiagnoseError, compare, sides_from_state, sides_of

    try:
        ctx = _context(args)
        if ctx is None:
            return Exit.ERROR
        state_dir, state, cfg, graph, spec = ctx
        if state is None:
            raise DiagnoseError(f"nothing is recorded in {state_dir} yet: run `specdsl apply {spec or 'FILE'}` first")
        sides = sides_of(state, cfg, graph, args.experiment, spec=spec) if cfg is not None \
            else sides_from_state(state, state_dir, args.experiment)
        diagnosis = compare(state, sides.baseline_run, sides.candidate_run, state_dir=state_dir, baseline=sides.baseline,
                            candidate=sides.candidate, labels=sides.labels)
    except StateError as exc:
        return state_error(exc)
    except DiagnoseError as exc:
        error(str(exc))
        return Exit.ERROR
    _print(diagnosis, args.json, args.show_all)
    return Exit.OK


def cmd_diff(args) -> int:
    from specdsl.diagnose import DiagnoseError, compare, side_of

    try:
        ctx = _context(args)
        if ctx is None:
            return Exit.ERROR
        state_dir, state, cfg, graph, spec = ctx
        run_a, exp_a, arm_a = side_of(state, state_dir, cfg, graph, args.a, spec=spec)
        run_b, exp_b, arm_b = side_of(state, state_dir, cfg, graph, args.b, spec=spec)
        diagnosis = compare(state, run_a, run_b, state_dir=state_dir, baseline=exp_a, candidate=exp_b,
                            labels=(args.a, args.b), arms=(arm_a, arm_b))
    except StateError as exc:
        return state_error(exc)
    except DiagnoseError as exc:
        error(str(exc))
        return Exit.ERROR
    _print(diagnosis, args.json, args.show_all)
    return Exit.OK


def _print(diagnosis, as_json: bool, show_all: bool = False) -> None:
    if as_json:
        sys.stdout.write(json.dumps(diagnosis.to_json(), indent=1, sort_keys=True) + "\n")
    else:
        sys.stdout.write(render(diagnosis, show_all))


def render(diagnosis, show_all: bool = False) -> str:
    """The diagnosis as text: metrics side by side (and what each figure
    is), then each difference, best-ranked first; what is hidden (noise, or
    said by another line) is counted, and listed with `show_all`."""
    d = diagnosis
    if d.runs[0] == d.runs[1]:
        lines = [f"{d.candidate} against {d.baseline}, the two arms of paired run {d.runs[1]}"]
    else:
        lines = [f"{d.candidate} (run {d.runs[1]}) against {d.baseline} (run {d.runs[0]})"]
    shown = [m for m in d.metrics if m[0] in ("output_throughput", "median_ttft_ms", "median_tpot_ms", "median_itl_ms")] \
        or list(d.metrics[:4])  # a command workload's own metrics
    if shown:
        lines.append(f"  {'metric':<24} {'baseline':>12} {'candidate':>12}")
        for name, b, c in shown:
            lines.append(f"  {name:<24} {_num(b):>12} {_num(c):>12}")
        if d.metrics_are:
            lines.append(f"  (each figure: {d.metrics_are})")
    if not d.differences:
        lines.append("No differences recorded between the two arms.")
    else:
        lines.append(f"Differences, the most likely cause first ({len(d.differences)}):")
        width = len(str(len(d.differences)))
        for diff in d.differences:
            lines.append(f"  {diff.rank + 1:>{width}}. {diff.line()}")
    if d.hidden and show_all:
        lines.append(f"Hidden ({len(d.hidden)}):")
        for diff in d.hidden:
            lines.append(f"  - {diff.line()}  [{diff.hidden}]")
    elif d.hidden:
        noise = [x.label for x in d.hidden if x.hidden.startswith("noise")]
        said = len(d.hidden) - len(noise)
        parts = ([f"{len(noise)} that differ between launches of one configuration ({', '.join(noise)})"] if noise else []) \
            + ([f"{said} said by another line"] if said else [])
        lines.append(f"Hidden: {'; '.join(parts)} (--all shows them)")
    for note in d.notes:
        lines.append(f"note: {note}")
    return "\n".join(lines) + "\n"


def _num(value) -> str:
    return "-" if value is None else f"{value:.4g}"
