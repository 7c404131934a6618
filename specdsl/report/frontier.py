"""The frontier table of a sweep or a search (pure: rows in, text out): the
swept value (concurrency or rate) against throughput and the latency
percentiles, each row's SLO verdict (every assertion passed, or not), and
the frontier marked: the highest value that meets the SLO, beside the first
that does not above it."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

# (header, metric key, format) of the columns after the value, as recorded by every run
COLUMNS = (
    ("req/s", "request_throughput", "{:.2f}"),
    ("out tok/s", "output_throughput", "{:.1f}"),
    ("goodput", "goodput_ratio", "{:.1%}"),
    ("p50 ttft", "p50_ttft_ms", "{:.1f}"),
    ("p99 ttft", "p99_ttft_ms", "{:.1f}"),
    ("p99 tpot", "p99_tpot_ms", "{:.1f}"),
    ("p99 itl", "p99_itl_ms", "{:.1f}"),
)


@attrs.frozen
class Row:
    value: float
    metrics: dict
    meets: bool | None  # None: undecided (inconclusive, an error, not measured)
    name: str = ""


def frontier(rows: Sequence[Row]) -> tuple[float | None, float | None]:
    """(highest value that meets, first value above it that does not) of the
    rows; the first is None when none meets, the second when none fails above it."""
    best = max((r.value for r in rows if r.meets is True), default=None)
    knee = min((r.value for r in rows if r.meets is False and (best is None or r.value > best)), default=None)
    return best, knee


LOAD_KEYS = ("concurrency", "rate")


def meets_of(statuses) -> bool | None:
    """A cell's SLO: True when every verdict passed, False when one failed, else None."""
    statuses = list(statuses)
    if statuses and all(s == "pass" for s in statuses):
        return True
    if "fail" in statuses:
        return False
    return None


def sweep_frontiers(cells) -> list[tuple[str, str, list[Row]]]:
    """(load key, the other keys' values, rows) for each line of a sweep along
    `concurrency` or `rate` (report.collections.Cell: values, metrics,
    verdicts); the cells of one line share every other matrix value."""
    out = []
    keys = {k for c in cells for k, _ in c.values}
    for over in (k for k in LOAD_KEYS if k in keys):
        lines: dict[str, list[Row]] = {}
        for c in cells:
            vals = dict(c.values)
            try:
                value = float(vals[over])
            except (KeyError, ValueError):
                continue
            rest = ",".join(f"{k}={v}" for k, v in c.values if k != over)
            meets = meets_of(s for _, s in c.verdicts)
            lines.setdefault(rest, []).append(Row(value, dict(c.metrics), meets, c.name))
        out += [(over, rest, rows) for rest, rows in lines.items() if len(rows) > 1]
    return out


def cells(over: str, rows: Sequence[Row]) -> tuple[list[str], list[list[str]], list[str]]:
    """(header, a row of cells a value ascending, each row's mark: "best", "knee" or "")."""
    ordered = sorted(rows, key=lambda r: r.value)
    best, knee = frontier(ordered)
    cols = [c for c in COLUMNS if any(r.metrics.get(c[1]) is not None for r in ordered)]
    header = [over, *[c[0] for c in cols], "SLO", ""]
    body, marks = [], []
    for r in ordered:
        row = [f"{r.value:g}"]
        for _, key, fmt in cols:
            x = r.metrics.get(key)
            row.append(fmt.format(x) if x is not None else "-")
        row.append({True: "pass", False: "fail", None: "undecided"}[r.meets])
        mark = "best" if r.value == best else "knee" if r.value == knee else ""
        row.append({"best": "<- highest that meets", "knee": "<- first that does not", "": ""}[mark])
        body.append(row)
        marks.append(mark)
    return header, body, marks


def table(over: str, rows: Sequence[Row]) -> list[str]:
    """The table's lines: a header, a row a value (ascending), the frontier marked."""
    header, body, _ = cells(over, rows)
    widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]
    return ["  ".join(c.rjust(w) if i < len(header) - 1 else c for i, (c, w) in enumerate(zip(row, widths))).rstrip()
            for row in [header, *body]]
