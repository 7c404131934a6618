"""Queries on promotions and the verdicts they rest on, for the plan (is a
promotion pending?), the promote step (are these verdicts new?) and
`specdsl history`. Pure functions of a State.

A check records a *verdict run* (a completed run of its step whose
`verdict` holds the structured verdict, specdsl.verdict.Verdict) only when
its verdict is new, so the latest run of a check's address and identity is
its current verdict. A promotion is new when some of its evidence (the benchmark result
and the verdict runs) was recorded after the track's latest promotion:
verdicts that a promotion of the track already saw (whether it promoted
them or another candidate) promote nothing again.
"""

from __future__ import annotations

import attrs

from specdsl.state.model import Promotion, RunRecord, State
from specdsl.state.queries import Queries
from specdsl.verdict.record import Verdict


def verdict_of(run: RunRecord | None) -> Verdict | None:
    """The verdict a run recorded; None for no run, or a run that is not a verdict run."""
    return run.verdict if run is not None else None


# What planning and the promote step ask of a state's runs (the latest
# verdict run of each check and identity, each run's position) are the
# state's queries, indexed once: one home (specdsl.state.queries).
Index = Queries


def latest_verdict(state: State, addr: str, identity: str) -> RunRecord | None:
    """The current verdict run of one check (see `Index` for many)."""
    return next((r for r in reversed(state.runs) if r.step == addr and r.identity == identity
                 and r.status == "completed" and r.verdict is not None), None)


@attrs.frozen
class Entry:
    """One promotion as `specdsl history` shows it, with its verdicts."""

    promotion: Promotion
    verdicts: tuple[tuple[str, str, Verdict | None], ...]  # (check name, verdict run id or "", its verdict)
    previous_experiment: str | None


def history(state: State, track: str) -> list[Entry]:
    """Every promotion of `track`, newest first, with the verdicts it rests on."""
    out = []
    before: Promotion | None = None
    for p in state.promotions_of(track):
        verdicts = []
        for i, name in enumerate(p.checks):
            vid = p.verdicts[i] if i < len(p.verdicts) else ""
            verdicts.append((name, vid, verdict_of(state.run(vid)) if vid else None))
        prev = before.experiment if before is not None and before.run == p.previous else None
        out.append(Entry(p, tuple(verdicts), prev))
        before = p
    return out[::-1]
