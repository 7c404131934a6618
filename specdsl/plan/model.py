"""The Plan: what apply would do to each step, and why.

Every change has an `Action` (its value is the symbol the UI shows) and a
reason that names the trigger and the fields that differ.
"""

from __future__ import annotations

import enum
from typing import Any

import attrs

PLAN_FORMAT = 1


class Action(enum.Enum):
    CREATE = "+"
    REPLACE = "-/+"
    REUSE = "="
    RUN = ">"
    CHECK = "?"
    PROMOTE = "!"
    DESTROY = "-"

    @property
    def word(self) -> str:
        return _WORDS[self]


_WORDS = {
    Action.CREATE: "create",
    Action.REPLACE: "replace",
    Action.REUSE: "reuse",
    Action.RUN: "run",
    Action.CHECK: "check",
    Action.PROMOTE: "promote",
    Action.DESTROY: "destroy",
}
# Actions that change something: a plan made only of the others is "no changes".
CHANGING = frozenset({Action.CREATE, Action.REPLACE, Action.RUN, Action.PROMOTE, Action.DESTROY})


@attrs.frozen
class FieldChange:
    path: str
    before: Any
    after: Any


@attrs.frozen
class Change:
    addr: str
    kind: str
    action: Action
    reason: str
    identity: str
    fields: tuple[FieldChange, ...] = ()
    deps: tuple[str, ...] = ()
    after: tuple[str, ...] = ()
    experiments: tuple[str, ...] = ()
    host: str = "local"
    # a benchmark of a server already running (`url`): {"url", "launched":
    # False, "reported": what refresh heard it say, or "refresh_error"}
    endpoint: Any = attrs.field(default=None, eq=False)
    # the rule that decided `action` (plan.reasons.Why; `reason` is its prose):
    # None for a plan read from a file, which keeps the prose only
    why: Any = attrs.field(default=None, eq=False)
    # a paired benchmark measured from nothing that shares its baseline's
    # launches with others (diff.shared_blocks): the group, its leader
    # first, which the walk measures in shared blocks as planned
    shares: tuple[str, ...] = ()


@attrs.frozen
class Plan:
    spec: str
    spec_digest: str
    variables: tuple[tuple[str, str], ...]
    lineage: str | None
    serial: int
    changes: tuple[Change, ...]
    drift: tuple[str, ...] = ()
    rerun: bool = False
    targets: tuple[str, ...] = ()
    more: int = 0  # `--more N`: pairs a paired benchmark may add beyond its `max_runs`
    format_version: int = PLAN_FORMAT
    # what each benchmark that runs will cost (specdsl.plan.cost.Cost), in
    # plan order, and the gating verdicts left undecided (cost.Undecided)
    costs: tuple = ()
    undecided: tuple = ()
    # the apply-wide budget (`--max-launches`, `--max-time` in seconds), and
    # the worst case of each paired comparison (budget.Worst) and of the
    # whole apply (budget.ApplyWorst) against the budgets (specdsl.plan.budget)
    max_launches: int | None = None
    max_time: float | None = None
    worsts: tuple = ()
    apply_worst: Any = None
    # the plan file it was read from (`read_plan`); None for a plan made in
    # this process. Where it came from, not what it says: left out of equality.
    read_from: str | None = attrs.field(default=None, eq=False)

    def summary(self) -> dict[str, int]:
        counts = {a.word: 0 for a in Action}
        for c in self.changes:
            counts[c.action.word] += 1
        return counts

    @property
    def has_changes(self) -> bool:
        return any(c.action in CHANGING for c in self.changes)

    @property
    def pending(self) -> bool:
        """Work is left: a change, or a gating verdict left undecided
        (what `--detailed-exitcode` reports as 2)."""
        return self.has_changes or bool(self.undecided)

    def total(self):
        """The launches, runs and seconds of every benchmark that runs (cost.Total)."""
        from specdsl.plan.cost import total

        return total(self.costs)

    def worst(self, addr: str):
        return next((w for w in self.worsts if w.addr == addr), None)

    def cost(self, addr: str):
        return next((c for c in self.costs if c.addr == addr), None)

    def change(self, addr: str) -> Change | None:
        return next((c for c in self.changes if c.addr == addr), None)


@attrs.frozen
class Refresh:
    """What the hosts said still exists, gathered before planning (or taken
    from state alone with --no-refresh). `environments` and `servers` are
    identities found alive; `drift` explains each difference from state."""

    environments: frozenset[str] = frozenset()
    servers: frozenset[str] = frozenset()
    drift: tuple[str, ...] = ()
    # servers already running (`url`), asked what they are: (url shown,
    # identity dict or None, the error when it did not answer); empty with
    # --no-refresh (what state records is taken as true)
    endpoints: tuple = ()

    def endpoint(self, url: str) -> tuple[dict | None, str] | None:
        """(identity, error) refresh got from the server at `url`, or None when not asked."""
        for shown, identity, error in self.endpoints:
            if shown == url:
                return identity, error
        return None

    @classmethod
    def from_state(cls, state) -> "Refresh":
        """--no-refresh: what state records is taken as true (no host asked)."""
        if state is None:
            return cls()
        return cls(frozenset(e.identity for e in state.environments), frozenset(s.identity for s in state.servers))
