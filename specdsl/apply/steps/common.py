"""Small pieces several handlers share (the plain and the paired benchmark
both record the medians of their runs with `medians_of`)."""

from __future__ import annotations

import statistics
from pathlib import Path

import attrs

from specdsl.bench.results import RunResult
from specdsl.apply.context import StepContext
from specdsl.apply.outcome import Outcome, Reason, Status


def planned_reuse(ctx: StepContext, detail: str | None = None) -> Outcome:
    """The outcome of a step the plan reuses: its reason, as the plan said it."""
    change = ctx.change
    return Outcome(ctx.addr, ctx.step.kind, Status.REUSED, Reason.PLANNED_REUSE, detail or (change.reason if change else ""))


def completed(ctx: StepContext, detail: str, log: str = "", reused: bool = False) -> Outcome:
    return Outcome(ctx.addr, ctx.step.kind, Status.REUSED if reused else Status.COMPLETED, Reason.DONE, detail, log=log)


def localize(server, spec_dir: Path):
    """A model given as a path relative to the spec is made absolute (the
    spec's folder is on this machine, where the spec was read)."""
    model = server.model
    candidate = Path(spec_dir) / model
    if not Path(model).is_absolute() and (model.startswith(".") or candidate.exists()):
        return attrs.evolve(server, model=str(candidate.resolve()))
    return server


def medians_of(runs) -> dict[str, float]:
    """Each scalar metric's median across runs (what state records)."""
    names: dict[str, list[float]] = {}
    for run in runs:
        for name, value in run.metrics.items():
            names.setdefault(name, []).append(float(value))
    return {name: statistics.median(values) for name, values in sorted(names.items())}


def medians_of_runs(runs: list[dict]) -> dict[str, float]:
    """Each scalar metric's median across runs (given as result.json runs)."""
    return medians_of(RunResult.from_json(r) for r in runs)


def cache_facts(handle) -> dict:
    """What a launch records of its JIT cache (servers.caches): the folder's
    key, and whether it was cold; a plan reads which stacks have one."""
    if not handle.jit_cache:
        return {}
    return {"jit_cache": handle.jit_cache, "jit_cache_cold": bool(handle.cache_cold)}
