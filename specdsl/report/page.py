"""The HTML page: one file, inline style, plots as base64 PNG, no script,
nothing fetched. Every value from state is escaped.

`render(view, where)` dispatches on the view's kind; `where` names the
state it was read from (shown in the header: path, serial, lineage), so
the page says which record it is without reading a clock.
"""

from __future__ import annotations

import base64
import math

from specdsl import stats
from specdsl.report import plots, release_page as release
from specdsl.report.bottom_line import bottom_line
from specdsl.report.collections import SweepView, TrackView
from specdsl.report.diagnosis import diagnosis_section
from specdsl.report.gather import LATENCIES, ExperimentView
from specdsl.report.markup import esc, num, table, td  # noqa: F401  (the page's own helpers, also page.esc etc.)
from specdsl.verdict.decision import RATIO, Status

STYLE = """
body{font-family:"DejaVu Sans",Helvetica,Arial,sans-serif;margin:24px auto;max-width:1120px;color:#222;font-size:14px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:3px}
h3{font-size:15px;margin:18px 0 6px}.meta{color:#666;font-size:12px}
table{border-collapse:collapse;margin:6px 0;font-size:13px}th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f4f4f4}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.pass{background:#e3f3e6}.fail{background:#f7dede}.inconclusive{background:#f7f1d8}.error{background:#ebe6f4}
.badge{display:inline-block;padding:1px 7px;border-radius:3px;font-weight:bold;font-size:12px}
pre{background:#f7f7f7;border:1px solid #e3e3e3;padding:8px;white-space:pre-wrap;font-size:12px;max-height:360px;overflow:auto}
img{max-width:100%;display:block;margin:6px 0}.note{color:#555;font-style:italic}
.problem{border-left:4px solid #c44e52;padding:4px 10px;background:#fdf3f3;margin:8px 0}
code{font-size:12px;background:#f4f4f4;padding:0 3px}
.bottom-line{font-size:15px;border-left:4px solid #4c72b0;padding:6px 10px;background:#f3f6fb}
"""


def img(png: bytes | None, alt: str, name: str) -> str:
    if png is None:
        return ""
    data = base64.b64encode(png).decode("ascii")
    return f'<img class="plot" data-plot="{esc(name)}" alt="{esc(alt)}" src="data:image/png;base64,{data}">'


def _page(title: str, where: str, body: list[str]) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{esc(title)}</title><style>{STYLE}</style></head><body>\n"
            f"<h1>{esc(title)}</h1><div class=\"meta\">{esc(where)}</div>\n" + "\n".join(body) + "\n</body></html>\n")


def render(view, where: str, state=None, state_dir=None, cfg=None, source: dict | None = None) -> str:
    """The page of a view from specdsl.report.lookup.gather. With `state`
    and `state_dir`, an experiment's page has the diagnosis of its arms
    (`cfg`, the resolved spec, says what each declared). `source` says where
    the run comes from (`file`, its `sha256`, the benchmark `identity` the
    spec plans now, `vars`: what reproduces it), when the spec is given."""
    context = (state, state_dir, cfg) if state is not None and state_dir is not None else None
    if isinstance(view, TrackView):
        return _page(f"Track {view.name}", where, track_body(view, context, source))
    if isinstance(view, SweepView):
        return _page(f"Sweep {view.name}: {len(view.cells)} cells", where, sweep_body(view))
    if view.measured_as:  # the comparison that measured it, said in the title: not another experiment's page unannounced
        return _page(f"Experiment {view.measured_as}: measured as the baseline arm of {view.name}", where,
                     experiment_body(view, context, source=source))
    return _page(f"Experiment {view.name}", where, experiment_body(view, context, source=source))


# -- an experiment -------------------------------------------------------------

def experiment_body(v: ExperimentView, context=None, level: str = "h2", source: dict | None = None) -> list[str]:
    out = []
    if v.measured_as:
        out.append(f'<p class="problem measured-as">{esc(v.measured_as)} has no benchmark of its own: it was measured only '
                   f"as the baseline arm (A) of {esc(v.name)}'s pairs. This page is that comparison: {esc(v.measured_as)}'s "
                   f"figures are arm A's, and the verdicts and promotion are {esc(v.name)}'s.</p>")
    line = bottom_line(v, plots.unit_of)
    if line:
        out.append(f'<p class="bottom-line"><b>Bottom line:</b> {esc(line)}</p>')
    out.append(f"<p>{summary_line(v)}</p>")
    if v.warnings:
        out.append(f"<{level}>Warnings of this run</{level}>")
        out.append('<p class="note">What apply warned of this run\'s runs, as it printed them; a message many runs said '
                   "is said once, with its count.</p>")
        out.append('<ul class="warnings">' + "".join(f"<li>{esc(w)}</li>" for w in v.warnings) + "</ul>")
    if v.failures:
        out.append(f"<{level}>What failed</{level}>")
        if v.run is None:
            out.append('<p class="problem">This experiment has no benchmark result: the steps below did not complete.</p>')
        for f in v.failures:
            out.append(f'<div class="problem"><b>{esc(f.step)}</b>: {esc(f.status)} (run {esc(f.run)}, {esc(f.time)})'
                       f"<pre>{esc(f.reason)}</pre>"
                       + (f"<div>last lines of <code>{esc(f.log)}</code>:</div><pre>{esc(f.tail)}</pre>" if f.tail else "")
                       + "</div>")
    out.append(f"<{level}>Verdicts</{level}>")
    if v.verdicts:
        out.append(verdict_table(v))
        out.append(img(plots.ratio_plot(v), "each gating verdict: estimate, interval, threshold", "intervals"))
        out += release.decide_notes(v)
        out += release.pair_tables(v)
    elif v.failures:
        out.append('<p class="note">No verdict: the checks of this experiment did not run, because of what failed above.</p>')
    else:
        out.append('<p class="note">No assertion of this experiment has been checked.</p>')
    if v.release is not None:
        out += release.promotion_section(v, level)
    if v.runs:
        out.append(f"<{level}>Runs, in the order they ran</{level}>")
        out.append(img(plots.runs_plot(v), f"{v.metric} per run of both arms", "runs"))
        out.append(runs_table(v))
    if any(a.samples.get(d) for a in v.arms for d in LATENCIES):
        out.append(f"<{level}>Latency distributions</{level}>")
        out.append(img(plots.latency_plot(v), "TTFT, ITL and E2E latency of both arms", "latency"))
        out.append(latency_table(v))
    if v.release is not None:  # after the plots: long tables, the plots stay near the top
        out += release.measured_sections(v, level, source)
    if v.baseline:
        out.append(f"<{level}>Stack and server: what differs between the arms</{level}>")
        if v.differences:
            out.append(table(["what", "key", f"baseline ({esc(v.baseline)})", f"candidate ({esc(v.name)})"],
                             [[td(d.section), td(d.key), td(d.baseline), td(d.candidate)] for d in v.differences]))
        else:
            out.append('<p class="note">No difference recorded between the arms\' stacks, server configurations and effective configurations.</p>')
        out.append('<p class="note">Values that differ between any two launches of one configuration (ports, seeds) are '
                   'not differences and are left out: `specdsl diagnose --all` lists them.</p>')
    passed = bool(v.verdicts) and all(x.status is Status.PASS for x in v.verdicts)
    section = diagnosis_section(context[0], context[1], v, context[2], passed=passed) if context is not None else ""
    if section:
        # on a PASS the differences explain nothing that went wrong: they are differences, not causes
        out.append(f"<{level}>{'Differences between the arms, ranked' if passed else 'Diagnosis'}</{level}>")
        out.append(section)
    for note in v.notes:
        out.append(f'<p class="note">Note: {esc(note)}</p>')
    return out


def summary_line(v: ExperimentView) -> str:
    if v.run is None:
        return "<b>No benchmark result recorded.</b>"
    r = v.run
    pairs = f", {r.runs} pairs" if v.paired and r.runs is not None else (f", {r.runs} runs" if r.runs is not None else "")
    base = f" against <b>{esc(v.baseline)}</b>" + (" (paired, alternating ABBA on one machine)" if v.paired else " (measured apart)") if v.baseline else ""
    return f"Benchmark run <code>{esc(r.id)}</code> ({esc(r.started)} to {esc(r.finished)}{pairs}){base}."


def verdict_table(v: ExperimentView) -> str:
    rows, classes = [], []
    for x in v.verdicts:
        n = x.decision
        interval = "-" if n is None else interval_text(n)
        rows.append([td(x.check), f"<td><code>{esc(x.assertion or '?')}</code></td>",
                     td(num(n.estimate) if n else "-", True), td(estimate_is(n) if n else "-"), td(interval, True),
                     td(interval_is(x) if n else "-"),
                     td(f"{n.op} {num(n.threshold)}" if n else "-", True),
                     f'<td><span class="badge">{esc(x.status.upper())}</span></td>',
                     td(f"{n.n} {n.unit}" if n else "-", True), td(x.detail)])
        classes.append(x.status)
    return table(["check", "assertion", "estimate", "the estimate is", "interval", "the interval is", "threshold", "verdict", "n",
                  "as recorded"], rows, classes)


def estimate_is(n) -> str:
    """What a verdict's estimate is, in the one vocabulary (specdsl.stats)."""
    if n.statistic == RATIO:
        return f"{stats.PAIR_GEOMEAN} (candidate / baseline, {n.n} pairs)"
    return f"{stats.RUN_MEAN} ({n.n} {n.unit})"


def interval_is(x) -> str:
    """What the interval shown is: a PASS or FAIL shows the one-sided bound
    that decided it (the other end open); an INCONCLUSIVE both one-sided
    bounds, together a two-sided interval of level 1 - 2 alpha."""
    if x.decision is None or not math.isfinite(x.decision.level):
        return "as the verdict line says"
    level = x.decision.level * 100
    if x.status is Status.INCONCLUSIVE:
        return (f"two-sided {num(2 * level - 100)}% confidence interval (its two ends are one-sided {num(level)}% bounds; "
                "neither clears the threshold)")
    return f"one-sided {num(level)}% confidence bound (the end that decided; the other end is open)"


def runs_table(v: ExperimentView) -> str:
    rows = [[td(p.order + 1, True), td(plots.arm_label(v, p.arm)), td("-" if p.pair is None else p.pair + 1, True),
             td("-" if p.launch is None else p.launch, True), td(num(p.value), True)] for p in v.runs]
    return table(["#", "arm", "pair", "launch", esc(f"{v.metric} ({plots.unit_of(v.metric)})")], rows)


def _pct(values, q: float) -> float | None:
    if not values:
        return None

    return stats.percentiles(list(values), (q,))[0]


def latency_table(v: ExperimentView) -> str:
    rows = []
    for d in LATENCIES:
        for a in v.arms:
            xs = a.samples.get(d, ())
            if xs:
                rows.append([td(plots.LATENCY_TITLES[d]), td(plots.arm_label(v, a.letter)), td(len(xs), True),
                             td(num(_pct(xs, 50)), True), td(num(_pct(xs, 90)), True), td(num(_pct(xs, 99)), True)])
    return table(["distribution", "arm", "n", "p50 (ms)", "p90 (ms)", "p99 (ms)"], rows)


# -- a sweep -------------------------------------------------------------------

FAILURES_SHOWN = 20


def sweep_body(v: SweepView) -> list[str]:
    counts: dict[str, int] = {}
    for c in v.cells:
        counts[c.status] = counts.get(c.status, 0) + 1
    verdicts: dict[str, int] = {}
    for c in v.cells:
        for _, s in c.verdicts:
            verdicts[s] = verdicts.get(s, 0) + 1
    out = ["<h2>Summary</h2>",
           "<p>Benchmarks: " + ", ".join(f"{n} {esc(s)}" for s, n in sorted(counts.items())) +
           ("; verdicts: " + ", ".join(f"{n} {esc(s)}" for s, n in sorted(verdicts.items())) if verdicts else "") + ".</p>"]
    if v.failures:
        out.append("<h2>What failed</h2>")
        for cell, f in v.failures[:FAILURES_SHOWN]:
            out.append(f'<div class="problem"><b>{esc(cell)}</b> {esc(f.step)}: {esc(f.status)}<pre>{esc(f.reason)}</pre></div>')
        if len(v.failures) > FAILURES_SHOWN:
            out.append(f"<p>... and {len(v.failures) - FAILURES_SHOWN} more (each cell's first line is in the table below).</p>")
    out.append("<h2>Plots</h2>")
    out.append(img(plots.sweep_plot(v), f"{v.metric} of every cell, sorted", "sweep"))
    for key, png in plots.axis_plots(v):
        out.append(img(png, f"{v.metric} by {key}", f"axis-{key}"))
    out.append("<h2>Every cell</h2>")
    keys = [k for k, _ in v.axes]
    checks = sorted({name for c in v.cells for name, _ in c.verdicts})
    extra = [m for m in ("p99_ttft_ms", "p99_itl_ms") if m != v.metric and any(c.metric(m) is not None for c in v.cells)]
    head = [esc(k) for k in keys] + ["benchmark", esc(v.metric)] + [esc(m) for m in extra] + [esc(c) for c in checks] + ["why"]
    rows, classes = [], []
    for c in sorted(v.cells, key=lambda c: (c.metric(v.metric) is None, -(c.metric(v.metric) or 0))):
        d = dict(c.verdicts)
        vals = dict(c.values)
        rows.append([td(vals.get(k, "")) for k in keys] + [td(c.status), td(num(c.metric(v.metric)), True)]
                    + [td(num(c.metric(m)), True) for m in extra]
                    + [f'<td class="{esc(d.get(name, ""))}">{esc(d.get(name, "-"))}</td>' for name in checks] + [td(c.failure)])
        classes.append("")
    out.append(f'<p class="note">Sorted by {esc(v.metric)}, best first; cells without a result last.</p>')
    out.append(table(head, rows, classes))
    out += frontier_section(v)
    return out


def frontier_section(v: SweepView) -> list[str]:
    """A frontier table for each line of the sweep along concurrency or rate:
    the value against throughput and latency percentiles, the SLO (every
    check passed) per row, the highest value that meets it marked."""
    from specdsl.report.frontier import frontier, sweep_frontiers
    from specdsl.report.frontier import cells as frontier_cells

    out = []
    for over, rest, rows in sweep_frontiers(v.cells):
        best, knee = frontier(rows)
        head, body, marks = frontier_cells(over, rows)
        title = f"Frontier along {over}" + (f" ({rest})" if rest else "")
        out.append(f"<h2>{esc(title)}</h2>")
        answer = (f"highest {over} that meets the SLO: {best:g}" if best is not None else f"no {over} meets the SLO")
        answer += f"; the first that does not: {knee:g}" if knee is not None else ""
        out.append(f'<p class="note">SLO: every check of the cell passed. {esc(answer)}.</p>')
        out.append(table([esc(h) for h in head], [[td(c, i > 0) for i, c in enumerate(r)] for r in body],
                         ["pass" if m == "best" else "fail" if m == "knee" else "" for m in marks]))
    return out


# -- a track -------------------------------------------------------------------

def track_body(v: TrackView, context=None, source: dict | None = None) -> list[str]:
    n = len(v.promotions)
    out = [f"<p>{n} promotion{'s' if n != 1 else ''}, oldest first; the headline metric is {esc(v.metric)}.</p>",
           "<h2>Promotions over time</h2>", img(plots.track_plot(v), f"{v.metric} of each promotion", "track")]
    rows = []
    for p in v.promotions:
        verdicts = "<br>".join(f"{esc(c)}: {esc(d)}" for c, d in p.verdicts) or "(none recorded)"
        rows.append([td(p.time), td(p.experiment), f"<td><code>{esc(p.run)}</code></td>", td(num(p.value), True),
                     f"<td>{verdicts}</td>", td(p.previous or "none: the first")])
    out.append(table(["time", "experiment", "run", esc(v.metric), "verdicts it rests on", "previous run"], rows))
    if v.lock:
        out.append(f"<h2>Current stack lock</h2><p class=\"meta\">{esc(v.lock_path)}</p>")
        mine = [(k, val) for k, val in v.lock if not k.startswith("previous.")]
        head = [(k, val) for k, val in mine if not k.startswith("resolved.packages.")]
        packages = [(k[len("resolved.packages."):], val) for k, val in mine if k.startswith("resolved.packages.")]
        previous = [(k[len("previous."):], val) for k, val in v.lock if k.startswith("previous.")]
        out.append(table(["key", "value"], [[td(k), td(val)] for k, val in head]))
        if packages:  # folded: a page to read, not a freeze file
            out.append(f"<details><summary>{len(packages)} resolved packages</summary>"
                       + table(["package", "version"], [[td(k), td(val)] for k, val in packages]) + "</details>")
        if previous:
            out.append(f"<details><summary>the lock it replaced ({len(previous)} keys)</summary>"
                       + table(["key", "value"], [[td(k), td(val)] for k, val in previous]) + "</details>")
    if v.latest is not None:
        out.append(f"<h2>The latest promotion: experiment {esc(v.latest.name)}</h2>")
        out += experiment_body(v.latest, context, level="h3", source=source)
    return out



def interval_text(n) -> str:
    """As the verdict line writes it: open where unbounded (-inf, inf, or 0 for a ratio)."""
    opened = math.isinf(n.low) or (n.statistic == RATIO and n.low == 0)
    return f"{'(' if opened else '['}{num(n.low)}, {num(n.high)}{')' if math.isinf(n.high) else ']'}"
