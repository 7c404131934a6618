"""A paired benchmark's rounds under bursts of other work: each run's host
record, and a round that a burst hit measured again (the rule is
specdsl.bench.bursts'; the sampler specdsl.bench.hostload's).

Side by side (both arms up, specdsl.graph.pairs), the runs of a block go
in rounds: the j-th run of every arm, back to back. After each round its
runs' host records and their client's lag (`round_record`) are compared; an unbalanced round's runs are all
invalid, each with its reason (they stay in the result, listed under their
block's `remeasured`, and no verdict reads them), and once the other work
has calmed down (`calm`: back near the round's quietest run, waited
for at most `CALM_WAIT_S`), the round is measured
again on the same launches, its arms in the reverse order, up to
`bursts.RETRIES` times. One at a time (a GPU host whose GPUs do not fit
both arms) the runs of a round are on launches that are not up together:
their host records are kept, and nothing is measured again.

The step's warnings and the apply's count of invalid runs say how many
runs were measured again and why (`note_remeasured`).
"""

from __future__ import annotations

import itertools
import os
import re
import time

import attrs

from specdsl.bench import bursts
from specdsl.bench.hostload import LoadMeter
from specdsl.paired_result import PairedResult

CALM_WAIT_S = 2.0
_CALM_STEP_S = 0.25


def round_record(host: dict | None, runs=()) -> dict:
    """What the round's rule reads of a run: its host record and its client's lag (bursts.round_record)."""
    return bursts.round_record(host, runs)


def meter() -> LoadMeter:
    """A started meter of this machine's other work (this process's tree is ours)."""
    return LoadMeter().start()


def calm(quiet: float, wait_s: float = CALM_WAIT_S, stop=None) -> None:
    """Wait until the other work is back near the round's quietest run
    (`quiet` other runnable tasks, bursts.calm_enough) over a short window,
    or `wait_s` passed (a burst that does not end is not waited out: the
    round is measured again anyway)."""
    cores = os.cpu_count() or 1
    end = time.monotonic() + wait_s
    while time.monotonic() < end and not (stop is not None and stop.is_set()):
        window = LoadMeter().start()
        time.sleep(_CALM_STEP_S)
        other = window.stop().get("other_runnable")
        if other is None or bursts.calm_enough(other, quiet, cores):
            return


def measure_rounds(order, measure, drop, warn_kept, stop=None, wait=None) -> int:
    """Measure `order` ((arm, j) in running order; consecutive entries of
    one j are a round) with `measure(arm, j) -> host record of the run`;
    an unbalanced round is dropped (`drop(arm, reason)` for each of its
    arms: its latest run of the block is invalid) and measured again in
    reverse order, up to `bursts.RETRIES` times; a round still unbalanced
    is kept with `warn_kept(arm, warning)`; `wait(quiet, stop)` waits for
    the burst to pass before a round is measured again (default `calm`).
    Returns the runs dropped."""
    wait = wait or (lambda quiet, stop: calm(quiet, stop=stop))
    dropped = 0
    for j, entries in itertools.groupby(order, key=lambda x: x[1]):
        arms = [a for a, _ in entries]
        hosts = {a: measure(a, j) for a in arms}
        for tries in range(1, bursts.RETRIES + 2):
            reasons = bursts.unbalanced(hosts)
            if not reasons:
                break
            if tries > bursts.RETRIES:
                for a in arms:
                    warn_kept(a, bursts.kept_warning(reasons, a, tries))
                break
            for a in arms:
                drop(a, reasons[a])
            dropped += len(arms)
            quiet = bursts.quiet_of(hosts)
            if quiet is not None:
                wait(quiet, stop)
            arms = arms[::-1]
            hosts = {a: measure(a, j) for a in arms}
    return dropped


_PLACE = re.compile(r"^(runs? [\d-]+/\d+)")


def said_again(progress):
    """`progress` for a run of a round measured again: `run 3/6 again, pair 2 arm B: ...`
    (the place of the run it replaces)."""
    return lambda message: progress(_PLACE.sub(r"\1 again", message, count=1))


def drop_latest(pairing, i: int, letter: str, reason: str) -> None:
    """Mark the latest run of arm `letter`'s block of pair `i` in
    `pairing` (a paired step's _Pairing) invalid because of a burst: it
    moves from the block's `runs` to its `remeasured`."""
    pair = next(p for p in pairing.pairs if p["pair"] == i)
    block = next(b for b in pair["blocks"] if b["arm"] == letter)
    k = block["runs"].pop()
    block.setdefault("remeasured", []).append(k)
    pairing.runs[k] = attrs.evolve(pairing.runs[k], invalid=reason)


def with_warning(pairing, i: int, letter: str, warning: str) -> None:
    """Add `warning` to the latest run of arm `letter`'s block of pair `i`."""
    pair = next(p for p in pairing.pairs if p["pair"] == i)
    block = next(b for b in pair["blocks"] if b["arm"] == letter)
    k = block["runs"][-1]
    pairing.runs[k] = attrs.evolve(pairing.runs[k], warnings=tuple(pairing.runs[k].warnings) + (warning,))


def remeasured(doc: dict) -> list[tuple[int, str, int, str]]:
    """(pair, arm, run index, why) of each run of a paired result that a
    burst invalidated and that was measured again."""
    got = PairedResult.of(doc)
    if got is None:
        return []
    why = {int(r.get("index", -1)): str(r.get("invalid", "")) for r in got.runs}
    return [(p.pair, b.arm, k, why.get(k, "")) for p, b in got.blocks() for k in b.remeasured or ()]


def note_remeasured(ctx, doc: dict) -> None:
    """Warn about the runs of a paired result that bursts invalidated and
    count them among the apply's invalid runs."""
    found = remeasured(doc)
    if not found:
        return
    with ctx.walk.mutex:
        ctx.walk.result.invalid_runs += len(found)
    ctx.walk.result.warn(
        f"{ctx.addr}: {len(found)} run{'s' if len(found) != 1 else ''} invalid (a round a burst of other work hit), "
        f"measured again, not read by any verdict: "
        + "; ".join(f"pair {p + 1} arm {a} run {k}: {why}" for p, a, k, why in found[:6])
        + (f"; and {len(found) - 6} more" if len(found) > 6 else ""))
