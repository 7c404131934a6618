"""From recorded measurements to verdicts with their evidence.

An assertion is read by its shape:
- **ratio**: a candidate term against a baseline term times a constant
  (`output_throughput >= baseline.output_throughput * 1.03`,
  `p99(itl) <= p99(baseline.itl) * 1.10`). Paired (both arms measured here,
  ABBA): each pair's two block values give a log ratio; a one-sided paired t
  interval decides (specdsl.verdict); a track baseline is paired too, its
  promoted configuration rebuilt from the stack lock (graph/track_arm). Not
  paired (the baseline ran on another machine, or `baseline_mode =
  "recorded"` reads a track's recorded result): the baseline's value is
  taken as a constant and the candidate's per-run values decide, and the
  verdict says that drift between the two is not controlled (and, for a
  track, how old the baseline is).
- **difference**: a candidate term against a baseline term plus a constant
  (`p99(ttft) <= p99(baseline.ttft) + 20ms`, `a - baseline.a <= d`).
  Paired: a one-sided t interval on the per-pair differences (candidate
  block minus baseline block) against the constant; not paired: the
  baseline's value plus the constant is the threshold of the candidate's
  per-run values, drift not controlled.
- **absolute**: a candidate term against a constant (`p99(itl) <= 50ms`):
  a t interval on the term's per-run (per-block) values.
- anything else (`effective.*`, `var.*`, boolean logic): exact.
Ratio and absolute assertions are *gating*: those of one experiment are
corrected together (Holm), each decided at its Holm level; with adaptive
pairs, at the look's level of the sequential schedule. A gating assertion
on a result with a client-bound run is ERROR (the client, not the server,
may have set the numbers), and so is a paired ratio or difference whose
arms ran at different prefix-cache hit rates (apply.cache_hits); a run far
from the others of its arm is named in the detail (specdsl.verdict.outliers).
"""

from __future__ import annotations

from typing import Any

import attrs

from specdsl.apply import checks, counts
from specdsl.apply.checks import Results
from specdsl.model.assert_shape import shape_of
from specdsl.paired_result import PairedResult
from specdsl.plan.looks import ALPHA, schedule_for
from specdsl.stats import significant
from specdsl.verdict.decision import Status
from specdsl.verdict.record import Verdict

# beyond this many pairs, "a decision would need more than N pairs"
MOST_PAIRS = 1000


@attrs.frozen
class Measured:
    """What an experiment's checks read: paired blocks, or runs apart."""

    mine: Results | None
    baseline: Results | None
    pairs: tuple[tuple[Results, Results], ...] = ()  # (baseline block, candidate block) per complete pair
    candidate_runs: tuple[Results, ...] = ()  # one Results per run, when not paired
    baseline_note: str = ""  # for a baseline not measured alongside
    baseline_missing: str = ""  # why there is no baseline to compare with (the ERROR's detail)
    client_bound: str = ""  # a run the client may have limited (specdsl.bench.monitor): no gating verdict on it
    cache_mismatch: str = ""  # the arms' prefix-cache hit rates differ (apply.cache_hits): no comparison decided
    looks: dict = attrs.field(factory=dict)  # the look schedule the pairs were measured under (result.json "looks")
    extra: int = 0  # pairs beyond max_runs this apply may measure (`apply --more N`)
    # (label, metrics) of every candidate run, valid or not (specdsl.apply.counts.every_run): what
    # `failed`/`completed` assertions read; empty: they read the valid runs
    every_run: tuple = ()


def client_bound_of(*docs: dict | None) -> str:
    """The first `client-bound: ...` warning of the valid runs of result
    documents (an invalid run is not a measurement), as `run N: ...`, or ''."""
    for doc in docs:
        for run in (doc or {}).get("runs", ()):
            if run.get("invalid"):
                continue
            for w in run.get("warnings", ()):
                if str(w).startswith("client-bound:"):
                    return f"run {run.get('index', '?')}: {w}"
    return ""


def blocks_of(doc: dict, effective: dict) -> tuple[Results, Results, tuple[tuple[Results, Results], ...]]:
    """(all baseline runs, all candidate runs, per pair blocks) of a paired
    result; a pair with an invalid run is left out (specdsl.bench.validity)."""
    from specdsl.bench.validity import valid_document

    paired = PairedResult.of(valid_document(doc))
    runs = {r["index"]: r for r in paired.runs}

    def results(indexes) -> Results:
        return Results.from_bench({"runs": [runs[i] for i in indexes if i in runs]}, effective)

    pairs, a_all, b_all = [], [], []
    for p in paired.pairs:
        by_arm = {b.arm: list(b.runs) for b in p.blocks}
        pairs.append((results(by_arm.get("A", ())), results(by_arm.get("B", ()))))
        a_all += by_arm.get("A", [])
        b_all += by_arm.get("B", [])
    eff_a = dict(paired.effective_of("A"))
    return (attrs.evolve(results(a_all), effective=eff_a), results(b_all), tuple(pairs))


def launch_mean(block: Results) -> Results:
    """One arm's launch in a pair as the verdict reads it: its runs' scalar
    metrics as their mean (docs/verdicts.md, "What `runs` means in a paired
    comparison": an arm's one value in its pair is the mean of its launch's
    runs, as the simulations of its error rates model it; a bare metric of
    several runs reads their median, which of a launch whose runs trend is
    its middle run alone), per-request samples pooled as they were."""
    if len(block.runs) < 2:
        return block
    keys = {k for r in block.runs for k in r}
    mean = {k: sum(r[k] for r in block.runs if k in r) / sum(1 for r in block.runs if k in r) for k in keys}
    return attrs.evolve(block, runs=(mean,))


def pair_points(shape, pairs, env: dict) -> list[tuple[float | None, float]]:
    """Pair by pair, (the baseline arm's value, the candidate arm's value)
    of a paired assertion as its verdict reads them: each arm's launch as
    the mean of its runs (`launch_mean`), for a ratio, a difference and an
    absolute bound alike (the baseline's None for an absolute bound). The
    one reading of a pair: `decide` and the report (specdsl.report.gather)
    both take it from here."""
    if shape.kind == "ratio":
        return [(_value(shape.baseline, None, launch_mean(a), env), _value(shape.candidate, launch_mean(b), None, env))
                for a, b in pairs]
    out: list[tuple[float | None, float]] = []
    for a, b in pairs:
        cand = _value(shape.candidate, launch_mean(b), None, env)  # the candidate's first: its error is the one said
        out.append((_value(shape.baseline, None, launch_mean(a), env) if shape.kind == "difference" else None, cand))
    return out


def _value(term, mine, baseline, env) -> float:
    return float(checks.evaluate(term, mine, baseline, env, []))


def _constant(expr, env) -> float:
    return float(checks.evaluate(expr, None, None, env, []))


def decide(name: str, expr, measured: Measured, env: dict, *, alpha: float, schedule=None) -> Verdict:
    """The verdict of one assertion at level `alpha` (its Holm level)."""
    from specdsl import verdict as v

    counted = counts.decide_count(name, expr, counts.runs_of(measured), env, measured.every_run)  # exact
    if counted is not None:
        return counted
    shape = shape_of(expr)
    if shape.kind == "exact":
        return checks.check(name, expr, measured.mine, measured.baseline, env)
    if measured.client_bound:
        return Verdict(name, Status.ERROR, f"not decided: the client may have limited the numbers ({measured.client_bound})",
                       gating=True)
    if measured.cache_mismatch and measured.pairs and shape.kind in ("ratio", "difference"):
        return Verdict(name, Status.ERROR, f"not decided: {measured.cache_mismatch}", gating=True)
    try:
        if shape.kind == "ratio":
            k = _constant(shape.k, env) if shape.k is not None else 1.0
            if measured.pairs:
                pairs = pair_points(shape, measured.pairs, env)
                if schedule is not None and len(pairs) >= 2:
                    d = v.sequential_decision(pairs, shape.op, k, schedule, alpha=alpha)
                else:
                    d = v.ratio_decision(pairs, shape.op, k, alpha=alpha)
                labels = _pair_labels(len(pairs))
                flagged = _joined(v.describe_outliers([a for a, _ in pairs], "arm A (the baseline)", labels),
                                  v.describe_outliers([b for _, b in pairs], "arm B (the candidate)", labels))
                needed, beyond = _needed(pairs, d, k)
                return _verdict(name, d, note=_joined(_needed_text(needed, beyond), flagged), noise=_noise(pairs),
                                needed=needed, beyond=beyond)
            if measured.baseline is None:
                return Verdict(name, Status.ERROR, measured.baseline_missing or "the baseline has no results", gating=True)
            base = _value(shape.baseline, None, measured.baseline, env)
            values = [_value(shape.candidate, r, None, env) for r in measured.candidate_runs]
            d = v.absolute_decision(values, shape.op, base * k, alpha=alpha)
            note = measured.baseline_note or "the baseline was not measured alongside: drift between them is not controlled"
            return _verdict(name, d,
                            note=_joined(f"baseline value {significant(base, 4)} x {k:g}; {note}", v.describe_outliers(values, "the candidate's runs")))
        if shape.kind == "difference":
            return _difference(name, shape, measured, env, alpha)
        from specdsl.apply.per_run import decide_per_run

        spread = decide_per_run(name, shape, measured, env, alpha=alpha)  # stddev/min/max/pQ of per-run values
        if spread is not None:
            return spread
        threshold = _constant(shape.k, env)
        if measured.pairs:
            values = [cand for _base, cand in pair_points(shape, measured.pairs, env)]
            flagged = v.describe_outliers(values, "the candidate's blocks", _pair_labels(len(values)))
        else:
            values = [_value(shape.candidate, r, None, env) for r in measured.candidate_runs]
            flagged = v.describe_outliers(values, "the candidate's runs")
        return _verdict(name, v.absolute_decision(values, shape.op, threshold, alpha=alpha), note=flagged)
    except checks.Missing as exc:
        return Verdict(name, Status.ERROR, str(exc), gating=True)
    except (TypeError, ValueError, ZeroDivisionError) as exc:
        return Verdict(name, Status.ERROR, f"cannot compute: {exc}", gating=True)


def _difference(name: str, shape, measured: Measured, env: dict, alpha: float) -> Verdict:
    """A difference test: paired differences, or the candidate's runs
    against the baseline's value plus the offset."""
    from specdsl import verdict as v

    d = _constant(shape.k, env)
    if measured.pairs:
        diffs = [cand - base for base, cand in pair_points(shape, measured.pairs, env)]
        flagged = v.describe_outliers(diffs, "the pairs' differences", _pair_labels(len(diffs)))
        return _verdict(name, v.absolute_decision(diffs, shape.op, d, alpha=alpha),
                        note=_joined("paired differences (candidate block - baseline block)", flagged))
    if measured.baseline is None:
        return Verdict(name, Status.ERROR, measured.baseline_missing or "the baseline has no results", gating=True)
    base = _value(shape.baseline, None, measured.baseline, env)
    values = [_value(shape.candidate, r, None, env) for r in measured.candidate_runs]
    note = measured.baseline_note or "the baseline was not measured alongside: drift between them is not controlled"
    return _verdict(name, v.absolute_decision(values, shape.op, base + d, alpha=alpha),
                    note=_joined(f"baseline value {significant(base, 4)} {'+' if d >= 0 else '-'} {abs(d):g}; {note}",
                                 v.describe_outliers(values, "the candidate's runs")))


def _pair_labels(n: int) -> list[str]:
    """How messages name a comparison's pairs: from 1, as progress does."""
    return [f"pair {i + 1}" for i in range(n)]


def _joined(*notes: str) -> str:
    return "; ".join(n for n in notes if n)


def _needed(pairs, d, k: float) -> tuple[int | None, bool]:
    """For an undecided ratio: (about how many pairs a decision would need,
    if the effect is as estimated and the noise as measured; whether it is
    more than that many). (None, False): not an undecided ratio, or no
    estimate of it."""
    from specdsl import verdict as v

    if d.verdict is not Status.INCONCLUSIVE or len(pairs) < 2 or not d.estimate > 0:
        return None, False
    try:
        sd = v.noise_of(pairs)
        need = v.pairs_needed(sd, d.estimate / k if d.estimate != k else 1.0000001, alpha=ALPHA, max_pairs=MOST_PAIRS)
    except ValueError:
        return None, False
    return (MOST_PAIRS, True) if need is None else (need, False)


def _needed_text(needed: int | None, beyond: bool) -> str:
    if needed is None:
        return ""
    return f"a decision would need {'more than' if beyond else 'about'} {needed} pairs at this noise and effect"


def _noise(pairs) -> float | None:
    """The sd of the pairs' log ratios (specdsl.verdict.noise_of): what the
    check records with its verdict, so that a plan after an undecided apply
    estimates from the noise these pairs measured. None below 2 pairs."""
    from specdsl import verdict as v

    try:
        return v.noise_of(pairs)
    except ValueError:
        return None


def _verdict(name: str, d, *, note: str = "", noise: float | None = None, needed: int | None = None,
             beyond: bool = False) -> Verdict:
    """A gating verdict with the Decision behind it (`noise`: paired ratios
    only, the sd of their log ratios; `needed`: an undecided one's pairs to
    a decision, `beyond`: more than that)."""
    detail = d.line() + (f"; {note}" if note else "")
    return Verdict(name, d.verdict, detail, gating=True, decision=d, noise=noise, needed=needed, needed_beyond=beyond)


def judge_experiment(exp, measured: Measured, env: dict, *, adaptive: bool = False) -> dict[str, Verdict]:
    """Every assertion of `exp`, the gating ones corrected together (Holm)."""
    from specdsl.verdict import holm

    schedule = schedule_for(exp.workload, measured.looks, measured.extra) if adaptive and measured.pairs else None
    gating = [a for a in exp.asserts if shape_of(a.expr).kind != "exact" and not counts.is_count(a.expr)]
    out: dict[str, Verdict] = {}
    if gating:
        found: dict[str, Verdict] = {}

        def tester(a):
            def at(level):
                found[a.name] = decide(a.name, a.expr, measured, env, alpha=level, schedule=schedule)
                return found[a.name].decision  # None (not decided from numbers): never a PASS
            return at

        result = holm([tester(a) for a in gating], ALPHA, side="pass")
        for a, level in zip(gating, result.alphas):
            # holm decided each last at the level its step-down ends on for it: that decision is its verdict
            verdict = found[a.name]
            if len(gating) > 1:
                verdict = attrs.evolve(verdict, detail=f"{verdict.detail}; Holm over {len(gating)} gating assertions: level {1 - level:.4g}")
            out[a.name] = verdict
    for a in exp.asserts:
        if a.name not in out:
            out[a.name] = decide(a.name, a.expr, measured, env, alpha=ALPHA)
    return out


def undecided(verdicts: dict[str, Verdict]) -> bool:
    """Whether more pairs could decide something: a gating verdict is inconclusive."""
    return any(v.gating and v.status is Status.INCONCLUSIVE for v in verdicts.values())
