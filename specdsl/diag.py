"""Diagnostics: user mistakes as values.

A `Diagnostic` has a severity, a short summary (sentence case, no trailing
period), a detail that says what to do, and the exact source `Span` it is
about. `render` prints it as

    FILE:LINE:COL: error: Summary
      LINE | source line
           |   ^^^^^
      = hint: detail

This module imports nothing else from specdsl.
"""

from __future__ import annotations

from typing import Iterable

import attrs

ERROR = "error"
WARNING = "warning"


@attrs.frozen
class Span:
    """A source range: 1-based line and column, end exclusive."""

    file: str
    line: int
    col: int
    end_line: int | None = None
    end_col: int | None = None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


@attrs.frozen
class Diagnostic:
    severity: str
    summary: str
    detail: str = ""
    span: Span | None = None

    @classmethod
    def error(cls, summary: str, span: Span | None = None, detail: str = "") -> "Diagnostic":
        return cls(ERROR, summary, detail, span)

    @classmethod
    def warning(cls, summary: str, span: Span | None = None, detail: str = "") -> "Diagnostic":
        return cls(WARNING, summary, detail, span)

    def to_json(self) -> dict:
        out: dict = {"severity": self.severity, "summary": self.summary}
        if self.detail:
            out["detail"] = self.detail
        if self.span is not None:
            out["range"] = {
                "file": self.span.file,
                "line": self.span.line,
                "col": self.span.col,
                "end_line": self.span.end_line or self.span.line,
                "end_col": self.span.end_col or self.span.col + 1,
            }
        return out


class Diagnostics:
    """An ordered collection of diagnostics, to be read in source order."""

    def __init__(self, items: Iterable[Diagnostic] = ()) -> None:
        self._items: list[Diagnostic] = list(items)

    def sorted(self) -> list[Diagnostic]:
        """Unique diagnostics in source order (file, line, col), unlocated last."""

        def key(d: Diagnostic):
            s = d.span
            return (s is None, s.file if s else "", s.line if s else 0, s.col if s else 0)

        seen, out = set(), []
        for d in sorted(self._items, key=key):
            if d not in seen:
                seen.add(d)
                out.append(d)
        return out


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """'did you mean `x`?' for the closest candidate, or ''."""
    import difflib  # only when a name is wrong: a plan that imports it waits ~8 ms

    close = difflib.get_close_matches(word, sorted(set(candidates)), n=1, cutoff=0.6)
    return f"did you mean `{close[0]}`?" if close else ""


def render(diag: Diagnostic, sources: dict[str, str] | None = None) -> str:
    """Render one diagnostic for a terminal; `sources` maps file -> text."""
    span = diag.span
    head = f"{span}: " if span else ""
    lines = [f"{head}{diag.severity}: {diag.summary}"]
    text = (sources or {}).get(span.file) if span else None
    if span and text is not None:
        src_lines = text.split("\n")  # as the parser counts lines (not at \f, \x1c, \u2028, ...)
        if 1 <= span.line <= len(src_lines):
            src = src_lines[span.line - 1].rstrip("\r")
            if len(src) > 200:  # a minified 10 MB line: show the neighbourhood only
                start = max(0, span.col - 80)
                src = src[start : start + 160]
                col = span.col - start
            else:
                col = span.col
            width = 1
            if span.end_line in (None, span.line) and span.end_col:
                width = max(1, span.end_col - span.col)
            width = min(width, max(1, len(src) - col + 1))
            gutter = f"{span.line:>4} | "
            lines.append(gutter + src.expandtabs(1))
            lines.append(" " * (len(gutter) - 2) + "| " + " " * (col - 1) + "^" * width)
    if diag.detail:
        lines.append(f"  = hint: {diag.detail}")
    return "\n".join(lines)
