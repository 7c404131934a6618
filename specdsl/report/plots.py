"""The report's plots, drawn with matplotlib's Agg backend (no display, no
fonts fetched) into PNG bytes the page embeds. Each function returns None
when there is nothing to draw, so the page never holds an empty chart.

Why matplotlib: a static image keeps the page self-contained and small,
renders the same in every browser and with no script, and matplotlib is
the long-kept standard of the scientific Python stack (the Agg backend
needs no display and no network).
"""

from __future__ import annotations

import io
import math

from specdsl.report.verdicts import finite
from specdsl.verdict.decision import RATIO

ARM_COLORS = {"A": "#4c72b0", "B": "#dd8452"}
STATUS_COLORS = {"pass": "#55a868", "fail": "#c44e52", "inconclusive": "#ccb974", "error": "#8172b3"}
LATENCY_TITLES = {"ttft": "TTFT (ms)", "itl": "ITL (ms)", "e2el": "E2E latency (ms)"}
DPI = 96


def _plt():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": 9, "axes.spines.top": False, "axes.spines.right": False,
                         "svg.fonttype": "none", "figure.dpi": DPI})
    return plt


def _png(fig) -> bytes:
    plt = _plt()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


_UNITS = {"output_throughput": "tok/s", "total_token_throughput": "tok/s", "input_throughput": "tok/s",
          "request_throughput": "req/s", "failed": "requests", "completed": "requests", "duration": "s",
          "total_input_tokens": "tokens", "total_output_tokens": "tokens"}


def unit_of(metric: str) -> str:
    """The unit of a metric, for every axis and column that shows one; a
    command workload's own metric is in whatever unit its command prints."""
    if metric in _UNITS:
        return _UNITS[metric]
    if metric.endswith("_ms"):
        return "ms"
    if metric.endswith("_s"):
        return "s"
    return "the command's unit"


def axis_label(metric: str) -> str:
    return f"{metric} ({unit_of(metric)})"


def arm_label(view, letter: str) -> str:
    who = next((a.experiment for a in view.arms if a.letter == letter), "")
    return f"{letter}: {who}" if who else letter


def runs_plot(view) -> bytes | None:
    """The headline metric of every run of both arms in the order they ran;
    a dotted line where a server was relaunched, so warm-up and drift show."""
    points = [p for p in view.runs if p.value is not None]
    if not points:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(9, 3.0))
    for letter in ("A", "B"):
        mine = [p for p in points if p.arm == letter]
        if mine:
            ax.plot([p.order + 1 for p in mine], [p.value for p in mine], "o", color=ARM_COLORS[letter],
                    label=arm_label(view, letter), markersize=6)
    ax.plot([p.order + 1 for p in points], [p.value for p in points], "-", color="#999999", linewidth=0.8, zorder=0)
    last = None
    for p in view.runs:
        if last is not None and p.launch != last:
            ax.axvline(p.order + 0.5, color="#bbbbbb", linestyle=":", linewidth=1)
        last = p.launch
    ax.set_xlabel("run number, in the order it ran (dotted: a server launch)")
    ax.set_ylabel(axis_label(view.metric))
    ax.set_xticks([p.order + 1 for p in view.runs] if len(view.runs) <= 40 else ax.get_xticks())
    ax.legend(loc="best", frameon=False)
    ax.set_title(f"{view.metric} per run", loc="left")
    return _png(fig)


def ratio_plot(view) -> bytes | None:
    """Each gating verdict: the values it was decided from (a ratio per
    pair, or a value per run), its estimate and one-sided interval, and the
    threshold."""
    rows = [v for v in view.verdicts if v.decision is not None]
    if not rows:
        return None
    plt = _plt()
    fig, axes = plt.subplots(len(rows), 1, figsize=(9, 1.15 + 0.95 * len(rows)), squeeze=False)
    for ax, v in zip(axes[:, 0], rows):
        n = v.decision
        color = STATUS_COLORS.get(v.status, "#333333")
        shown = [x for x in (*v.points, n.estimate, n.threshold, n.low, n.high) if finite(x)]
        lo, hi = min(shown), max(shown)
        pad = (hi - lo) * 0.15 or abs(hi) * 0.1 or 0.1
        left, right = lo - pad, hi + pad
        if n.statistic == RATIO:
            left = max(left, 0.0)
        a = n.low if finite(n.low) and n.low > left else left
        b = n.high if finite(n.high) and n.high < right else right
        ax.plot([a, b], [0, 0], "-", color=color, linewidth=5, alpha=0.55, solid_capstyle="butt")
        for end, bounded in ((a, finite(n.low) and n.low > left), (b, finite(n.high) and n.high < right)):
            ax.plot([end], [0], marker="|" if bounded else ("<" if end == a else ">"), color=color, markersize=12)
        if v.points:
            ax.plot(v.points, [0.22] * len(v.points), "o", color="#555555", markersize=4, alpha=0.8)
        ax.plot([n.estimate], [0], "D", color=color, markersize=8)
        ax.axvline(n.threshold, color="#c44e52", linestyle="--", linewidth=1.2)
        ax.set_xlim(left, right)
        ax.set_ylim(-0.5, 0.5)
        ax.set_yticks([])
        ax.spines["left"].set_visible(False)
        what = "ratio candidate / baseline" if n.statistic == RATIO else "mean"
        unit = "candidate / baseline, a pure number (1 = equal)" if n.statistic == RATIO else unit_of(v.metric or view.metric)
        ax.set_xlabel(f"{what} ({unit}); diamond: estimate, bar: interval, dashed: threshold", fontsize=8)
        ax.set_title(f"{v.check}: {what} {n.op} {n.threshold:g}  ->  {v.status.upper()}  (n={n.n} {n.unit}; dots: each {n.unit[:-1]})",
                     loc="left", fontsize=9)
    fig.tight_layout()
    return _png(fig)


def _ecdf(values):
    xs = sorted(values)
    return xs, [(i + 1) / len(xs) for i in range(len(xs))]


def latency_plot(view) -> bytes | None:
    """TTFT, ITL and E2E latency of both arms, as empirical distribution
    functions (every request; ITL every chunk gap)."""
    present = [d for d in LATENCY_TITLES if any(a.samples.get(d) for a in view.arms)]
    if not present:
        return None
    plt = _plt()
    fig, axes = plt.subplots(1, len(present), figsize=(9, 2.9), squeeze=False)
    for ax, d in zip(axes[0], present):
        values = [v for a in view.arms for v in a.samples.get(d, ())]
        for a in view.arms:
            xs = a.samples.get(d, ())
            if xs:
                x, y = _ecdf(xs)
                ax.step(x, y, where="post", color=ARM_COLORS.get(a.letter, "#333333"), label=arm_label(view, a.letter))
        positive = [v for v in values if v > 0]
        if positive and max(positive) / min(positive) > 30:
            ax.set_xscale("log")
        ax.set_title(LATENCY_TITLES[d], loc="left")
        ax.set_xlabel("ms")
        ax.set_ylim(0, 1.02)
        ax.set_ylabel("fraction of requests (0-1)" if d != "itl" else "fraction of gaps (0-1)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.tight_layout(rect=(0, 0, 1, 0.9))
    fig.legend(handles, labels, loc="upper right", ncol=len(labels), frameon=False, fontsize=8)
    return _png(fig)


def sweep_plot(view) -> bytes | None:
    """Every cell's headline metric, sorted, colored by its worst verdict;
    a failed cell is a cross at the bottom."""
    cells = [(c, c.metric(view.metric)) for c in view.cells]
    good = sorted(((v, c) for c, v in cells if v is not None and math.isfinite(v)), key=lambda t: t[0])
    if not good:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(9, 3.0))
    colors = [STATUS_COLORS.get(_worst(c), "#4c72b0") for _, c in good]
    ax.scatter(range(1, len(good) + 1), [v for v, _ in good], c=colors, s=10 if len(good) > 100 else 28)
    bad = [c for c, v in cells if v is None]
    if bad:
        ax.scatter([len(good) + 1 + i for i in range(len(bad))], [good[0][0]] * len(bad), marker="x", color="#c44e52", s=14,
                   label=f"{len(bad)} without a result")
        ax.legend(loc="best", frameon=False)
    ax.set_xlabel(f"cell number, sorted by {view.metric} ({len(cells)} cells)")
    ax.set_ylabel(axis_label(view.metric))
    ax.set_title(f"{view.metric} of every cell (color: worst verdict)", loc="left")
    return _png(fig)


def _worst(cell) -> str:
    order = ("error", "fail", "inconclusive", "pass")
    found = {s for _, s in cell.verdicts}
    return next((s for s in order if s in found), "")


def axis_plots(view, most: int = 3, values: int = 40) -> list[tuple[str, bytes]]:
    """For each matrix key (at most `most`, each with at most `values`
    values): the headline metric of the cells at each value, as box plots."""
    out = []
    for key, vals in view.axes:
        if len(vals) < 2 or len(vals) > values or len(out) >= most:
            continue
        groups = [[c.metric(view.metric) for c in view.cells if dict(c.values).get(key) == v] for v in vals]
        groups = [[x for x in g if x is not None and math.isfinite(x)] for g in groups]
        if not any(groups):
            continue
        plt = _plt()
        fig, ax = plt.subplots(figsize=(9, 2.8))
        ax.boxplot([g or [math.nan] for g in groups], tick_labels=list(vals), showfliers=True)
        ax.set_xlabel(f"{key} (the matrix value)")
        ax.set_ylabel(axis_label(view.metric))
        ax.set_title(f"{view.metric} by {key} (each box: the cells at that value)", loc="left")
        if len(vals) > 12:
            ax.tick_params(axis="x", labelrotation=60)
        out.append((key, _png(fig)))
    return out


def track_plot(view) -> bytes | None:
    """The headline metric of every promotion of the track, oldest first."""
    rows = [p for p in view.promotions if p.value is not None]
    if not rows:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(9, 2.9))
    xs = list(range(1, len(rows) + 1))
    ax.step(xs, [p.value for p in rows], where="post", color="#4c72b0")
    ax.plot(xs, [p.value for p in rows], "o", color="#4c72b0")
    labels = [f"{p.time[:16].replace('T', ' ')}\n{p.experiment}" for p in rows]
    ax.set_xticks(xs, labels if len(rows) <= 12 else [str(x) for x in xs], fontsize=7)
    ax.set_ylabel(axis_label(view.metric))
    ax.set_xlabel("promotion number, oldest first")
    ax.set_title(f"{view.metric} of each promoted run of track {view.name}", loc="left")
    return _png(fig)
