"""Executors: how the steps of a walk run. The scheduler (`scheduler.py`)
is the one place that knows dependencies, what has finished and what a
failure skips; an executor only runs steps and says how each ended.

Two shapes:

- the **local executor** (`LocalExecutor`): steps specdsl drives itself,
  process by process, through a `Host` (this machine, or one over SSH).
  The scheduler starts each of its steps when the step's dependencies and
  constraints (sessions, GPUs, `max_parallel`, `one_at_a_time`: the
  handler's attributes) allow, and `run_step` runs it through the handler
  of its kind, on the scheduler's thread pool. It takes every step of the
  plan that no other executor claims.
- a **batch executor** (`Executor`: the Slurm job runner,
  `apply.slurm.controller.SlurmExecutor`; a Kubernetes one would be
  another): steps that run somewhere specdsl does not drive process by
  process, handed over as one set and placed by the cluster's own
  scheduler. It claims its steps (`claims`), and `run` runs all of them.

The contract of every executor, which the scheduler relies on:

- **what it takes**: each step of the plan has exactly one executor. The
  batch executors claim first, in the order `apply.api.EXECUTORS` lists
  them (a step claimed by an earlier one is not offered to a later); the
  local executor takes the rest.
- **how it runs them**: `run(walk, steps, report)` blocks until every step
  of `steps` has ended; the scheduler calls it before it starts the local
  steps (whose checks and promotions read what the batch recorded), and
  counts its whole run as busy time. What a step records (runs, their
  folders, environments, step records) goes through `walk.writer`.
- **how failures propagate**: every step ends with exactly one
  `report.finish(outcome)`. The executor never skips a dependant itself:
  `finish` of a step that failed, was skipped or was interrupted skips its
  dependants in the plan, here and in every executor, by the scheduler's
  one rule (`scheduler.skip_dependants`), and those show in
  `report.finished` at once. So before it starts a step an executor asks
  `report.finished` whether it has ended already, and it reports a step
  it could not finish (its job ended first) as failed with why.
- **how interrupts propagate**: `walk.stop` set (Ctrl-C, a state that
  cannot be written) means start nothing new, cancel what runs, report
  what had started as `Status.INTERRUPTED` and what had not as
  `Status.SKIPPED` with `Reason.NOT_STARTED`, set
  `walk.result.interrupted`, and return. A local step sees the stop
  through its handler (`hosts.Cancelled`, below).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

import attrs

from specdsl.apply.context import StepContext, StepFailed, Walk
from specdsl.apply.outcome import Outcome, Reason, Status
from specdsl.hosts import Cancelled


@attrs.frozen
class Report:
    """What the scheduler gives a batch executor: `finish(outcome)`, the one
    way a step ends (it records the outcome, tells the hooks and skips the
    step's dependants when it ended badly), and `finished`, every step of
    the walk that has ended, in any executor, by address."""

    finish: Callable[[Outcome], None]
    finished: Mapping[str, Outcome]


class Executor(Protocol):
    """A batch executor (see the module's text for the contract)."""

    name: str

    def claims(self, walk: Walk) -> set[str]:
        """The addresses of the plan's steps this executor runs."""
        ...

    def run(self, walk: Walk, steps: frozenset[str], report: Report) -> None:
        """Run `steps` to their ends, each reported once through `report.finish`."""
        ...


class LocalExecutor:
    """The steps specdsl drives itself through a `Host`: one handler per
    step kind (`apply.steps.HANDLERS`), run one step at a time by the
    scheduler, under the constraints the handler declares."""

    name = "local"

    def __init__(self, handlers: Mapping[str, Any]) -> None:
        self.handlers = handlers

    def handler(self, step) -> Any:
        return self.handlers[step.kind]

    def run_step(self, ctx: StepContext) -> Outcome:
        """Run one step through its handler: its outcome, also when the
        handler raised (a failure, an interruption, a bug: each recorded
        with its run, and the walk goes on)."""
        step, handler = ctx.step, self.handler(ctx.step)
        try:
            return handler.run(ctx)
        except StepFailed as exc:
            handler_record_failure(ctx, "failed", exc.detail)
            return Outcome(step.addr, step.kind, Status.FAILED, Reason.ERROR, exc.detail, log=exc.log)
        except Cancelled:
            handler_record_failure(ctx, "interrupted", Reason.CANCELLED.text)
            return Outcome(step.addr, step.kind, Status.INTERRUPTED, Reason.CANCELLED, Reason.CANCELLED.text)
        except Exception as exc:  # a bug or an unexpected host error: record it, the walk goes on
            detail = f"unexpected error: {type(exc).__name__}: {exc}"
            handler_record_failure(ctx, "failed", detail)
            return Outcome(step.addr, step.kind, Status.FAILED, Reason.ERROR, detail)


def handler_record_failure(ctx: StepContext, status: str, detail: str) -> None:
    """A step that started a run and then failed or was interrupted: its
    run is recorded with why (state keeps every execution)."""
    if ctx.run_id is None:
        return
    run = ctx.writer.run_record(ctx.step, ctx.run_id, ctx.folder, ctx.started, status, reason=detail.splitlines()[0][:500])
    ctx.writer.step_done(ctx.step, run)
