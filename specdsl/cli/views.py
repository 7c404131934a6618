"""Rendering for the terminal (the CLI is the only layer that prints)."""

from __future__ import annotations

import os
import re
import sys

from specdsl import secrets
from specdsl.diag import Diagnostic, render


def print_diags(diags: list[Diagnostic], sources: dict[str, str], stream=None) -> None:
    """Each diagnostic with its source line; a sensitive value on the line
    (or in the message) is overwritten with `*`, so the caret still points
    at its column (specdsl.secrets.mask_source)."""
    stream = stream or sys.stderr
    for d in diags:
        print(secrets.mask_source(render(d, sources)), file=stream)
    errors = sum(d.severity == "error" for d in diags)
    warnings = len(diags) - errors
    if errors or warnings:
        parts = []
        if errors:
            parts.append(f"{errors} error{'s' if errors != 1 else ''}")
        if warnings:
            parts.append(f"{warnings} warning{'s' if warnings != 1 else ''}")
        print(", ".join(parts), file=stream)


# The plan's action symbols, coloured as Terraform colours them.
_COLOURS = {"+": "32", "-/+": "33", "-": "31", ">": "36", "?": "35", "!": "1;32", "=": "2"}
_ACTION_LINE = re.compile(r"^( *)(-/\+|\+|-|>|\?|!|=)( )", re.M)


def use_colour(stream=None) -> bool:
    """Colour only on a terminal, never when NO_COLOR is set (any value, as
    no-color.org says) or TERM is `dumb`: a file or a pipe gets the same
    bytes on every run."""
    stream = stream or sys.stdout
    if os.environ.get("NO_COLOR", "") != "" or os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def coloured_plan(text: str, stream=None) -> str:
    """A plan's text with its action symbols coloured when `use_colour`;
    otherwise the text unchanged (byte-stable)."""
    if not use_colour(stream):
        return text
    text = _ACTION_LINE.sub(lambda m: f"{m[1]}\x1b[{_COLOURS[m[2]]}m{m[2]}\x1b[0m{m[3]}", text)
    return re.sub(r"^(error|warning)(:)", lambda m: f"\x1b[{'31' if m[1] == 'error' else '33'}m{m[1]}\x1b[0m{m[2]}", text, flags=re.M)
