"""The story's launches, by simulation: how many server launches do the
baseline, the upgrade and the fix need together, and how often are the
verdicts the story's, under each way of spending them (issue 22's "at most
12 launches")?

    python benchmarks/bench_story.py [--applies 20000] [--seed 1] [--no-write]

The story: a baseline (speed 1), an upgrade (0.94) and a fix (1.05), the
upgrade and the fix each against the baseline with `>= baseline * 1.03`;
the story's verdicts are upgrade FAIL, fix PASS. Each simulated apply
walks both comparisons with the adaptive rule (`sequential_decision` under
the paired step's own schedule, `plan.looks.schedule_for` of a workload
with `runs = 3`, `max_runs = 6`, vectorised as in bench_verdicts.py) and
counts the launches. A launch has a factor exp(s_L z) shared by its runs;
each run a factor exp(s_r z); an arm's value in a block is the mean of its
launch's `block` runs. Both servers of a pair are up side by side, so the
machine's drift cancels inside a pair and is left out.

Designs:
- **pairs** (the walk today): each comparison its own pairs, each pair two
  fresh launches (the baseline launched once per pair of each comparison):
  2 (n_upgrade + n_fix) launches;
- **shared baseline**: one block is one fresh launch of each arm still
  walking, the baseline's launch read by both comparisons of that block
  (each verdict still has one independent launch per arm per block; the
  two verdicts are correlated through the baseline): max(n_u, n_f) + n_u +
  n_f launches.
Spendings: the default O'Brien-Fleming-type (`obf`) and the Pocock-type
(`pocock`), both with the 20% reserve and the skipped looks of
plan.looks. Noise: s_L 0 and 1% (the replay's `--story-launch-sd`), s_r
0.5% and 1% per run (the replay's run noise is the machine's: see
docs/benchmarks.md).

A second table chooses between the spendings over short horizons: for each
(first look, horizon), the effect (in sd of a pair's log ratio) that obf
detects with 80% power at its horizon, d80, and each spending's power
there and mean pairs at 2 x d80 (one comparison, normal log ratios).

Prints the tables; unless --no-write, replaces the section "Verdicts: the
story's launches (simulation)" of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_verdicts import adaptive_vectorised, write_section  # noqa: E402

from specdsl.verdict import LookSchedule  # noqa: E402

SECTION = "## Verdicts: the story's launches (simulation)"
SPEEDS = {"upgrade": 0.94, "fix": 1.05}
K = 1.03
LIMIT = 12  # the issue's target: launches for baseline, upgrade and fix together


def schedule(first: int, horizon: int, spending: str) -> LookSchedule:
    """The paired step's schedule (plan.looks.looks_of / schedule_for) with
    `spending` in place of its own."""
    return LookSchedule(first=first, step=max(1, first // 2), max=horizon, horizon=horizon, spending=spending,
                        alpha=0.05, reserve=0.2, skip_t=30.0)


def check_schedule() -> None:
    """`schedule(3, 6, "obf")` is the paired step's own for the replay's workload."""
    from specdsl.model.config import Workload
    from specdsl.plan.looks import schedule_for

    own = schedule_for(Workload(name="w", runs=3, max_runs=6))
    assert own == schedule(3, 6, "obf"), (own, schedule(3, 6, "obf"))


def arm(rng, applies: int, blocks: int, speed: float, launch_sd: float, run_sd: float, block: int) -> np.ndarray:
    factor = np.exp(launch_sd * rng.standard_normal((applies, blocks, 1)))
    runs = np.exp(run_sd * rng.standard_normal((applies, blocks, block)))
    return (speed * factor * runs).mean(axis=2)


def story(rng, applies: int, launch_sd: float, run_sd: float, block: int, look: LookSchedule, fix: float = SPEEDS["fix"]):
    """Verdicts and pairs of both comparisons, for the two designs."""
    n = look.max
    base_u, base_f, shared = (arm(rng, applies, n, 1.0, launch_sd, run_sd, block) for _ in range(3))
    up = arm(rng, applies, n, SPEEDS["upgrade"], launch_sd, run_sd, block)
    fx = arm(rng, applies, n, fix, launch_sd, run_sd, block)
    out = {}
    for design, (bu, bf) in (("pairs", (base_u, base_f)), ("shared baseline", (shared, shared))):
        vu, nu = adaptive_vectorised(np.stack([bu, up], axis=-1), K, look)
        vf, nf = adaptive_vectorised(np.stack([bf, fx], axis=-1), K, look)
        launches = 2 * (nu + nf) if design == "pairs" else np.maximum(nu, nf) + nu + nf
        out[design] = {"launches": launches, "as_story": (vu == -1) & (vf == 1), "fix_pass": vf == 1, "fix_pairs": nf}
    return out


def story_rows(args) -> list[str]:
    rows = ["| launch sd | run sd | block | spending | design | launches: mean | at most 12 | as the story's "
            "(upgrade FAIL, fix PASS) | fix: mean pairs | false pass, fix at 1.03 |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for launch_sd in (0.0, 0.01):
        for run_sd in (0.005, 0.01):
            for block in (1, 2, 4):
                for spending in ("obf", "pocock"):
                    look = schedule(3, 6, spending)
                    seed = [args.seed, int(launch_sd * 1000), int(run_sd * 1000), block]
                    got = story(np.random.default_rng(seed), args.applies, launch_sd, run_sd, block, look)
                    null = story(np.random.default_rng(seed + [1]), args.applies, launch_sd, run_sd, block, look, fix=K)
                    for design, r in got.items():
                        rows.append(f"| {launch_sd:.0%} | {run_sd:.1%} | {block} | {spending} | {design} "
                                    f"| {r['launches'].mean():.1f} | {pct((r['launches'] <= LIMIT).mean())} "
                                    f"| {pct(r['as_story'].mean())} | {r['fix_pairs'].mean():.2f} "
                                    f"| {pct(null[design]['fix_pass'].mean())} |")
                        print(rows[-1], flush=True)
    return rows


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def one_walk(rng, applies: int, look: LookSchedule, d: float) -> tuple[float, float]:
    """Power and mean pairs of one comparison whose pair log ratios are
    normal, `d` sd beyond the threshold (as ratios: base 1, candidate exp(d))."""
    logs = d + rng.standard_normal((applies, look.max))
    values = np.stack([np.ones_like(logs), np.exp(logs)], axis=-1)
    verdict, used = adaptive_vectorised(values, 1.0, look)
    return float((verdict == 1).mean()), float(used.mean())


def spending_rows(args) -> list[str]:
    rows = ["| first look, horizon | looks (obf / pocock) | d80 | power at d80: obf / pocock "
            "| mean pairs at 2 x d80: obf / pocock |", "|---|---|---|---|---|"]
    for first, horizon in ((2, 3), (2, 4), (3, 4), (3, 6), (3, 9), (4, 8), (4, 12)):
        looks = {s: schedule(first, horizon, s) for s in ("obf", "pocock")}
        lo, hi = 0.2, 10.0
        for _ in range(18):  # d80 by bisection, on one fixed stream (so the power curve is monotone)
            mid = (lo + hi) / 2
            power, _ = one_walk(np.random.default_rng([args.seed, 3, first, horizon]), args.applies, looks["obf"], mid)
            lo, hi = (mid, hi) if power < 0.8 else (lo, mid)
        d80 = (lo + hi) / 2
        at = {s: one_walk(np.random.default_rng([args.seed, 5, first, horizon]), args.applies, look, d80) for s, look in looks.items()}
        clear = {s: one_walk(np.random.default_rng([args.seed, 7, first, horizon]), args.applies, look, 2 * d80)
                 for s, look in looks.items()}
        shown = " / ".join(", ".join(map(str, look.looks())) for look in looks.values())
        rows.append(f"| {first}, {horizon} | {shown} | {d80:.2f} | {pct(at['obf'][0])} / {pct(at['pocock'][0])} "
                    f"| {clear['obf'][1]:.2f} / {clear['pocock'][1]:.2f} |")
        print(rows[-1], flush=True)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--applies", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-write", action="store_true", help="print only; leave docs/benchmarks.md alone")
    args = ap.parse_args(argv)
    check_schedule()
    t0 = time.perf_counter()
    story_body = story_rows(args)
    spending_body = spending_rows(args)
    wall = time.perf_counter() - t0
    cmd = "python benchmarks/bench_story.py" + (f" --applies {args.applies}" if args.applies != 20_000 else "") + \
        (f" --seed {args.seed}" if args.seed != 1 else "")
    machine = (f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
               f"load average {os.getloadavg()[0]:.1f} at the end")
    text = "\n".join([
        SECTION, "",
        f"Command: `{cmd}` ({args.applies:,} simulated applies per cell, seed {args.seed}; {wall:.0f} s). Machine: {machine}. "
        "Method: the script's docstring. The story's speeds (baseline 1, upgrade 0.94, fix 1.05, both against "
        "`>= baseline * 1.03`), the replay's workload (`runs = 3`, `max_runs = 6`: looks at 3, 4, 5, 6 pairs), "
        "each launch's factor exp(s_L z) shared by its `block` runs, each run's exp(s_r z); \"false pass, fix at "
        "1.03\": the same apply with the fix exactly at the threshold (goal <= 5%). One binomial standard error "
        f"at 5% is {100 * math.sqrt(0.05 * 0.95 / args.applies):.2f} points.", "",
        *story_body, "",
        "Which spending for a short horizon: d80 is the effect (in sd of one pair's log ratio, beyond the "
        "threshold) that obf detects with 80% power by its horizon; each spending's power there, and its mean "
        "pairs at twice that effect (one comparison, normal log ratios, the paired step's schedule with the 20% "
        "reserve and skipped looks).", "",
        *spending_body, "",
    ])
    print(f"\n{wall:.1f} s")
    if not args.no_write:
        write_section(text, SECTION)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
