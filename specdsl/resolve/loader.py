"""Reading spec files: the root file and its imports (relative to the
importing file, loaded once each, cycles reported at the `import`), and
variable files (`--var-file`: `name = value` lines in spec syntax).
"""

from __future__ import annotations

import os
from pathlib import Path

import attrs

from specdsl.diag import Diagnostic, Span
from specdsl.model import ast
from specdsl.model.build import parse_bytes
from specdsl.syntax.parser import MAX_BYTES


@attrs.define
class Sources:
    """Every file read, in order: display name -> text, and the parsed files."""

    texts: dict[str, str] = attrs.Factory(dict)
    files: list[ast.File] = attrs.Factory(list)


def display_name(path: Path) -> str:
    """The name diagnostics show: relative to the working directory when
    the file is below it, else absolute."""
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


def read_file(path: Path, shown: str, sources: Sources, diags: list[Diagnostic], start: str = "start", at: Span | None = None) -> ast.File | None:
    """Read and parse one file; problems are diagnostics located at `at`
    (the `import` that names the file) or, for a file named on the command
    line, at the file itself."""
    at = at or Span(shown, 1, 1)
    try:
        data = path.read_bytes()
    except IsADirectoryError:
        diags.append(Diagnostic.error(f"`{shown}` is a directory, not a spec file", at))
        return None
    except FileNotFoundError:
        diags.append(Diagnostic.error(f"File not found: {shown}", at, "check the path; imports are relative to the importing file"))
        return None
    except OSError as exc:
        diags.append(Diagnostic.error(f"Cannot read {shown}: {exc.strerror}", at))
        return None
    file, errors, text = parse_bytes(data, shown, start)
    if text is not None:
        sources.texts[shown] = text
    elif len(data) <= MAX_BYTES:  # not UTF-8, or a NUL: show the line anyway
        sources.texts[shown] = data.decode("utf-8", "replace").replace("\x00", "\ufffd")
    diags.extend(errors)
    return file


def load_tree(root: Path, diags: list[Diagnostic]) -> Sources:
    """The root file and everything it imports, depth first, each once."""
    sources = Sources()
    done: set[Path] = set()

    def visit(path: Path, chain: list[Path], at: Span | None) -> None:
        real = path.resolve()
        if real in chain:
            cycle = " -> ".join(display_name(p) for p in chain[chain.index(real):] + [real])
            diags.append(Diagnostic.error("Import cycle", at, f"{cycle}: remove one of these imports"))
            return
        if real in done:
            return
        done.add(real)
        file = read_file(path, display_name(path), sources, diags, at=at)
        if file is None:
            return
        sources.files.append(file)
        for stmt in file.statements:
            if isinstance(stmt, ast.Import):
                if not stmt.path:
                    diags.append(Diagnostic.error("Empty import path", stmt.span))
                    continue
                visit(path.parent / stmt.path, chain + [real], stmt.span)

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
