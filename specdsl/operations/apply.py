"""Apply as a library operation: the walk of a plan with the recorded
servers it will not reuse seen to first, everything recorded through one
state writer, every host reached through one registry. Nothing here
prints; progress goes to the caller's hooks, the outcome is returned."""

from __future__ import annotations

import threading
from pathlib import Path

from specdsl.operations.recorded_servers import graph_hosts, launch_identities


def survey(state, graph, registry) -> list:
    """Every server `state` records, with its condition now and whether the
    walk of `graph` reuses it (`apply.orphans.survey`)."""
    from specdsl.apply.orphans import survey as look

    return look(state, registry, graph_hosts(graph), launch_identities(graph))


def walk(plan, graph, *, spec: str | Path, state_dir: Path, state, lock, registry, variables: dict | None = None,
         seen: list | None = None, hooks=None, stop: threading.Event | None = None, then=None):
    """Walk `plan` (of `graph`, the spec at `spec`: its folder is where the
    steps find the spec's files) under the caller's `lock`, and return the
    `ApplyResult`. Recorded servers the walk will not reuse (`seen`, else
    surveyed here) are stopped first; a state that cannot be written then
    ends it before anything starts (the result says so). `then(writer,
    result)`, when given, records what the caller makes of the walk's result
    through the walk's own writer (calibrate's noise)."""
    from specdsl.apply import apply_plan
    from specdsl.apply.api import walk_writer
    from specdsl.apply.orphans import stop_stale
    from specdsl.apply.outcome import ApplyResult

    stop = stop or threading.Event()
    if seen is None:
        seen = survey(state, graph, registry)
    writer = walk_writer(state_dir, state, lock, stop)
    problems: list[str] = []
    if any(s.why for s in seen):
        problems = stop_stale(writer, seen)
        if writer.failure is not None:
            return ApplyResult(state_failure=writer.report(), warnings=problems)
    result = apply_plan(plan, graph, state_dir=state_dir, state=writer.state, lock=lock, spec_dir=Path(spec).parent,
                        registry=registry, hooks=hooks, stop=stop, variables=variables, writer=writer)
    for line in problems:
        result.warn(line)
    if then is not None:
        then(writer, result)
    return result
