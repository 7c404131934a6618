"""`specdsl validate` and `specdsl fmt`."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from specdsl import secrets
from specdsl.cli.views import print_diags
from specdsl.exits import Exit
from specdsl.model.printer import format_file
from specdsl.resolve.loader import Sources, display_name, read_file
from specdsl.resolve.resolver import resolve_file


def add_var_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("-var", "--var", dest="vars", action="append", default=[], metavar="NAME=VALUE", help="set a variable")
    p.add_argument("--var-file", dest="var_files", action="append", default=[], metavar="FILE", help="variables file (name = value lines)")


def parse_vars(items: list[str]) -> tuple[dict[str, str], list[str]]:
    out, bad = {}, []
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            bad.append(item)
        else:
            out[name.strip()] = value
    return out, bad


def add_parsers(sub) -> None:
    p = sub.add_parser("validate", help="check spec files; exit 0 valid, 1 invalid")
    p.add_argument("files", nargs="+", metavar="FILE", help="spec files to check")
    p.add_argument("--json", action="store_true", help="print diagnostics as JSON on stdout")
    add_var_args(p)
    p.set_defaults(handler=cmd_validate)

    p = sub.add_parser("fmt", help="rewrite spec files in the canonical layout")
    p.add_argument("files", nargs="*", default=["."], metavar="FILE|DIR",
                   help="spec files to rewrite in place (unless --check or --diff); a folder: every .spec file under it "
                        "(default: the current folder; Terraform's -recursive is what a folder always means)")
    p.add_argument("--check", action="store_true", help="change nothing; exit 1 if a file is not formatted")
    p.add_argument("--diff", action="store_true", help="print the changes as a unified diff instead of writing")
    p.set_defaults(handler=cmd_fmt)


def cmd_validate(args) -> int:
    variables, bad = parse_vars(args.vars)
    if bad:
        print(f"specdsl: error: -var expects NAME=VALUE, got {bad[0]!r}", file=sys.stderr)
        return Exit.ERROR
    results = []
    failed = False
    for name in args.files:
        resolved = resolve_file(Path(name), variables, [Path(f) for f in args.var_files], environ=os.environ)
        failed |= not resolved.ok
        results.append((name, resolved))
        if not args.json:
            print_diags(resolved.diags, resolved.sources.texts)
            if resolved.ok:
                cells = len(resolved.config.experiments)
                searches = len(resolved.config.searches)
                more = f", {searches} search{'es' if searches != 1 else ''}" if searches else ""
                print(f"{name}: valid ({cells} experiment{'s' if cells != 1 else ''}{more})", file=sys.stderr)
    if args.json:
        doc = {
            "format_version": 1,
            "valid": not failed,
            # every file's diagnostics in one list too, as every --json command prints them on invalid input
            "diagnostics": [_masked(d.to_json()) for _name, r in results for d in r.diags],
            "files": [
                {
                    "file": name,
                    "valid": r.ok,
                    "experiments": [e.name for e in r.config.experiments] if r.ok else [],
                    "diagnostics": [_masked(d.to_json()) for d in r.diags],
                }
                for name, r in results
            ],
        }
        json.dump(doc, sys.stdout, indent=2)
        sys.stdout.write("\n")
    return Exit.ERROR if failed else Exit.OK


def print_invalid_json(name: str | None, diags, stream=None) -> None:
    """What a `--json` command prints on stdout for input it cannot use
    (docs/language.md): `valid: false` and every diagnostic, in
    `diagnostics` and, for a spec, per file as `validate --json` does."""
    shown = [_masked(d.to_json()) for d in diags]
    doc: dict = {"format_version": 1, "valid": False, "diagnostics": shown}
    if name is not None:
        doc["files"] = [{"file": name, "valid": False, "experiments": [], "diagnostics": shown}]
    stream = stream or sys.stdout
    json.dump(doc, stream, indent=2)
    stream.write("\n")


def print_error_json(message: str, detail: str = "", stream=None, file: str | None = None) -> None:
    """`print_invalid_json` for an error that is not in a spec (a state
    file, a plan file, an unknown name): one diagnostic without a range,
    with the `file` it is about when there is one."""
    shown = _masked({"severity": "error", "summary": message, **({"detail": detail} if detail else {})})
    if file:
        shown["file"] = file
    doc = {"format_version": 1, "valid": False, "diagnostics": [shown]}
    stream = stream or sys.stdout
    json.dump(doc, stream, indent=2)
    stream.write("\n")


def _masked(doc: dict) -> dict:
    """A diagnostic's JSON with sensitive values in its texts overwritten."""
    return {k: secrets.mask_source(v) if isinstance(v, str) else v for k, v in doc.items()}


def _spec_files(names: list[str]) -> tuple[list[str], list[str]]:
    """(files, empty folders): the files named, a folder as every `*.spec`
    file under it (sorted, recursively; hidden folders such as `.specdsl`
    and `.venv` left out)."""
    out: list[str] = []
    empty: list[str] = []
    for name in names:
        path = Path(name)
        if not path.is_dir():
            out.append(name)
            continue
        found = [str(f) for f in sorted(path.rglob("*.spec"))
                 if f.is_file() and not any(part.startswith(".") for part in f.relative_to(path).parts)]
        out += found
        if not found:
            empty.append(name)
    return out, empty


def cmd_fmt(args) -> int:
    files, empty = _spec_files(args.files)
    for name in empty:
        print(f"specdsl: error: no .spec file under the folder {name}", file=sys.stderr)
    status = Exit.ERROR if empty else Exit.OK
    for name in files:
        path = Path(name)
        shown = display_name(path)
        sources, diags = Sources(), []
        file = read_file(path, shown, sources, diags)
        if file is None or any(d.severity == "error" for d in diags):
            print_diags(diags, sources.texts)
            status = Exit.ERROR
            continue
        text = sources.texts[shown]
        formatted = format_file(file)
        if formatted == text:
            continue
        if args.diff:
            import difflib

            sys.stdout.writelines(
                difflib.unified_diff(text.splitlines(True), formatted.splitlines(True), f"{name}", f"{name} (formatted)")
            )
        if args.check or args.diff:
            if args.check:
                print(f"{name}: would reformat", file=sys.stderr)
            status = max(status, Exit.ERROR if args.check else status)
            continue
        problem = _rewrite(path, formatted)
        if problem:
            print(f"{name}: error: {problem}", file=sys.stderr)
            status = Exit.ERROR
            continue
        print(f"{name}: reformatted", file=sys.stderr)
    return status


def _rewrite(path: Path, text: str) -> str:
    """Replace the spec at `path` with `text` atomically: a temp file in its
    folder, with its mode, renamed over it (a symlink's target is what is
    rewritten). '' when done; otherwise what stopped it, and the file is as
    it was."""
    import contextlib
    import os
    import uuid

    target = path.resolve()
    if not os.access(target, os.W_OK):
        return "cannot write the file: permission denied (it is left as it was)"
    tmp = target.with_name(f".{target.name}.fmt-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        mode = target.stat().st_mode & 0o7777
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        return f"cannot write the file: {exc.strerror or exc} (it is left as it was)"
    return ""
