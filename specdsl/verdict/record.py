"""One assertion's verdict: the one type that apply decides, prints and
records, that state keeps as structured fields (docs/state.md) and that
plan, history and report read back. Nothing reads a verdict from its text.

A gating verdict (decided from measurements with an interval) carries the
`Decision` behind it: the estimate, its interval, the level, n (pairs or
runs), the threshold and the operator. An exact one (`effective.*`,
counts, boolean logic) and one that could not be decided have none: their
`detail` says what they compared, or why not.
"""

from __future__ import annotations

import attrs

from specdsl.verdict.decision import Decision, Status, nan_key


@attrs.frozen
class Verdict:
    """`name`: the assertion's; `detail`: the line shown for it (the
    decision's numbers, method and notes, or what an exact assertion
    compared, or why it could not be decided). `noise`: for a paired ratio,
    the sd of its pairs' log ratios (what a later plan estimates from);
    `needed`: for an undecided paired ratio, about how many pairs a
    decision would need at this noise and effect (`needed_beyond`: more
    than `needed`, no affordable number)."""

    name: str
    status: Status = attrs.field(converter=Status)
    detail: str = ""
    gating: bool = False
    decision: Decision | None = None
    noise: float | None = attrs.field(default=None, eq=nan_key)
    needed: int | None = None
    needed_beyond: bool = False
