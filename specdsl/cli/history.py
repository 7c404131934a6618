"""`specdsl history TRACK [FILE] [--state DIR] [--json]`: every promotion of
a track, newest first, with its time, run, experiment, the verdicts it
rests on (the checks that passed, with the values they compared), the run
it replaced and its stack lock.

The state is found as plan, apply and the state commands find it:
`--state DIR`, else `.specdsl` beside the spec FILE, else `./.specdsl`.
Exit 0; 1 for an unknown track (did-you-mean over the recorded tracks), no
state there (the error says where it looked), or a state that cannot be
read; 6 for a conflict reading it.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import tomllib
from pathlib import Path
from typing import Any

from specdsl.diag import did_you_mean
from specdsl.exits import Exit
from specdsl.state import StateError, load_state, state_path
from specdsl.state.commands import locate_state
from specdsl.state.promotions import Entry, history


def add_parsers(sub) -> None:
    p = sub.add_parser("history", help="every promotion of a track, newest first")
    p.add_argument("track", metavar="TRACK")
    p.add_argument("file", metavar="FILE", nargs="?", help="the spec whose state to read: the .specdsl folder beside it")
    p.add_argument("--state", metavar="DIR", help="state folder (default: .specdsl beside FILE; without FILE, ./.specdsl)")
    p.add_argument("--json", action="store_true", help="machine-readable, on stdout")
    p.set_defaults(handler=cmd_history)


def cmd_history(args) -> int:
    from specdsl.cli.lang_commands import print_error_json

    usage = shlex.join(["specdsl", "history", args.track])
    try:
        # found as plan, apply and the state commands find it; no state there is an error that says where it looked
        state_dir = locate_state(Path(args.file) if args.file else None, Path(args.state) if args.state else None, usage)
        state = load_state(state_dir)
    except StateError as exc:
        print(str(exc), file=sys.stderr)
        if args.json:
            print_error_json(exc.summary, exc.detail)
        return Exit.CONFLICT if exc.conflict else Exit.ERROR
    where = state_path(state_dir)
    tracks = state.tracks() if state is not None else ()
    if args.track not in tracks:
        hint = did_you_mean(args.track, tracks)
        if not hint:
            hint = ("tracks with promotions: " + ", ".join(tracks)) if tracks else "nothing has been promoted in this state yet"
        if args.json:  # an empty result, not an error: a script reads `promotions: []`
            print(f"{where}: warning: No promotions of track `{args.track}` recorded; {hint}", file=sys.stderr)
            sys.stdout.write(render_json(args.track, where, [], state_dir))
            return Exit.OK
        print(f"{where}: error: No promotions of track `{args.track}` recorded; {hint}", file=sys.stderr)
        return Exit.ERROR
    entries = history(state, args.track)
    if args.json:
        sys.stdout.write(render_json(args.track, where, entries, state_dir))
    else:
        sys.stdout.write(render_text(args.track, where, entries, state_dir))
    return Exit.OK


def _lock(entry: Entry, state_dir: Path) -> tuple[str, bool | None, str]:
    """(the lock's path as shown, whether it still records this promotion's
    run (None: no lock recorded), a note when it does not)."""
    if not entry.promotion.lock:
        return "", None, ""
    path = Path(os.path.normpath(state_dir / entry.promotion.lock))
    try:
        shown = os.path.relpath(path)
    except ValueError:
        shown = str(path)
    shown = shown if not shown.startswith(".." + os.sep + "..") else str(path.resolve())
    try:
        run = tomllib.loads(path.read_text()).get("run")
    except FileNotFoundError:
        return shown, False, "missing"
    except (OSError, ValueError, UnicodeDecodeError):
        return shown, False, "unreadable"
    if run == entry.promotion.run:
        return shown, True, ""
    return shown, False, f"now records run {run}" if run else "rewritten since"


def render_text(track: str, where: Path, entries: list[Entry], state_dir: Path) -> str:
    n = len(entries)
    lines = [f"Track {track}: {n} promotion{'s' if n != 1 else ''}, newest first ({where})"]
    for entry in entries:
        p = entry.promotion
        lines.append("")
        lines.append(f"{p.time or '(no time)'}  run {p.run}  experiment {p.experiment}")
        label = "verdicts"
        for name, vid, verdict in entry.verdicts or (("(none recorded)", "", None),):
            status = verdict.status if verdict is not None else "pass"  # a promotion rests on passes
            detail = verdict.detail if verdict is not None else ""
            text = f"{name}: {status}" + (f" ({detail})" if detail else "") if vid else name
            lines.append(f"    {label:<9} {text}")
            label = ""
        if p.previous:
            lines.append(f"    {'previous':<9} run {p.previous}" + (f" ({entry.previous_experiment})" if entry.previous_experiment else ""))
        else:
            lines.append(f"    {'previous':<9} none: the first promotion of the track")
        shown, _current, note = _lock(entry, state_dir)
        if shown:
            lines.append(f"    {'lock':<9} {shown}" + (f" ({note})" if note else ""))
    return "\n".join(lines) + "\n"


def render_json(track: str, where: Path, entries: list[Entry], state_dir: Path) -> str:
    out: list[dict[str, Any]] = []
    for entry in entries:
        p = entry.promotion
        shown, current, _note = _lock(entry, state_dir)
        out.append({
            "time": p.time,
            "run": p.run,
            "experiment": p.experiment,
            "verdicts": [{"check": name, "run": vid or None, "detail": v.detail if v is not None else ""}
                         for name, vid, v in entry.verdicts],
            "previous": p.previous,
            "previous_experiment": entry.previous_experiment,
            "lock": shown or None,
            "lock_current": current,
        })
    doc = {"format_version": 1, "track": track, "state": str(where), "promotions": out}
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
