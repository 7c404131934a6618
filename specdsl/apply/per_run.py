"""The verdict of a statistic of per-run values against a constant
(`stddev(output_throughput) <= 20`, `min(output_throughput) >= 900`,
`p90(duration) <= 20s`): specdsl.model.per_run says which terms are one,
specdsl.verdict.per_run decides them. The values are every valid run of
the candidate: its runs apart, or the candidate's runs of the valid pairs
(specdsl.apply.counts.runs_of)."""

from __future__ import annotations

from specdsl.apply import checks, counts
from specdsl.model.per_run import per_run_term
from specdsl.verdict.decision import Status
from specdsl.verdict.record import Verdict


def decide_per_run(name: str, shape, measured, env: dict, *, alpha: float) -> Verdict | None:
    """The gating verdict of an absolute `shape` whose candidate term is a
    statistic of per-run values; None when it is not one."""
    from specdsl.verdict.per_run import per_run_decision

    found = per_run_term(shape.candidate)
    if found is None or shape.candidate.args[0].parts[0] == "baseline":
        return None
    func, metric = found
    try:
        threshold = float(checks.evaluate(shape.k, None, None, env, []))
    except (checks.Missing, TypeError, ValueError, ZeroDivisionError) as exc:
        return Verdict(name, Status.ERROR, f"cannot compute: {exc}", gating=True)
    runs = counts.runs_of(measured)
    if not runs:
        return Verdict(name, Status.ERROR, "no valid run to read", gating=True)
    missing = [label for label, m in runs if metric not in m]
    if missing:
        return Verdict(name, Status.ERROR, f"{metric} missing from {', '.join(missing)}", gating=True)
    d = per_run_decision(func, [float(m[metric]) for _, m in runs], shape.op, threshold, alpha=alpha,
                         labels=[label for label, _ in runs])
    return Verdict(name, d.verdict, d.line(), gating=True, decision=d)
