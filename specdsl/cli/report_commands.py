"""`specdsl report NAME [FILE] [--state DIR] [-o OUT.html]` (default `NAME.html`): one
self-contained HTML page of what state recorded about an experiment, a
matrix experiment's cells or a track (docs/report.md).

NAME is an experiment (`cand`), a matrix experiment (`grid`: a summary of
its cells) or a track (`t`); `experiment.NAME` or `track.NAME` when one
name is both. The state is found as `history` finds it: `--state DIR`,
else `.specdsl` beside the spec FILE, else `./.specdsl`. With FILE the spec
is resolved too (`-var`, `--var-file`), so the diagnosis knows what each arm
declared; the page itself is what state recorded. Nothing is run and state
is only read. Exit 0 when the page is written (a failed apply's page
shows what failed and why); 1 for an unknown name, an experiment with
nothing recorded to show, no state there, or a spec that does not
resolve, or an output that cannot be written; 6 for a conflict reading the state.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from specdsl import private
from specdsl.cli.lang_commands import add_var_args
from specdsl.exits import Exit
from specdsl.state import StateError, load_state, state_path
from specdsl.state.commands import locate_state


def add_parsers(sub) -> None:
    p = sub.add_parser("report", help="one self-contained HTML page of an experiment, a sweep or a track")
    p.add_argument("name", metavar="NAME", help="an experiment, a matrix experiment or a track (experiment.NAME, track.NAME)")
    p.add_argument("file", metavar="FILE", nargs="?", help="the spec whose state to read: the .specdsl folder beside it")
    p.add_argument("-o", "--output", metavar="OUT", help="the HTML file to write (default: NAME.html in the current folder)")
    p.add_argument("--state", metavar="DIR", help="state folder (default: .specdsl beside FILE; without FILE, ./.specdsl)")
    add_var_args(p)
    p.set_defaults(handler=cmd_report)


def cmd_report(args) -> int:
    usage = shlex.join(["specdsl", "report", args.name])
    try:
        state_dir = locate_state(Path(args.file) if args.file else None, Path(args.state) if args.state else None, usage)
        state = load_state(state_dir)
    except StateError as exc:
        print(str(exc), file=sys.stderr)
        return Exit.CONFLICT if exc.conflict else Exit.ERROR
    try:
        import matplotlib  # noqa: F401  (the plots; checked before any work)
    except ImportError:
        print("specdsl: error: `specdsl report` draws its plots with matplotlib, which is not installed here; "
              "install it (`pip install matplotlib`, or carry its wheels to a host without a registry)", file=sys.stderr)
        return Exit.ERROR
    cfg = None
    if args.file:
        from specdsl.cli.common import load_spec

        loaded = load_spec(args)  # prints its diagnostics
        if loaded is None:
            return Exit.ERROR
        cfg = loaded.resolved.config
    from specdsl.report import NotFound, gather, render

    where = state_path(state_dir)
    try:
        view = gather(state, state_dir, args.name)
    except NotFound as exc:
        print(f"{where}: error: {exc}", file=sys.stderr)
        return Exit.ERROR
    about = f"state {where} (serial {state.serial}, lineage {state.lineage})"
    source = _source(args, cfg, view.name) if cfg is not None else None
    text = render(view, about, state, state_dir, cfg, source)
    out = Path(args.output) if args.output else default_output(args.name)
    try:
        private.write_text(out, text)
    except OSError as exc:
        print(f"{out}: error: Cannot write the report: {exc.strerror or exc}", file=sys.stderr)
        return Exit.ERROR
    plots = text.count('class="plot"')
    print(f"Report of {_kind(view)} {view.name}: {out} ({len(text.encode()) / 1024:.0f} KiB, {plots} plot{'s' if plots != 1 else ''})")
    failures = getattr(view, "failures", ())
    if failures:
        print(f"note: {len(failures)} failed step{'s' if len(failures) != 1 else ''} recorded; the page shows what failed and why",
              file=sys.stderr)
    return Exit.OK


def default_output(name: str) -> Path:
    """`NAME.html` in the current folder, the name's odd characters as `_`
    (`grid[c=4]` -> `grid_c_4_.html`)."""
    import re

    return Path(re.sub(r"[^\w.-]+", "_", name) + ".html")


def _source(args, cfg, name: str) -> dict:
    """Where the run comes from: the spec file, its sha256, the benchmark
    identity it plans now for `name` (the experiment, or a track's latest),
    and the variables given, so the page can say what reproduces it."""
    import hashlib

    from specdsl.operations import spec_graph

    path = Path(args.file)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    graph = spec_graph(cfg, args.file)
    identities = {addr: step.identity for addr, step in graph.steps.items() if addr.startswith("benchmark.")}
    return {"file": args.file, "sha256": digest, "identities": identities, "vars": list(args.vars),
            "var_files": list(args.var_files), "hosts": {e.name: e.host.name for e in cfg.experiments}}


def _kind(view) -> str:
    name = type(view).__name__
    return {"TrackView": "track", "SweepView": "sweep"}.get(name, "experiment")
