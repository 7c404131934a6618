"""Soundness of the verdicts, by simulation: how often does each rule pass
a candidate that is not better, and how often does it pass one that is?

    python benchmarks/bench_verdicts.py [--applies 10000] [--null-walks 500000] [--seed 1] [--fixed 6] [--jobs 2]
                                        [--cold 1.03,1.3] [--launches-only] [--no-write]

Each simulated apply measures a baseline (A) and a candidate (B) as
adjacent pairs in ABBA/BAAB order (pairs AB, BA, BA, AB, AB, BA, ...), one
value per run (a throughput, say):

    value = truth_arm * (1 + slope * slot) * exp(cv * z) * (0.7 with probability 5%)

where slot is the run's position in the apply, z standard normal, and the
linear drift rises 5% over the apply's runs (rising: the direction in which
an odd number of ABBA pairs, whose first pair runs the candidate later,
favours the candidate; the worst case for `>=`). Outliers: 5% of runs, of
either arm, at 0.7 of their value (a run that hit a hiccup).

Scenarios, per noise model (per-run CV 1%, 2%, 5%, with drift and outliers,
and the same CVs clean):
- boundary: the truth is exactly at the threshold (A/A, `cand >= base * 1.0`);
  a PASS is a false pass (goal <= 5%), as is a FAIL a false fail;
- beyond: the truth 0.98 against `>= base * 1.0`;
- power: the truth +6% against `>= base * 1.03` (3% beyond the threshold).

Rules: the fixed-n paired t (`ratio_decision` at `--fixed` pairs), the
adaptive schedule (`sequential_decision`, LookSchedule(3, 2, 12), stop at
the first PASS or FAIL), the naive median comparison specdsl used before
(PASS when median(cand) >= median(base) * k, on the same runs), and a
percentile bootstrap of the mean log ratio at 3 and 5 pairs. "Fixed n at
equal power" is the fewest fixed pairs whose power reaches the adaptive
rule's (the fixed-n t rule vectorised with numpy for n = 2..40, checked
equal to `ratio_decision` at `--fixed`).

The launch table (`--launches-only` runs just it; `--cold 1.03,1.3` the
cold starts): run noise CV 2%, and a launch effect, a factor exp(s_L z)
drawn once per launch and shared by its runs, with s_L from 0 to 3 times
the run sd; a cold start divides the first run after a launch by a
factor. Two designs:
- today's chain (main at 320c718): ABBA BAAB, one run per block, a launch
  at every switch of arm (A | B B | A | B | A A | B: 1.5 launches a pair,
  neighbouring pairs share one), analysed as independent pairs, and
  `warmup = 1` request does not cover the cold start;
- issue 22's: each pair one fresh launch of each arm (AB or BA, one server
  at a time), `block` runs per launch averaged within it, the warm-up
  taking the cold start (and, as a check, the same with a cold start the
  warm-up missed, its factor drawn per launch).
The adaptive rule is vectorised (`adaptive_vectorised`, checked equal to
`sequential_decision` look by look on every run).

Prints the tables and, unless --no-write, replaces the sections
"Verdicts: soundness (simulation)" and "Verdicts: the launch as the unit
(simulation)" of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from specdsl.verdict import LookSchedule, Status, ratio_decision, sequential_decision  # noqa: E402
from specdsl.verdict import _dist  # noqa: E402

SECTION = "## Verdicts: soundness (simulation)"
CVS = (0.01, 0.02, 0.05)
DRIFT = 0.05
OUTLIER_P, OUTLIER_X = 0.05, 0.7
SCHEDULE = LookSchedule(first=3, step=2, max=12)  # the default spending (obf)
SCENARIOS = {"boundary": (1.0, 1.0), "beyond": (0.98, 1.0), "power": (1.06, 1.03)}  # truth, k


def simulate(rng: np.random.Generator, applies: int, pairs: int, truth: float, cv: float, stressed: bool) -> np.ndarray:
    """(applies, pairs, 2) values: [..., 0] the baseline's, [..., 1] the candidate's."""
    runs = 2 * pairs
    b_first = np.array([(i % 4) in (0, 3) for i in range(pairs)])  # AB, BA, BA, AB, ...
    slot_a = np.where(b_first, 2 * np.arange(pairs), 2 * np.arange(pairs) + 1)
    slot_b = np.where(b_first, 2 * np.arange(pairs) + 1, 2 * np.arange(pairs))
    noise = np.exp(cv * rng.standard_normal((applies, pairs, 2)))
    if stressed:
        slope = DRIFT / (runs - 1)
        drift = np.stack([1 + slope * slot_a, 1 + slope * slot_b], axis=-1)[None, :, :]
        hiccup = np.where(rng.random((applies, pairs, 2)) < OUTLIER_P, OUTLIER_X, 1.0)
    else:
        drift, hiccup = 1.0, 1.0
    arms = np.array([1.0, truth])[None, None, :]
    return arms * drift * noise * hiccup


def fixed_rule(values: np.ndarray, k: float) -> list[Status]:
    return [ratio_decision(p.tolist(), ">=", k).verdict for p in values]


def adaptive_rule(values: np.ndarray, k: float, schedule: LookSchedule) -> tuple[list[Status], list[int]]:
    verdicts, used = [], []
    for p in values:
        pairs = p.tolist()
        for n in schedule.looks():
            d = sequential_decision(pairs[:n], ">=", k, schedule)
            if d.verdict is not Status.INCONCLUSIVE:
                break
        verdicts.append(d.verdict)
        used.append(n)
    return verdicts, used


def t_pass_vectorised(values: np.ndarray, k: float, alpha: float = 0.05) -> np.ndarray:
    """The fixed-n PASS rule of ratio_decision, on arrays (for the power curve)."""
    d = np.log(values[..., 1] / values[..., 0])
    n = d.shape[1]
    crit = _dist.t_quantile(1 - alpha, n - 1)
    lo = d.mean(axis=1) - crit * d.std(axis=1, ddof=1) / math.sqrt(n)
    return lo >= math.log(k)


def median_pass(values: np.ndarray, k: float) -> np.ndarray:
    return np.median(values[..., 1], axis=1) >= np.median(values[..., 0], axis=1) * k


def bootstrap_pass(rng: np.random.Generator, values: np.ndarray, k: float, reps: int = 2000, alpha: float = 0.05) -> np.ndarray:
    """Percentile bootstrap of the mean log ratio: PASS when its alpha
    quantile is >= log k."""
    d = np.log(values[..., 1] / values[..., 0])
    out = np.empty(len(d), dtype=bool)
    for start in range(0, len(d), 500):
        chunk = d[start:start + 500]
        idx = rng.integers(0, chunk.shape[1], size=(len(chunk), reps, chunk.shape[1]))
        means = np.take_along_axis(chunk[:, None, :].repeat(reps, 1), idx, axis=2).mean(axis=2)
        out[start:start + 500] = np.quantile(means, alpha, axis=1) >= math.log(k)
    return out


def share(verdicts, which: Status) -> float:
    return sum(v is which for v in verdicts) / len(verdicts)


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def model_name(cv: float, stressed: bool) -> str:
    return f"CV {cv:.0%}" + (", drift 5%, outliers 5% x0.7" if stressed else ", clean")


def scenario_task(task: tuple[int, int, float, bool, int, str]) -> dict:
    """Every rule on one noise model and scenario (own random stream: the
    figures do not depend on --jobs)."""
    seed, applies, cv, stressed, nfixed, scenario = task
    rng = np.random.default_rng([seed, int(cv * 1000), int(stressed), list(SCENARIOS).index(scenario)])
    truth, k = SCENARIOS[scenario]
    fixed = fixed_rule(simulate(rng, applies, nfixed, truth, cv, stressed), k)
    verdicts, used = adaptive_rule(simulate(rng, applies, SCHEDULE.max, truth, cv, stressed), k, SCHEDULE)
    naive = float(median_pass(simulate(rng, applies, nfixed, truth, cv, stressed), k).mean())
    return {"fixed_pass": share(fixed, Status.PASS), "fixed_fail": share(fixed, Status.FAIL),
            "adaptive_pass": share(verdicts, Status.PASS), "adaptive_fail": share(verdicts, Status.FAIL),
            "adaptive_pairs": statistics.fmean(used), "naive_pass": naive}


def curve_task(task: tuple[int, int, float, bool]) -> dict[int, float]:
    """Fixed-n power on the power scenario, n = 2..40."""
    seed, applies, cv, stressed = task
    rng = np.random.default_rng([seed, 3, int(cv * 1000), int(stressed)])
    return {n: float(t_pass_vectorised(simulate(rng, applies, n, 1.06, cv, stressed), 1.03).mean()) for n in range(2, 41)}


def spending_task(task: tuple[int, int, str, float, bool]) -> dict:
    seed, applies, spending, cv, stressed = task
    rng = np.random.default_rng([seed, 7, SPENDINGS_ORDER.index(spending), int(cv * 1000), int(stressed)])
    sched = LookSchedule(first=3, step=2, max=12, spending=spending)
    b = adaptive_rule(simulate(rng, applies, 12, 1.0, cv, stressed), 1.0, sched)
    p = adaptive_rule(simulate(rng, applies, 12, 1.06, cv, stressed), 1.03, sched)
    return {"spending": spending, "stressed": stressed, "cv": cv,
            "levels": [sched.alpha_at(i) for i in range(len(sched.looks()))],
            "false_pass": share(b[0], Status.PASS), "power": share(p[0], Status.PASS),
            "pairs": (statistics.fmean(b[1]), statistics.fmean(p[1]))}


def null_walks_task(task: tuple[int, int, str, str]) -> dict:
    """Null walks of normal log ratios (no drift, no outliers: the rule
    alone), vectorised: the share that PASS at some look, with the levels
    calibrated on t statistics (what specdsl uses) or the z boundaries'
    nominal levels (the usual shortcut)."""
    from specdsl.verdict import group_sequential_bounds

    seed, walks, spending, levels_from = task
    sched = LookSchedule(first=3, step=2, max=12, spending=spending)
    looks = sched.looks()
    if levels_from == "t":
        levels = [sched.alpha_at(i) for i in range(len(looks))]
    else:
        incs = tuple(sched.spent_at(i) for i in range(len(looks)))
        levels = [_dist.norm_sf(c) for c in group_sequential_bounds(tuple(map(float, looks)), incs)]
    crit = [_dist.t_quantile(1 - a, n - 1) for a, n in zip(levels, looks)]
    rng = np.random.default_rng([seed, 13, SPENDINGS_ORDER.index(spending), levels_from == "t"])
    passed = 0
    for _ in range(walks // 100_000):
        d = rng.standard_normal((100_000, sched.max))
        running = np.ones(len(d), bool)
        hit = np.zeros(len(d), bool)
        for n, c in zip(looks, crit):
            m, se = d[:, :n].mean(1), d[:, :n].std(1, ddof=1) / math.sqrt(n)
            p, f = running & (m - c * se >= 0), running & (m + c * se < 0)
            hit |= p
            running &= ~(p | f)
        passed += int(hit.sum())
    return {"spending": spending, "from": levels_from, "false_pass": passed / walks, "walks": walks}


def bootstrap_task(task: tuple[int, int, int, bool]) -> dict:
    seed, applies, n, stressed = task
    rng = np.random.default_rng([seed, 11, n, int(stressed)])
    boot = float(bootstrap_pass(rng, simulate(rng, applies, n, 1.0, 0.02, stressed), 1.0).mean())
    t = share(fixed_rule(simulate(rng, applies, n, 1.0, 0.02, stressed), 1.0), Status.PASS)
    return {"n": n, "stressed": stressed, "bootstrap": boot, "t": t}


SPENDINGS_ORDER = ("obf", "pocock", "bonferroni")  # the default first
SPENDING_MODELS = [(0.01, False), (0.02, False), (0.05, False), (0.02, True)]


def run(args) -> list[str]:
    from concurrent.futures import ProcessPoolExecutor

    models = [(cv, stressed) for stressed in (True, False) for cv in CVS]
    spend = [(args.seed, args.applies // 2, sp, cv, stressed) for cv, stressed in SPENDING_MODELS for sp in SPENDINGS_ORDER
             if not (sp == SCHEDULE.spending and cv in CVS)]  # the default's rows come from the main table
    nulls = [(args.seed, args.null_walks, sp, src) for sp in ("obf", "pocock") for src in ("z", "t")]
    boots = [(args.seed, args.applies, n, stressed) for n in (3, 5) for stressed in (True, False)]
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        fm = {(cv, st, sc): pool.submit(scenario_task, (args.seed, args.applies, cv, st, args.fixed, sc))
              for cv, st in models for sc in SCENARIOS}
        fc = {(cv, st): pool.submit(curve_task, (args.seed, args.applies, cv, st)) for cv, st in models}
        fs = [pool.submit(spending_task, t) for t in spend]
        fb = [pool.submit(bootstrap_task, t) for t in boots]
        fn = [pool.submit(null_walks_task, t) for t in nulls]
        results = [dict({sc: fm[cv, st, sc].result() for sc in SCENARIOS}, model=model_name(cv, st),
                        curve=fc[cv, st].result(), cv=cv, stressed=st) for cv, st in models]
        spendings, bootstraps, null_walks = [f.result() for f in fs], [f.result() for f in fb], [f.result() for f in fn]
    # the default spending's rows are the main table's adaptive rule on CV 2%
    curves = {(r["cv"], r["stressed"]): r["curve"] for r in results}
    for r in results:
        if (r["cv"], r["stressed"]) in SPENDING_MODELS:
            spendings.append({"spending": SCHEDULE.spending, "stressed": r["stressed"], "cv": r["cv"],
                              "levels": [SCHEDULE.alpha_at(i) for i in range(len(SCHEDULE.looks()))],
                              "false_pass": r["boundary"]["adaptive_pass"], "power": r["power"]["adaptive_pass"],
                              "pairs": (r["boundary"]["adaptive_pairs"], r["power"]["adaptive_pairs"])})
    spendings.sort(key=lambda r: (SPENDING_MODELS.index((r["cv"], r["stressed"])), SPENDINGS_ORDER.index(r["spending"])))

    # the vectorised rule used for the power curves is ratio_decision's
    check = simulate(np.random.default_rng(args.seed), 2000, args.fixed, 1.03, 0.02, True)
    assert list(t_pass_vectorised(check, 1.0)) == [v is Status.PASS for v in fixed_rule(check, 1.0)]

    se = math.sqrt(0.05 * 0.95 / args.applies)
    main_rows = [
        "| noise model | rule | false pass at the boundary | false fail at the boundary | false pass at 0.98 vs >= 1.0 "
        "| power: +6% vs >= 1.03 | mean pairs (boundary / power) |",
        "|---|---|---|---|---|---|---|",
    ]
    eff_rows = [
        "| noise model | adaptive: power | adaptive: mean pairs | fixed n at equal power | fixed-n power (n: power) |",
        "|---|---|---|---|---|",
    ]
    for r in results:
        b, o, p = r["boundary"], r["beyond"], r["power"]
        main_rows.append(f"| {r['model']} | paired t, fixed {args.fixed} pairs | {pct(b['fixed_pass'])} | {pct(b['fixed_fail'])} "
                         f"| {pct(o['fixed_pass'])} | {pct(p['fixed_pass'])} | {args.fixed} / {args.fixed} |")
        main_rows.append(f"| | paired t, adaptive | {pct(b['adaptive_pass'])} | {pct(b['adaptive_fail'])} "
                         f"| {pct(o['adaptive_pass'])} | {pct(p['adaptive_pass'])} "
                         f"| {b['adaptive_pairs']:.1f} / {p['adaptive_pairs']:.1f} |")
        main_rows.append(f"| | naive medians (before) | **{pct(b['naive_pass'])}** | - | {pct(o['naive_pass'])} "
                         f"| {pct(p['naive_pass'])} | {args.fixed} / {args.fixed} |")
        curve = r["curve"]
        target = p["adaptive_pass"]
        equal = next((n for n in sorted(curve) if curve[n] >= target), None)
        shown = ", ".join(f"{n}: {pct(curve[n])}" for n in (3, 6, 9, 12, 20, 40))
        eff_rows.append(f"| {r['model']} | {pct(target)} | {p['adaptive_pairs']:.1f} | "
                        f"{equal if equal else 'none up to 40'} | {shown} |")
        print(*main_rows[-3:], eff_rows[-1], sep="\n")

    sp_rows = ["| noise model | spending | nominal level at 3, 5, 7, 9, 11, 12 pairs | false pass at the boundary | power "
               "| mean pairs (boundary / power) | fixed pairs for the same power |", "|---|---|---|---|---|---|---|"]
    for r in spendings:
        levels = ", ".join(f"{x:.4f}" for x in r["levels"])
        curve = curves[r["cv"], r["stressed"]]
        equal = next((n for n in sorted(curve) if curve[n] >= r["power"]), None)
        sp_rows.append(f"| {model_name(r['cv'], r['stressed'])} | {r['spending']} | {levels} | {pct(r['false_pass'])} "
                       f"| {pct(r['power'])} | {r['pairs'][0]:.1f} / {r['pairs'][1]:.1f} | {equal or 'none up to 40'} |")
        print(sp_rows[-1])

    nw_rows = ["| spending | levels from | false pass of null walks |", "|---|---|---|"]
    for r in null_walks:
        src = "t statistics (specdsl)" if r["from"] == "t" else "z boundaries' nominal levels (the shortcut)"
        nw_rows.append(f"| {r['spending']} | {src} | {100 * r['false_pass']:.2f}% |")
        print(nw_rows[-1])
    nw_se = 100 * math.sqrt(0.05 * 0.95 / args.null_walks)

    bo_rows = ["| pairs | noise model | percentile bootstrap of the mean log ratio | paired t |", "|---|---|---|---|"]
    for r in bootstraps:
        model = "CV 2%, drift + outliers" if r["stressed"] else "CV 2%, clean"
        bo_rows.append(f"| {r['n']} | {model} | {pct(r['bootstrap'])} | {pct(r['t'])} |")
        print(bo_rows[-1])

    return [
        f"Share of applies, {args.applies:,} per cell (one binomial standard error at 5% is {100 * se:.2f} points). "
        f"Fixed: `ratio_decision` at {args.fixed} pairs. Adaptive: `sequential_decision` under "
        f"`LookSchedule(first=3, step=2, max=12)` ({SCHEDULE.describe()}), stopping at the first PASS or FAIL. "
        f"Naive medians: PASS when median(cand) >= median(base) * k over the same {args.fixed} runs each, "
        "what specdsl's checks did before.", "",
        *main_rows, "",
        "The adaptive rule against fixed counts on the power scenario (+6% vs `>= 1.03`): the fewest fixed pairs "
        "whose power (same one-sided 5% rule, so the same error rates) reaches the adaptive rule's. With outliers "
        "a longer fixed run is more likely to contain one, so fixed-n power need not grow with n.", "",
        *eff_rows, "",
        f"Alpha spending over the looks (same schedule; {args.applies // 2:,} applies per cell for the other "
        "spendings, the default's rows are the main table's); \"fixed pairs for the same power\" reads the fixed-n "
        "power curve of the same noise model:", "",
        *sp_rows, "",
        f"Why the levels are calibrated on t statistics: {args.null_walks:,} null walks of normal log ratios per row "
        f"(the rule alone, no drift or outliers; one standard error {nw_se:.3f} points) under the same schedule:", "",
        *nw_rows, "",
        "A percentile bootstrap (2,000 resamples, one-sided 95% lower bound of the mean log ratio) at few pairs, "
        "against the paired t, at the boundary (false passes):", "",
        *bo_rows, "",
    ]


LAUNCH_SECTION = "## Verdicts: the launch as the unit (simulation)"
LAUNCH_CV = 0.02  # run noise of the launch table
LAUNCH_RATIOS = (0.0, 0.5, 1.0, 2.0, 3.0)  # launch sd / run sd


def launch_designs(colds: tuple[float, ...]) -> tuple[str, ...]:
    """Today's chain without and with each cold start; the new design at
    `block` runs per launch (the warm-up takes the cold start), and at
    block 2 with the largest cold start missed by the warm-up."""
    return ("chain, no cold start", *(f"chain, cold start x{c:g}" for c in colds), "new, block 1", "new, block 2",
            "new, block 4", "new, block 2, cold start not warmed")


def chain_layout(pairs: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Today's walk (main at 320c718): the arm of each of the 2 * pairs runs
    in ABBA BAAB order (0 = A, 1 = B), its launch (a new one at every switch
    of arm, so neighbouring pairs share one), and whether it is the first
    run of its launch (`warmup = 1` request does not cover a cold start)."""
    arms = np.array([a for i in range(pairs) for a in ((0, 1) if i % 4 in (0, 3) else (1, 0))])
    switch = np.concatenate([[True], arms[1:] != arms[:-1]])
    return arms, np.cumsum(switch) - 1, switch


def simulate_chain(rng, applies: int, pairs: int, truth: float, cv: float, launch_sd: float, cold: float) -> np.ndarray:
    """(applies, pairs, 2) values of today's chain: run value = truth_arm *
    launch factor * drift * exp(cv z) / (cold for the first run of a launch),
    the launch factor exp(launch_sd z_L) shared by the runs of one launch."""
    arms, launch, first = chain_layout(pairs)
    runs = 2 * pairs
    drift = 1 + DRIFT / (runs - 1) * np.arange(runs)
    factor = np.exp(launch_sd * rng.standard_normal((applies, launch[-1] + 1)))[:, launch]
    noise = np.exp(cv * rng.standard_normal((applies, runs)))
    value = np.where(arms == 1, truth, 1.0) * drift * factor * noise / np.where(first, cold, 1.0)
    out = np.empty((applies, pairs, 2))
    pair = np.arange(runs) // 2
    for arm in (0, 1):
        out[:, pair[arms == arm], arm] = value[:, arms == arm]
    return out


def chain_launches(pairs: int) -> int:
    return int(chain_layout(pairs)[1][-1]) + 1


def simulate_new(rng, applies: int, pairs: int, truth: float, cv: float, launch_sd: float, block: int,
                 cold_spread: float = 0.0) -> np.ndarray:
    """(applies, pairs, 2) values of the new design: pair i is one fresh
    launch of each arm, AB for i % 4 in (0, 3) and BA otherwise, one at a
    time; each launch gets its own factor and `block` runs after a warm-up
    that took the cold start; an arm's value is the mean of its launch's
    runs. `cold_spread` > 0: the warm-up missed it, and the first run of
    every launch is slower by a factor drawn per launch, uniform in
    [1, 1 + cold_spread]."""
    runs = 2 * pairs * block
    order = np.array([0 if i % 4 in (0, 3) else 1 for i in range(pairs)])  # 0: A first
    start = 2 * block * np.arange(pairs)[:, None] + np.where(order[:, None] == np.array([[0, 1]]), 0, block)
    slot = start[:, :, None] + np.arange(block)  # (pairs, arm, block)
    drift = 1 + DRIFT / max(runs - 1, 1) * slot
    factor = np.exp(launch_sd * rng.standard_normal((applies, pairs, 2)))[..., None]
    noise = np.exp(cv * rng.standard_normal((applies, pairs, 2, block)))
    value = np.array([1.0, truth])[None, None, :, None] * drift[None] * factor * noise
    if cold_spread > 0:
        value[..., 0] /= 1 + cold_spread * rng.random((applies, pairs, 2))
    return value.mean(axis=3)


def adaptive_vectorised(values: np.ndarray, k: float, schedule: LookSchedule) -> tuple[np.ndarray, np.ndarray]:
    """`sequential_decision` over the schedule's looks, stopping at the
    first PASS or FAIL, on arrays: (verdict: 1 PASS, -1 FAIL, 0
    INCONCLUSIVE; pairs used)."""
    d = np.log(values[..., 1] / values[..., 0])
    verdict = np.zeros(len(d), dtype=np.int8)
    used = np.zeros(len(d), dtype=int)
    running = np.ones(len(d), dtype=bool)
    for n in schedule.looks():
        crit = _dist.t_quantile(1 - schedule.level_for(n), n - 1)
        m, se = d[:, :n].mean(1), d[:, :n].std(1, ddof=1) / math.sqrt(n)
        passed, failed = running & (m - crit * se >= math.log(k)), running & (m + crit * se < math.log(k))
        verdict[passed], verdict[failed] = 1, -1
        used[running] = n
        running &= ~(passed | failed)
    return verdict, used


def launch_values(rng, design: str, applies: int, pairs: int, truth: float, ratio: float, cold: float) -> np.ndarray:
    """The values of one design; `cold` is the largest cold start (the chain's rows name their own)."""
    sd = ratio * LAUNCH_CV
    if design.startswith("chain"):
        own = float(design.split(" x")[1]) if " x" in design else 1.0
        return simulate_chain(rng, applies, pairs, truth, LAUNCH_CV, sd, own)
    block = int(design.split("block ")[1].split(",")[0])
    return simulate_new(rng, applies, pairs, truth, LAUNCH_CV, sd, block, 2 * (cold - 1) if "not warmed" in design else 0.0)


def launches_of(design: str, pairs: np.ndarray | int) -> np.ndarray:
    if design.startswith("chain"):
        return np.vectorize(chain_launches)(pairs)
    return 2 * np.asarray(pairs)


def launch_task(task: tuple[int, int, int, float, str, float]) -> dict:
    """Fixed and adaptive rules of one design and launch-to-run noise ratio,
    at the boundary and on the power scenario (own random stream)."""
    seed, applies, nfixed, ratio, design, cold, index = task
    out = {"ratio": ratio, "design": design}
    for scenario in ("boundary", "power"):
        truth, k = SCENARIOS[scenario]
        rng = np.random.default_rng([seed, 17, int(ratio * 10), index, scenario == "power"])
        fixed = t_pass_vectorised(launch_values(rng, design, applies, nfixed, truth, ratio, cold), k)
        verdict, used = adaptive_vectorised(launch_values(rng, design, applies, SCHEDULE.max, truth, ratio, cold), k, SCHEDULE)
        out[scenario] = {"fixed_pass": float(fixed.mean()), "adaptive_pass": float((verdict == 1).mean()),
                         "adaptive_fail": float((verdict == -1).mean()), "pairs": float(used.mean()),
                         "launches": float(launches_of(design, used).mean())}
    return out


def check_adaptive_vectorised(seed: int) -> None:
    """adaptive_vectorised decides as sequential_decision does, look by look."""
    rng = np.random.default_rng([seed, 19])
    values = simulate_chain(rng, 300, SCHEDULE.max, 1.0, LAUNCH_CV, LAUNCH_CV, 1.3)
    verdict, used = adaptive_vectorised(values, 1.0, SCHEDULE)
    expected, pairs = adaptive_rule(values, 1.0, SCHEDULE)
    code = {Status.PASS: 1, Status.FAIL: -1, Status.INCONCLUSIVE: 0}
    assert [code[v] for v in expected] == verdict.tolist() and pairs == used.tolist()


def run_launches(args) -> list[str]:
    from concurrent.futures import ProcessPoolExecutor

    check_adaptive_vectorised(args.seed)
    colds = tuple(sorted(args.cold))
    designs = launch_designs(colds)
    tasks = [(args.seed, args.applies, args.fixed, r, d, colds[-1], i) for r in LAUNCH_RATIOS for i, d in enumerate(designs)]
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(launch_task, tasks))
    rows = ["| launch sd / run sd | design | launches per pair | false pass at the boundary: fixed / adaptive "
            "| false fail at the boundary (adaptive) | power +6% vs >= 1.03: fixed / adaptive "
            "| adaptive mean pairs (boundary / power) | adaptive mean launches (boundary / power) |",
            "|---|---|---|---|---|---|---|---|"]
    worst = {}
    for r in results:
        b, p = r["boundary"], r["power"]
        per_pair = f"{chain_launches(args.fixed) / args.fixed:.2f}" if r["design"].startswith("chain") else "2"
        fp = (b["fixed_pass"], b["adaptive_pass"])
        mark = (lambda x: f"**{pct(x)}**" if x > 0.05 + 2 * math.sqrt(0.05 * 0.95 / args.applies) else pct(x))
        rows.append(f"| {r['ratio']:g} | {r['design']} | {per_pair} | {mark(fp[0])} / {mark(fp[1])} | {pct(b['adaptive_fail'])} "
                    f"| {pct(p['fixed_pass'])} / {pct(p['adaptive_pass'])} | {b['pairs']:.1f} / {p['pairs']:.1f} "
                    f"| {b['launches']:.1f} / {p['launches']:.1f} |")
        worst[r["design"]] = max(worst.get(r["design"], 0.0), *fp)
        print(rows[-1])
    summary = "; ".join(f"{d}: {pct(w)}" for d, w in worst.items())
    return [
        f"Run noise CV {LAUNCH_CV:.0%} per run, a launch factor exp(s_L z) per launch with s_L from 0 to 3 times the run "
        f"sd, a linear drift rising 5% over the apply's runs, no outliers; a cold start divides the first run of a "
        f"launch by its factor. {args.applies:,} simulated applies per cell (one binomial standard error at 5% is "
        f"{100 * math.sqrt(0.05 * 0.95 / args.applies):.2f} points; bold: more than two above 5%). Fixed: the paired t "
        f"at {args.fixed} pairs; adaptive: `sequential_decision` under `LookSchedule(first=3, step=2, max=12)`, stopping "
        "at the first PASS or FAIL. Launches per pair and the launch counts are the walk's (the chain's: ABBA BAAB "
        f"with a launch at every switch of arm, {chain_launches(args.fixed)} launches for {args.fixed} pairs).", "",
        "Designs: **chain** is today's walk (main at 320c718): one run per block, pairs that share a launch analysed "
        "as independent, `warmup = 1` request not covering the cold start (\"cold start\": it slows the first run "
        "after each launch); **new, block b** is issue 22's: each pair one fresh launch per arm (AB or BA, one "
        "server at a time), b runs per launch averaged within it, the warm-up at full concurrency taking the cold "
        "start; \"cold start not warmed\" is the new design with the warm-up missing it, the first run of every "
        f"launch slower by a factor drawn per launch, uniform in [1, {1 + 2 * (colds[-1] - 1):g}].", "",
        *rows, "",
        f"Largest false-pass rate at the boundary over the range (fixed or adaptive): {summary}.", "",
    ]


ECONOMY_SECTION = "## Verdicts: runs of each arm (simulation)"
ECONOMY_COST = 10.0  # a launch costs this many runs (the calibrated design)


def economy_designs(runs: int, ratio: float) -> dict:
    """name -> (runs per launch, schedule) for a workload of `runs`
    (plan.economy): before (one run a launch: `runs` pairs), now (all of
    `runs` on one launch), calibrated (Kalibera and Jones's runs per launch
    at the true variances, a launch costing ECONOMY_COST runs)."""
    from specdsl.model.config import Workload
    from specdsl.plan.looks import schedule_for
    from specdsl.verdict import runs_per_launch

    w = Workload(name="w", runs=runs)
    b = runs_per_launch(ECONOMY_COST, 1.0, LAUNCH_CV ** 2, (ratio * LAUNCH_CV) ** 2, hi=runs)
    return {"before: 1 run a launch": (1, schedule_for(w, block=1)), f"now: {runs} runs a launch": (runs, schedule_for(w)),
            f"calibrated: {b} a launch": (b, schedule_for(w, block=b))}


def economy_task(task: tuple) -> dict:
    seed, applies, runs, ratio, index = task
    out = []
    for d, (name, (block, look)) in enumerate(economy_designs(runs, ratio).items()):
        row = {"runs": runs, "ratio": ratio, "design": name, "looks": look.looks()}
        for scenario in ("boundary", "power"):
            truth, k = SCENARIOS[scenario]
            rng = np.random.default_rng([seed, 33, runs, int(ratio * 10), d, scenario == "power"])
            values = simulate_new(rng, applies, look.max, truth, LAUNCH_CV, ratio * LAUNCH_CV, block)
            verdict, used = adaptive_vectorised(values, k, look)
            row[scenario] = {"pass": float((verdict == 1).mean()), "fail": float((verdict == -1).mean()),
                             "launches": float(2 * used.mean()), "runs": float(block * used.mean())}
        out.append(row)
    return out


def run_economy(args) -> list[str]:
    from concurrent.futures import ProcessPoolExecutor

    tasks = [(args.seed, args.applies, runs, r, i) for runs in (3, 5) for i, r in enumerate(LAUNCH_RATIOS)]
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        results = [row for rows in pool.map(economy_task, tasks) for row in rows]
    bound = 0.05 + 2 * math.sqrt(0.05 * 0.95 / args.applies)
    rows = ["| `runs` | launch sd / run sd | design | looks (pairs) | A/A at the threshold: false PASS / false FAIL "
            "| +6% vs >= 1.03: PASS | launches of one comparison (A/A / +6%) | runs of each arm (A/A / +6%) |",
            "|---|---|---|---|---|---|---|---|"]
    worst = 0.0
    for r in results:
        b, p = r["boundary"], r["power"]
        mark = (lambda x: f"**{pct(x)}**" if x > bound else pct(x))
        looks = ", ".join(map(str, r["looks"])) if len(r["looks"]) <= 5 else f"{r['looks'][0]}, ..., {r['looks'][-1]}"
        rows.append(f"| {r['runs']} | {r['ratio']:g} | {r['design']} | {looks} | {mark(b['pass'])} / {mark(b['fail'])} "
                    f"| {pct(p['pass'])} | {b['launches']:.1f} / {p['launches']:.1f} | {b['runs']:.1f} / {p['runs']:.1f} |")
        worst = max(worst, b["pass"], b["fail"])
        print(rows[-1])
    return [
        f"What `runs` buys under plan.economy (docs/verdicts.md, \"What `runs` means in a paired comparison\"): run "
        f"noise CV {LAUNCH_CV:.0%}, a launch factor exp(s_L z) with s_L 0 to 3 times the run sd, the drift of the launch "
        "table, each pair one fresh launch of each arm (one at a time, AB/BA), an arm's value the mean of its launch's "
        "runs; the adaptive rule under the schedule the paired step uses for the workload (`runs` as given, `max_runs` "
        f"its default 3 x `runs`) and each block. {args.applies:,} simulated applies per cell (bold: more than two "
        "binomial standard errors above 5%). \"before\": the rule until 2026-12-03 (`runs` pairs of one run); \"now\": "
        "no calibration, all of `runs` on one launch; \"calibrated\": Kalibera and Jones's runs per launch at the true "
        f"variances, a launch costing {ECONOMY_COST:g} runs (verdict.runs_per_launch, bounded to [1, `runs`]).", "",
        *rows, "",
        f"Largest false verdict at the threshold, either side, over every row: {pct(worst)}.", "",
    ]


def write_section(text: str, section: str = SECTION) -> None:
    path = ROOT / "docs" / "benchmarks.md"
    doc = path.read_text()
    if section in doc:
        start = doc.index(section)
        nxt = doc.find("\n## ", start + len(section))
        doc = doc[:start] + text + (doc[nxt + 1:] if nxt != -1 else "")
    else:
        doc = doc.rstrip("\n") + "\n\n" + text
    path.write_text(doc if doc.endswith("\n") else doc + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--applies", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--fixed", type=int, default=6, help="pairs of the fixed-n rule")
    ap.add_argument("--null-walks", type=int, default=500_000, help="null walks per row of the z-vs-t table")
    ap.add_argument("--jobs", type=int, default=2, help="worker processes (the figures do not depend on it)")
    ap.add_argument("--no-write", action="store_true", help="print only; leave docs/benchmarks.md alone")
    ap.add_argument("--cold", type=lambda text: [float(x) for x in text.split(",")], default=[1.03, 1.3],
                    help="the cold starts' slowdowns of a launch's first run, comma-separated (launch table)")
    ap.add_argument("--launches-only", action="store_true", help="only the launch table (and only its section written)")
    ap.add_argument("--economy-only", action="store_true", help="only the runs-of-each-arm table (and only its section written)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    economy_body = run_economy(args)
    economy_text = "\n".join([
        ECONOMY_SECTION, "",
        "Command: `python benchmarks/bench_verdicts.py --economy-only" + (f" --applies {args.applies}" if args.applies != 10_000 else "")
        + (f" --seed {args.seed}" if args.seed != 1 else "") + f"` (also run by the full command; {time.perf_counter() - t0:.0f} s). "
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, load average "
        f"{os.getloadavg()[0]:.1f} at the end.", "",
        *economy_body,
    ])
    if args.economy_only:
        if not args.no_write:
            write_section(economy_text, ECONOMY_SECTION)
        return 0
    t0 = time.perf_counter()
    launch_body = run_launches(args)
    launch_wall = time.perf_counter() - t0

    def machine() -> str:
        return (f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
                f"load average {os.getloadavg()[0]:.1f} at the end")

    launch_cmd = "python benchmarks/bench_verdicts.py --launches-only" + \
        (f" --applies {args.applies}" if args.applies != 10_000 else "") + (f" --seed {args.seed}" if args.seed != 1 else "") + \
        (f" --fixed {args.fixed}" if args.fixed != 6 else "") + (f" --cold {','.join(f'{c:g}' for c in args.cold)}" if args.cold != [1.03, 1.3] else "")
    launch_text = "\n".join([
        LAUNCH_SECTION, "",
        f"Command: `{launch_cmd}` (also run by the full command; {launch_wall:.0f} s). Machine: {machine()}. "
        "Method: docs/verdicts.md (\"What the guarantees assume\") and the script's docstring. One-sided alpha = 5%; "
        "the goal is a false-pass rate <= 5% at the boundary (A/A, `>= baseline * 1.0`) across the range.", "",
        *launch_body,
    ])
    if args.launches_only:
        if not args.no_write:
            write_section(launch_text, LAUNCH_SECTION)
            write_section(economy_text, ECONOMY_SECTION)
        print(f"\n{launch_wall:.1f} s")
        return 0
    t0 = time.perf_counter()
    body = run(args)
    wall = time.perf_counter() - t0
    cmd = "python benchmarks/bench_verdicts.py" + (f" --applies {args.applies}" if args.applies != 10_000 else "") + \
        (f" --null-walks {args.null_walks}" if args.null_walks != 500_000 else "") + \
        (f" --seed {args.seed}" if args.seed != 1 else "") + (f" --fixed {args.fixed}" if args.fixed != 6 else "")
    text = "\n".join([
        SECTION, "",
        f"Command: `{cmd}` ({args.applies:,} simulated applies per cell, seed {args.seed}; {wall:.0f} s). "
        f"Machine: {machine()}. Method and model: docs/verdicts.md and the script's docstring: ABBA/BAAB pairs, "
        "per-run lognormal noise, a linear drift rising 5% over the apply, 5% of runs at x0.7. "
        "One-sided alpha = 5% throughout; the goal is a false-pass rate <= 5%.", "",
        *body,
    ])
    print(f"\n{wall:.1f} s")
    if not args.no_write:
        write_section(text)
        write_section(launch_text, LAUNCH_SECTION)
        write_section(economy_text, ECONOMY_SECTION)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
