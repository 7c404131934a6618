"""Which runs a burst of other work hit: the rule, pure (no I/O).

A paired comparison measured side by side (specdsl.graph.pairs) runs its
arms' j-th runs back to back: a *round*. A machine-wide burst of other
work (another apply's server starting, another user's tests) that lasts
about as long as a run lands in one arm's run of the round and not the
other's, and the pair's ratio reads the burst, not the arms: on a 2-core
machine, runs at x0.4-0.5 of their arm's median (issue 33).

The round's host records (specdsl.bench.hostload) say what else the
machine did during each run: `other_runnable`, the tasks other than this
apply's that were runnable (running or waiting for a CPU), on average over
the run; where it was not sampled, `other_cores`, the CPU they used. From
it, a run's **contention**

    contention = max(1, (other + OURS) / cores)

is how many times over the machine's cores were wanted during it (`OURS`
= 1: a run's own client and server want about a core; on a machine with
free cores, contention 1, whatever the others do). A round is
**unbalanced** when its most contended run's contention exceeds its least
contended run's by more than `TOLERANCE` (25%: a CPU-bound run would be
about that much slower): those runs were hit. On 2 cores, a run with 1.5
other tasks or more beside a run with none; with 5.5 other tasks, one with
1.6 more. Every run of an unbalanced round is then invalid, each with its
reason, and the round is measured again (specdsl.apply.bursts), so that
the arms' runs of a pair always saw the same machine, within the
tolerance.

Why this keeps the verdicts' error rates: which rounds are measured again
depends only on what the other processes did, never on the arms' numbers,
and a round is dropped whole (both arms), so the runs a verdict reads are
the rounds that happened to be balanced; what the arms do to the machine
themselves (their own threads) is left out of `other_runnable`. A round
still unbalanced after `RETRIES` more measurements is kept as measured, as
any round was before this rule, and says so (`KEPT` in its runs'
warnings). Dropped runs are recorded and counted, never silently lost.

A round without host records (another OS, a remote machine's runs read
here, results of earlier versions) is never unbalanced by them.

**The client's lag.** A run's host record is an average over the run; a
burst of a few tens of milliseconds near a run's end moves a streamed
run's duration (first request sent to last chunk received) by as much and
barely moves the average. The built-in client sees it at a 10 ms grain:
its event loop's timers fire late (`client.loop_lag_max_ms`,
specdsl.bench.monitor; the worst worker's when it has several), and a
chunk that arrives meanwhile is stamped that late. So a round is also
unbalanced when its runs' worst timer lags differ by more than
`LAG_TOLERANCE` (1%) of the round's mean run duration: 12 ms on the
story's 1.2 s runs, where the verdicts' margins are 2%; 1.8 s on a
3-minute run, which no wake-up lag reaches; and never less than
`LAG_FLOOR_MS` (5 ms): on runs of a few tens of milliseconds (the test
doubles' runs) 1% is a fraction of a millisecond, which the loop's own
timer jitter crosses in every round, so that every round would be
measured again for nothing a verdict can tell apart. The lag is the client's own
process waiting for a CPU or for its loop (what the machine did to it),
the same work for every arm of a round (the same prompts, the same
tokens); the scale is the round's, not one arm's. Runs without a client
record (a user's command) are never unbalanced by it.
"""

from __future__ import annotations

from typing import Any

OURS = 1.0
TOLERANCE = 0.25
RETRIES = 3  # measurements of a round after its first, at most
KEPT = "burst: kept unbalanced"
LAG_TOLERANCE = 0.01  # of the round's mean run duration: the client's worst timer lags further apart are a burst
LAG_FLOOR_MS = 5.0  # and at least this far apart: a timer's own jitter is not a burst


def measure_of(hosts) -> str:
    """The figure a round is compared on: `other_runnable` when every run has it, else `other_cores`."""
    return "other_runnable" if all("other_runnable" in (h or {}) for h in hosts) else "other_cores"


def other_of(host: dict[str, Any] | None, key: str = "other_cores") -> float | None:
    """The other work of a run's host record by `key` (None: not read)."""
    if not host or key not in host:
        return None
    return float(host[key])


def contention(other: float, cores: int) -> float:
    """How many times over the cores were wanted: max(1, (other + OURS) / cores)."""
    return max(1.0, (max(0.0, other) + OURS) / max(1, int(cores)))


def round_record(host: dict[str, Any] | None, runs=()) -> dict[str, Any]:
    """What the rule reads of one arm's run in a round: its host record,
    with `client_lag_ms` (the worst timer lag of the client's event loops
    during it) and `run_s` (its duration) where the run (bench.RunResult)
    has a client record."""
    out = dict(host or {})
    lags = [float(r.client["loop_lag_max_ms"]) for r in runs if "loop_lag_max_ms" in (r.client or {})]
    spans = [float(r.metrics["duration"]) for r in runs if "duration" in r.metrics]
    if lags:
        out["client_lag_ms"] = max(lags)
        out["run_s"] = sum(spans) if spans else float(out.get("wall_s") or 0.0)
    return out


def lag_unbalanced(records: dict[str, dict[str, Any] | None]) -> dict[str, str]:
    """The client's lag of a round (`records`: arm -> round_record): when
    its runs' worst timer lags differ by more than LAG_TOLERANCE of the
    round's mean run duration (and LAG_FLOOR_MS), arm -> why its run is
    invalid, else {}."""
    lags = {arm: (r or {}).get("client_lag_ms") for arm, r in records.items()}
    spans = [float((r or {}).get("run_s") or 0.0) for r in records.values()]
    if len(lags) < 2 or any(x is None for x in lags.values()) or not all(x > 0 for x in spans):
        return {}
    scale = sum(spans) / len(spans)
    limit = max(LAG_TOLERANCE * scale * 1000.0, LAG_FLOOR_MS)
    quiet_arm = min(lags, key=lambda a: (lags[a], a))
    hit = sorted(arm for arm, x in lags.items() if x > lags[quiet_arm] + limit)
    if not hit:
        return {}

    def burst(arm: str) -> str:
        return (f"a burst of other work: the client's event loop ran a timer {lags[arm]:.1f} ms late during it, "
                f"{lags[quiet_arm]:.1f} ms at most during arm {quiet_arm}'s run of its round (more than "
                f"{LAG_TOLERANCE:.0%} of the round's {scale:.3g} s runs apart, and at least {LAG_FLOOR_MS:g} ms: "
                f"{limit:.1f} ms)")

    return {arm: (burst(arm) + "; its round is measured again") if arm in hit else
            f"its round was measured again: arm {hit[0]}'s run beside it was hit by {burst(hit[0])}" for arm in lags}


def unbalanced(hosts: dict[str, dict[str, Any] | None]) -> dict[str, str]:
    """`hosts`: arm -> the host record of its run in one round (or its
    round_record). Returns, when the round is unbalanced (by the host's
    load, else by the client's lag), arm -> why its run is invalid (every
    arm of the round), else {}."""
    return _load_unbalanced(hosts) or lag_unbalanced(hosts)


def quiet_of(hosts: dict[str, dict[str, Any] | None]) -> float | None:
    """The other work of a round's quietest run (what `calm` waits for), None where a run has no host record."""
    key = measure_of(hosts.values())
    others = [other_of(h, key) for h in hosts.values()]
    return None if any(x is None for x in others) else min(others)


def _load_unbalanced(hosts: dict[str, dict[str, Any] | None]) -> dict[str, str]:
    key = measure_of(hosts.values())
    others = {arm: other_of(h, key) for arm, h in hosts.items()}
    if len(others) < 2 or any(x is None for x in others.values()):
        return {}
    cores = max(int((h or {}).get("cores") or 1) for h in hosts.values())
    level = {arm: contention(x, cores) for arm, x in others.items()}
    quiet_arm = min(level, key=lambda a: (level[a], a))
    hit = sorted(arm for arm, c in level.items() if c > level[quiet_arm] * (1 + TOLERANCE))
    if not hit:
        return {}
    what = "other tasks wanted the" if key == "other_runnable" else "cores of the"
    unit = f"{cores} cores on average" if key == "other_runnable" else f"{cores} cores went to other processes"

    def burst(arm: str) -> str:
        return (f"a burst of other work: {others[arm]:.2f} {what} {unit} during it (contention x{level[arm]:.2f}), "
                f"{others[quiet_arm]:.2f} during arm {quiet_arm}'s run of its round (x{level[quiet_arm]:.2f}; "
                f"more than {TOLERANCE:.0%} apart)")

    out = {}
    for arm in others:
        if arm in hit:
            out[arm] = burst(arm) + "; its round is measured again"
        else:
            out[arm] = f"its round was measured again: arm {hit[0]}'s run beside it was hit by {burst(hit[0])}"
    return out


def kept_warning(reasons: dict[str, str], arm: str, tries: int) -> str:
    """The warning of a run of a round kept unbalanced after `tries` measurements."""
    return f"{KEPT} after {tries} measurements of its round: {reasons[arm]}"


def calm_enough(other: float, quiet: float, cores: int) -> bool:
    """Whether the machine is back within the tolerance of a round's
    quietest run (`quiet`): worth measuring the round again now."""
    return contention(other, cores) <= contention(quiet, cores) * (1 + TOLERANCE / 2)
