"""Apply as a library call: `apply_plan` walks a plan and returns what happened.

The CLI parses arguments, takes the state lock, confirms and renders; code
that builds experiments itself (bisect, calibrate) calls `apply_plan` with a
plan of its own (`specdsl.operations` makes those plans and walks them).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from specdsl.apply.context import Hooks, QuietHooks, Walk
from specdsl.apply.executor import LocalExecutor
from specdsl.apply.outcome import ApplyResult
from specdsl.apply.scheduler import Scheduler
from specdsl.apply.slurm.controller import SlurmExecutor
from specdsl.apply.state_writer import StateWriter
from specdsl.apply.steps import HANDLERS
from specdsl.apply.steps.launch import stop_server
from specdsl.apply.steps.promote import order_rivals
from specdsl.hosts import HostRegistry
from specdsl.state import LockInfo, State

DEFAULT_WORKERS = 4

# The batch executors, in the order they claim steps (apply/executor.py);
# the local executor (the steps' handlers, through each step's `Host`) runs
# what none of them claims. A new executor is one entry here.
EXECUTORS = (SlurmExecutor(),)


def apply_plan(
    plan,
    graph,
    *,
    state_dir: Path,
    state: State | None,
    lock: LockInfo | None,
    spec_dir: Path,
    registry: HostRegistry | None = None,
    hooks: Hooks | None = None,
    stop: threading.Event | None = None,
    variables: dict[str, Any] | None = None,
    workers: int = DEFAULT_WORKERS,
    writer: StateWriter | None = None,
) -> ApplyResult:
    """Do what `plan` says for the steps of `graph`, recording into the state
    folder `state_dir` (whose lock `lock` the caller holds), and return the
    outcome of every step, the verdicts and the warnings. Servers this walk
    started are stopped before it returns, except `keep_running` ones when
    it was not interrupted. Never raises for a step that fails: that is an
    outcome. `writer`: the operation's one state writer (`walk_writer`, on
    the same `stop`), when it recorded something before the walk; then it
    records the walk too, and `state` is what it holds."""
    own_registry = registry is None
    registry = registry or HostRegistry()
    graph = order_rivals(graph)  # the promote steps of one track decide knowing each other's verdicts
    stop = stop or threading.Event()
    writer = writer or walk_writer(state_dir, state, lock, stop)
    walk = Walk(plan, graph, writer, registry, Path(spec_dir), hooks or QuietHooks(), stop, dict(variables or {}))
    try:
        Scheduler(walk, LocalExecutor(HANDLERS), executors=EXECUTORS, workers=workers).run()
    finally:
        for launch, handle in list(walk.handles.items()):
            step = graph.steps[launch]
            if walk.stop.is_set() or not step.payload["server"].keep_running:
                stop_server(walk, launch, handle, walk.host_of(step), quiet=True)
        if own_registry:
            registry.close()
    if walk.stop.is_set():
        walk.result.interrupted = not writer.stopped_walk  # stopped by the state, not by a signal
    if writer.failure is not None:
        writer.flush()
        walk.result.state_failure = writer.report()
    return walk.result


def walk_writer(state_dir: Path, state: State | None, lock: LockInfo | None, stop: threading.Event) -> StateWriter:
    """The state writer of a walk stopped by `stop`: a state that cannot be
    written stops the walk (see StateWriter)."""

    def on_failure() -> bool:
        stopped, _ = not stop.is_set(), stop.set()
        return stopped

    return StateWriter(Path(state_dir).resolve(), state or State.new(), lock, on_failure=on_failure)
