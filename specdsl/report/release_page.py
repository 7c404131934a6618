"""The parts of an experiment's page a release needs beside the verdict
table (specdsl.report.release gathers them): each pair's value with its
launches, what would decide an INCONCLUSIVE verdict, the promotion and its
reason, the workload, both arms' full stacks and server arguments as
resolved, the host and GPUs, the specdsl version, the identity of what was
measured and the command that reproduces it."""

from __future__ import annotations


from specdsl.report import markup, plots
from specdsl.verdict.decision import RATIO, Status

_SHOWN = 20  # resolved packages shown unfolded beyond the core and the differing ones
_CORE = ("sglang", "vllm", "transformers", "flashinfer-python", "sgl-kernel", "triton", "deep-gemm", "nvidia-nccl-cu12")


def pair_tables(v) -> list[str]:
    """Per paired verdict: each pair's number, launches, values and ratio."""
    out = []
    for x in v.verdicts:
        if not x.pairs or x.decision is None:
            continue
        ratio = x.decision.statistic == RATIO
        unit = plots.unit_of(x.metric or v.metric)
        head = ["pair", "baseline's launch (arm A)", "candidate's launch (arm B)"]
        head += ([f"baseline ({unit})", f"candidate ({unit})", "ratio candidate / baseline"] if ratio
                 else [f"candidate ({unit})"])
        rows = []
        for pv in x.pairs:
            row = [markup.td(pv.pair + 1, True), markup.td("-" if pv.launch_a is None else f"launch {pv.launch_a}", True),
                   markup.td("-" if pv.launch_b is None else f"launch {pv.launch_b}", True)]
            row += ([markup.td(markup.num(pv.baseline), True), markup.td(markup.num(pv.candidate), True), markup.td(markup.num(pv.value), True)] if ratio
                    else [markup.td(markup.num(pv.candidate), True)])
            rows.append(row)
        what = "the ratio of each pair; the estimate is their geometric mean" if ratio else "the candidate's value in each pair"
        out.append(f'<h3 class="pairs" data-check="{markup.esc(x.check)}">{markup.esc(x.check)}: pair by pair ({markup.esc(what)})</h3>')
        out.append(markup.table(head, rows))
    return out


def decide_notes(v) -> list[str]:
    """For each INCONCLUSIVE verdict: the pairs, and the time at this run's
    pace, that a decision would need (the verdict's own estimate)."""
    out = []
    per_pair = v.release.seconds_per_pair if v.release is not None else None
    for x in v.verdicts:
        if x.status is not Status.INCONCLUSIVE or x.decision is None:
            continue
        n = x.decision.n
        need = x.verdict.needed
        if need is None:
            out.append(f'<p class="problem decide" data-check="{markup.esc(x.check)}"><b>{markup.esc(x.check)} is INCONCLUSIVE</b>: '
                       f"its interval holds the threshold {markup.esc(x.decision.op)} {markup.esc(markup.num(x.decision.threshold))} after "
                       f"{n} {markup.esc(x.decision.unit)}; the verdict does not say how many more would decide it.</p>")
            continue
        if x.verdict.needed_beyond:
            when = f"more than {need} pairs: at this noise and effect, no affordable number of pairs decides it"
        else:
            more = max(need - n, 0)
            when = f"about {need} pairs, {more} more than the {n} measured"
            if per_pair is not None:
                when += f", about {_duration(more * per_pair)} at this run's {_duration(per_pair)} per pair"
        out.append(f'<p class="problem decide" data-check="{markup.esc(x.check)}"><b>{markup.esc(x.check)} is INCONCLUSIVE</b>: '
                   f"the interval holds the threshold, so neither PASS nor FAIL is shown at this level. A decision would need "
                   f"{markup.esc(when)} (if the effect is as estimated and the noise as measured; raise the workload's "
                   "<code>max_runs</code> to allow it).</p>")
    return out


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def promotion_section(v, level: str) -> list[str]:
    outcome, reason = v.release.promotion
    return [f"<{level}>Promotion</{level}>", f'<p class="promotion"><b>{markup.esc(outcome)}</b>: {markup.esc(reason)}</p>']


def measured_sections(v, level: str, source: dict | None) -> list[str]:
    """The workload, both arms in full, the host, and what reproduces the run."""
    r = v.release
    out = [f"<{level}>What was measured: the workload</{level}>"]
    out.append(markup.table(["field", "value"], [[markup.td(k), markup.td(val)] for k, val in r.workload]) if r.workload
               else '<p class="note">No workload recorded for this benchmark step.</p>')
    if r.arms:
        out.append(f"<{level}>Both arms as they ran: stacks and servers</{level}>")
        names = [f"{a.letter}: {a.experiment}" for a in r.arms]
        for title, field in (("declared stack", "stack"), ("resolved environment (Python, packages, torch/CUDA/NCCL)", "resolved"),
                             ("server block as declared (engine, model, args, env)", "server"),
                             ("effective configuration, as the server reported it", "effective")):
            out.append(f"<h3>{markup.esc(title)}</h3>")
            sides = [dict(getattr(a, field)) for a in r.arms]
            if field == "resolved" and sum(len(x) for x in sides) > 2 * _SHOWN:
                # the rows that differ and the core ones in view; every package one click away
                core = {k for x in sides for k in x if k == "python" or k.startswith(("torch", "cuda")) or k in _CORE}
                differ = {k for k in set().union(*sides) if len({x.get(k) for x in sides}) > 1}
                out.append(_side_by_side([{k: v for k, v in x.items() if k in core | differ} for x in sides], names))
                total = len(set().union(*sides))
                out.append(f"<details><summary>all {total} resolved packages of both arms</summary>"
                           + _side_by_side(sides, names) + "</details>")
            else:
                out.append(_side_by_side(sides, names))
        out.append("<h3>command line of each arm's server</h3>")
        out.append(markup.table(["arm", "argv"], [[markup.td(n), f"<td><code>{markup.esc(' '.join(a.argv) or '(not recorded)')}</code></td>"]
                                             for n, a in zip(names, r.arms)]))
    out.append(f"<{level}>Where, with what, and how to run it again</{level}>")
    from specdsl import __version__

    rows = list(r.host)
    block = ((source or {}).get("hosts") or {}).get(v.name)
    if block and not any(k == "host block" for k, _ in rows):
        rows.insert(0, ("host block", block))
    rows.append(("specdsl that measured", r.specdsl or "not recorded by this run (recorded since specdsl 0.1.0)"))
    rows.append(("specdsl that drew this page", __version__))
    rows.append(("benchmark identity (digest of both arms' stacks, servers and the workload)", r.identity or "-"))
    if source and source.get("file"):
        rows.append(("spec", source["file"]))
        rows.append(("spec sha256", source.get("sha256", "-")))
        same = (source.get("identities") or {}).get(f"benchmark.{v.name}")
        rows.append(("the spec as read now", "plans this same benchmark identity" if same == r.identity
                     else f"plans another benchmark identity ({same or 'none'}): the spec changed since this run"))
    command = ["specdsl", "apply", source["file"] if source and source.get("file") else "SPEC", "--target", v.name]
    for item in (source or {}).get("vars", ()):
        command += ["-var", item]
    for item in (source or {}).get("var_files", ()):
        command += ["--var-file", item]
    import shlex

    rows.append(("command that reproduces the run", shlex.join(command)))
    out.append(markup.table(["fact", "value"], [[markup.td(k), markup.td(val)] for k, val in rows]))
    return out


def _side_by_side(sides: list[dict], names: list[str]) -> str:
    keys = sorted(set().union(*sides)) if sides else []
    if not keys:
        return '<p class="note">Not recorded.</p>'
    rows, classes = [], []
    for k in keys:
        values = [s.get(k) for s in sides]
        rows.append([f"<td><code>{markup.esc(k)}</code></td>"] + [markup.td("(absent)" if x is None else x) for x in values])
        classes.append("inconclusive" if len(sides) > 1 and len(set(values)) > 1 else "")
    note = '<p class="note">Highlighted: the rows where the arms differ.</p>' if len(sides) > 1 else ""
    return note + markup.table(["key"] + [markup.esc(n) for n in names], rows, classes)
