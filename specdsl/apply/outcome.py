"""What a walk reports: one `Outcome` per planned step, and the `ApplyResult`.

Statuses and reasons are small enums whose values are stable codes (what
`--json` carries); `text` is for people.
"""

from __future__ import annotations

import enum

import attrs

from specdsl.exits import Exit
from specdsl.verdict.decision import Status as VerdictStatus


class Status(enum.Enum):
    COMPLETED = "completed"
    REUSED = "reused"
    FAILED = "failed"
    SKIPPED = "skipped"
    INTERRUPTED = "interrupted"

    @property
    def text(self) -> str:
        return self.value


class Reason(enum.Enum):
    """Why a step ended the way it did, when the status alone does not say."""

    DONE = "done"                      # it ran and did its work
    PLANNED_REUSE = "planned_reuse"    # the plan reuses it (detail: the plan's reason)
    NOT_NEEDED = "not_needed"          # nothing that runs needs it
    UPSTREAM_FAILED = "upstream_failed"  # a step it needs failed (detail names the root cause)
    NOT_STARTED = "not_started"        # apply was interrupted before it started
    CANCELLED = "cancelled"            # apply was interrupted while it ran
    ERROR = "error"                    # it failed (detail: what happened)
    CHECK_NOT_PASSED = "check_not_passed"  # a promotion whose checks did not all pass
    SEVERAL_PASSED = "several_passed"  # a promotion held: another candidate of its track passed too

    @property
    def text(self) -> str:
        return _REASON_TEXT[self]


_REASON_TEXT = {
    Reason.DONE: "done",
    Reason.PLANNED_REUSE: "reused as planned",
    Reason.NOT_NEEDED: "not needed",
    Reason.UPSTREAM_FAILED: "a step it needs failed",
    Reason.NOT_STARTED: "not started: apply was interrupted",
    Reason.CANCELLED: "interrupted while running",
    Reason.ERROR: "failed",
    Reason.CHECK_NOT_PASSED: "not promoted: a check did not pass",
    Reason.SEVERAL_PASSED: "not promoted: several candidates of the track passed",
}


class StepFailed(Exception):
    """A step could not do its work. `detail` says what happened (first line
    a summary); `log` where to look. (Here, beside the outcome it becomes,
    so that the state writer and the step context both import it from
    below them.)"""

    def __init__(self, detail: str, log: str = "") -> None:
        super().__init__(detail)
        self.detail = detail
        self.log = log


@attrs.frozen
class Outcome:
    """How one step ended. `detail` is the human line (values, the root
    cause, the error); `log` where to look; `root` the failed step that
    caused a skip."""

    addr: str
    kind: str
    status: Status
    reason: Reason = Reason.DONE
    detail: str = ""
    elapsed: float = 0.0
    log: str = ""
    root: str = ""
    verdict: str = ""  # a check: pass, fail or inconclusive


@attrs.define
class ApplyResult:
    outcomes: list[Outcome] = attrs.Factory(list)
    verdicts: list = attrs.Factory(list)  # (experiment, specdsl.verdict.Verdict)
    warnings: list[str] = attrs.Factory(list)
    interrupted: bool = False
    launches: int = 0
    wall: float = 0.0
    busy: float = 0.0  # time when at least one step was running
    state_failure: str = ""  # the state file could not be written: what is and is not recorded
    invalid_runs: int = 0  # benchmark runs made in this apply that are not measurements (specdsl.bench.validity)
    dropped_launches: int = 0  # launches whose warm-up did not settle, never measured (specdsl.bench.steady)

    @property
    def overhead(self) -> float:
        """Wall time spent outside every step: the engine's own cost."""
        return max(0.0, self.wall - self.busy)

    def counts(self) -> dict[Status, int]:
        out = {s: 0 for s in Status}
        for o in self.outcomes:
            out[o.status] += 1
        return out

    def warn(self, message: str) -> None:
        """Add a warning once."""
        if message not in self.warnings:
            self.warnings.append(message)

    def exit_code(self) -> Exit:
        if self.state_failure:
            return Exit.FAILED  # a step failed: recording its outcome
        if self.interrupted:
            return Exit.INTERRUPTED
        if any(o.status is Status.FAILED for o in self.outcomes):
            return Exit.FAILED
        if any(v.status is VerdictStatus.FAIL for _, v in self.verdicts):
            return Exit.CHECK_FAILED
        if any(v.status in (VerdictStatus.INCONCLUSIVE, VerdictStatus.ERROR) for _, v in self.verdicts):
            return Exit.UNDECIDED
        return Exit.OK


def union_length(intervals: list[tuple[float, float]]) -> float:
    """Total length covered by possibly overlapping intervals."""
    total, end = 0.0, float("-inf")
    for a, b in sorted(intervals):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total
