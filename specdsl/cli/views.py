"""Rendering for the terminal (the CLI is the only layer that prints)."""

from __future__ import annotations

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
