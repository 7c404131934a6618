"""The HTML page's small helpers: escaping (secrets redacted first), numbers
as people write them, tables and cells. Both `page` and `release_page`
build on them (they lived in `page`, which `release_page` had to import
back from inside its functions: an import circle)."""

from __future__ import annotations

import html
import math

from specdsl import secrets, stats


def esc(value) -> str:
    return html.escape(secrets.redact(str(value)), quote=True)


def num(x: float | None) -> str:
    if x is None:
        return "-"
    if isinstance(x, float) and math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if isinstance(x, float) and math.isnan(x):
        return "nan"
    return stats.significant(x, 4) if abs(x) < 1e5 else f"{x:.0f}"


def table(head: list[str], rows: list[list[str]], classes: list[str] | None = None) -> str:
    out = ["<table><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>"]
    for i, row in enumerate(rows):
        cls = f' class="{classes[i]}"' if classes and classes[i] else ""
        out.append(f"<tr{cls}>" + "".join(row) + "</tr>")
    return "\n".join(out) + "</table>"


def td(value, numeric: bool = False) -> str:
    return f'<td class="num">{esc(value)}</td>' if numeric else f"<td>{esc(value)}</td>"
