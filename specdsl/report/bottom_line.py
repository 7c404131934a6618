"""The page's first words: the bottom line of an experiment, in a sentence
a release note can quote: both arms' figures (what each is), the ratio of
the gating comparison with its interval and level, every verdict, and the
promotion. Plain text; the page escapes it."""

from __future__ import annotations

import math
from statistics import median

from specdsl.report.markup import num
from specdsl.verdict.decision import RATIO


def bottom_line(v, unit_of) -> str:
    """One sentence (plain text), "" without a result. `unit_of(metric)`
    names a metric's unit (report.plots.unit_of)."""
    if v.run is None:
        return ""
    figures = _figures(v)
    parts = []
    if figures is not None:
        base, cand, what = figures
        unit = unit_of(v.metric)
        unit = "" if unit == "the command's unit" else f" {unit}"
        parts.append(f"{v.name} {num(cand)}{unit} against {v.baseline} {num(base)}{unit} ({v.metric}, {what})")
    elif v.metric and v.run.metric(v.metric) is not None:
        parts.append(f"{v.name} {num(v.run.metric(v.metric))} {v.metric} (the median of its runs)")
    gate = next((c for c in v.verdicts if c.decision is not None and c.decision.statistic == RATIO
                 and math.isfinite(c.decision.estimate)), None)
    if gate is not None:
        d = gate.decision
        opened = math.isinf(d.low) or d.low == 0
        ends = f"{'(' if opened else '['}{_end(d.low)}, {_end(d.high)}{')' if math.isinf(d.high) else ']'}"
        level = f"{num(d.level * 100)}% " if math.isfinite(d.level) else ""
        parts.append(f"ratio x{num(d.estimate)}, {level}interval {ends} over {d.n} {d.unit}, "
                     f"against {gate.check}'s threshold {d.op} {num(d.threshold)}")
    if v.verdicts:
        parts.append("verdicts: " + ", ".join(f"{c.check} {c.status.upper()}" for c in v.verdicts))
    if v.release is not None and v.release.promotion[0]:
        parts.append(v.release.promotion[0])
    return "; ".join(parts) + "." if parts else ""


def _end(x: float) -> str:
    return "∞" if math.isinf(x) and x > 0 else "-∞" if math.isinf(x) else num(x)


def _figures(v) -> tuple[float, float, str] | None:
    """(baseline figure, candidate figure, what they are) of the headline metric."""
    if not v.baseline or not v.metric:
        return None
    if v.paired:
        by_arm = {arm: [p.value for p in v.runs if p.arm == arm and p.value is not None] for arm in ("A", "B")}
        if not by_arm["A"] or not by_arm["B"]:
            return None
        pairs = f", {v.run.runs} pairs" if v.run.runs else ""
        return median(by_arm["A"]), median(by_arm["B"]), f"the median of each arm's runs{pairs}, paired"
    if v.base_run is None:
        return None
    base, cand = v.base_run.metric(v.metric), v.run.metric(v.metric)
    if base is None or cand is None:
        return None
    return base, cand, "the median of each benchmark's runs, measured apart"
