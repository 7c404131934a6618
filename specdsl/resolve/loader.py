"""Reading spec files: the root file and its imports (relative to the
importing file, loaded once each, cycles reported at the `import`), and
variable files (`--var-file`: `name = value` lines in spec syntax).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import attrs

from specdsl.diag import Diagnostic, Span
from specdsl.model import ast
from specdsl.model.build import parse_bytes
from specdsl.resolve.values import nul_error
from specdsl.syntax.parser import MAX_BYTES


@attrs.define
class Sources:
    """Every file read, in order: display name -> text, and the parsed files."""

    texts: dict[str, str] = attrs.Factory(dict)
    files: list[ast.File] = attrs.Factory(list)
    # every file read and parsed (imports anywhere, variable files): its real path -> the
    # SHA-256 of what it says (layout and comments aside); a saved plan's digest covers them
    meanings: dict[str, str] = attrs.Factory(dict)


def display_name(path: Path) -> str:
    """The name diagnostics show: relative to the working directory when
    the file is below it, else absolute."""
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


def real_path(path: Path) -> Path | None:
    """The file a path names, links followed; None for a symbolic link
    that loops (or a path the system cannot resolve)."""
    try:
        return path.resolve(strict=False)
    except (RuntimeError, OSError, ValueError):  # RuntimeError: "Symlink loop" (Python < 3.13)
        return None


def read_file(path: Path, shown: str, sources: Sources, diags: list[Diagnostic], start: str = "start", at: Span | None = None,
              imported: bool = False) -> ast.File | None:
    """Read and parse one file; problems are diagnostics located at `at`
    (the `import` that names the file) or, for a file named on the command
    line, at the file itself. An imported file that is not a spec at all
    (not UTF-8 text, or text whose first statement does not parse) is one
    error at the `import`, saying what the file is: its lines are never
    shown, since a file imported by mistake may hold anything (a token)."""
    at = at or Span(shown, 1, 1)
    if "\0" in str(path):
        diags.append(Diagnostic.error("File name contains a NUL character", at, "a file name cannot hold a NUL; remove it"))
        return None
    real = real_path(path)
    if real is None:
        diags.append(Diagnostic.error(f"`{shown}` is a symbolic link that loops", at,
                                      "the link points, through other links or directly, back at itself: "
                                      "point it at a spec file"))
        return None
    try:
        data = path.read_bytes()
    except IsADirectoryError:
        diags.append(Diagnostic.error(f"`{shown}` is a directory, not a spec file", at))
        return None
    except FileNotFoundError:
        diags.append(Diagnostic.error(f"File not found: {shown}", at, "check the path; imports are relative to the importing file"))
        return None
    except OSError as exc:
        diags.append(Diagnostic.error(f"Cannot read {shown}: {exc.strerror or exc}", at))
        return None
    file, errors, text = parse_bytes(data, shown, start)
    if imported and errors and _not_a_spec(file, errors, text):
        diags.append(Diagnostic.error(f"`{shown}` is not a spec file", at, _what_file(data, text)))
        return None
    if text is not None:
        sources.texts[shown] = text
    elif len(data) <= MAX_BYTES:  # not UTF-8, or a NUL: show the line anyway
        sources.texts[shown] = data.decode("utf-8", "replace").replace("\x00", "\ufffd")
    diags.extend(errors)
    if file is not None:
        _check_names(file.statements, diags)
        sources.meanings[str(real)] = meaning_digest(file)
    return file


def meaning_digest(file: ast.File) -> str:
    """SHA-256 of what a parsed file says: its statements without their
    spans, comments and blank lines (the fields that do not take part in
    equality), so `fmt` and comments leave it as it is."""
    import hashlib
    import json

    tree = attrs.asdict(file, filter=lambda a, _v: a.eq, value_serializer=lambda _i, _a, v: repr(v) if isinstance(v, float) else v)
    return hashlib.sha256(json.dumps(tree, sort_keys=True, default=str).encode()).hexdigest()


# How a spec's first statement starts: `import "..."` or `KIND "name"` / `KIND {`.
_SPEC_START = re.compile(r'\s*(import\s*"|[A-Za-z_][A-Za-z0-9_]*(-[A-Za-z0-9_]+)*\s*("|\{|extends\b|$))')


def _not_a_spec(file: ast.File | None, errors: list[Diagnostic], text: str | None) -> bool:
    """An imported file that does not parse and is not a spec with a
    mistake: not text (not UTF-8, a NUL byte, too large), or text whose
    first line (comments aside) does not start an `import` or a block."""
    if text is None:
        return True
    if file is not None:
        return False
    first = next((line for line in text.split("\n") if line.strip() and not line.lstrip().startswith(("#", "//"))), "")
    return not _SPEC_START.match(first)


def _what_file(data: bytes, text: str | None) -> str:
    """What a file that is not a spec is, without quoting it or saying how
    large it is (its size or line count tells something of a secret)."""
    if len(data) > MAX_BYTES:
        kind = "larger than a spec may be"
    elif text is None:
        kind = "not text (a binary file)"
    else:
        kind = "text that does not start with an `import` or a block"
    return (f"it is {kind}; its contents are not shown (they may hold a secret). "
            "An import names another .spec file, relative to the importing file")


def _check_names(items, diags: list[Diagnostic]) -> None:
    """Block names and assertion names become addresses, folder and file
    names: none may hold a NUL (values are checked where they are evaluated)."""
    todo = list(items)
    while todo:
        item = todo.pop()
        if isinstance(item, ast.Block):
            if item.label is not None and "\0" in item.label:
                diags.append(nul_error(f"The name of a {item.kind} block", item.label_span))
            todo.extend(item.body)
        elif isinstance(item, ast.Assert) and "\0" in item.name:
            diags.append(nul_error("An assertion name", item.span))
        elif isinstance(item, ast.Import) and "\0" in item.path:
            diags.append(nul_error("An import path", item.span))


def load_tree(root: Path, diags: list[Diagnostic]) -> Sources:
    """The root file and everything it imports, depth first, each once."""
    sources = Sources()
    done: set[Path] = set()

    def visit(path: Path, chain: list[Path], at: Span | None) -> None:
        real = real_path(path) if "\0" not in str(path) else None
        if real is None:  # a link that loops, a NUL in the name: read_file says which
            read_file(path, display_name(path), sources, diags, at=at, imported=at is not None)
            return
        if real in chain:
            cycle = " -> ".join(display_name(p) for p in chain[chain.index(real):] + [real])
            diags.append(Diagnostic.error("Import cycle", at, f"{cycle}: remove one of these imports"))
            return
        if real in done:
            return
        if at is not None and not path.name.endswith(".spec") and not path.is_dir():
            # refused by its name, before a byte of it is read: `import "/etc/passwd"`, `import ".env"`
            diags.append(Diagnostic.error(
                f"`{display_name(path)}` is not a spec file", at,
                "an import names another `.spec` file, relative to the importing file; this one was not read",
            ))
            return
        done.add(real)
        file = read_file(path, display_name(path), sources, diags, at=at, imported=at is not None)
        if file is None:
            return
        sources.files.append(file)
        for stmt in file.statements:
            if isinstance(stmt, ast.Import):
                if not stmt.path:
                    diags.append(Diagnostic.error("Empty import path", stmt.path_span or stmt.span))
                    continue
                if "\0" in stmt.path:
                    continue  # reported by read_file's name check
                visit(path.parent / stmt.path, chain + [real], stmt.path_span or stmt.span)  # at the path: it is what is wrong

    visit(root, [], None)
    return sources


def load_var_file(path: Path, sources: Sources, diags: list[Diagnostic]) -> list[ast.Attribute]:
    file = read_file(path, display_name(path), sources, diags, start="varfile")
    if file is None:
        return []
    out = []
    for item in file.statements:
        if isinstance(item, ast.Attribute):
            out.append(item)
        else:
            diags.append(Diagnostic.error("A variables file holds only `name = value` lines", item.span))
    return out
