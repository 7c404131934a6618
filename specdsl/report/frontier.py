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


def table(over: str, rows: Sequence[Row]) -> list[str]:
    """The table's lines: a header, a row a value (ascending), the frontier marked."""
    ordered = sorted(rows, key=lambda r: r.value)
    best, knee = frontier(ordered)
    cols = [c for c in COLUMNS if any(r.metrics.get(c[1]) is not None for r in ordered)]
    header = [over, *[c[0] for c in cols], "SLO", ""]
    body = []
    for r in ordered:
        cells = [f"{r.value:g}"]
        for _, key, fmt in cols:
            x = r.metrics.get(key)
            cells.append(fmt.format(x) if x is not None else "-")
        cells.append({True: "pass", False: "fail", None: "undecided"}[r.meets])
        cells.append("<- highest that meets" if r.value == best else "<- first that does not" if r.value == knee else "")
        body.append(cells)
    widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]
    lines = ["  ".join(c.rjust(w) if i < len(header) - 1 else c for i, (c, w) in enumerate(zip(row, widths))).rstrip()
             for row in [header, *body]]
    return lines
