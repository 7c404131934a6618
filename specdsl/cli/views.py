"""Rendering for the terminal (the CLI is the only layer that prints)."""

from __future__ import annotations

import sys

from specdsl.diag import Diagnostic, render


def print_diags(diags: list[Diagnostic], sources: dict[str, str], stream=None) -> None:
    stream = stream or sys.stderr
    for d in diags:
        print(render(d, sources), file=stream)
    errors = sum(d.severity == "error" for d in diags)
    warnings = len(diags) - errors
    if errors or warnings:
        parts = []
        if errors:
            parts.append(f"{errors} error{'s' if errors != 1 else ''}")
        if warnings:
            parts.append(f"{warnings} warning{'s' if warnings != 1 else ''}")
        print(", ".join(parts), file=stream)
