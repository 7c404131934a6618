"""Small pieces several handlers share (the plain and the paired benchmark
both record the medians of their runs with `medians_of`)."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import attrs

from specdsl import bench
from specdsl.bench.results import RunResult
from specdsl.apply.context import StepContext, StepFailed
from specdsl.apply.outcome import Outcome, Reason, Status
from specdsl.apply.validity import valid as _valid


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


def localize_command(workload, spec_dir: Path, host):
    """A command workload's scripts named relative to the spec's folder
    (plan.files.command_scripts) made absolute, on this machine's host
    (elsewhere the command is the host's, or a login node's copies)."""
    if not workload.command or host.key != "local":
        return workload
    from specdsl.plan.files import command_scripts

    argv = list(workload.command)
    for i, _word, path in command_scripts(argv, Path(spec_dir)):
        if path.exists():
            argv[i] = str(path.resolve())
    return attrs.evolve(workload, command=tuple(argv)) if argv != list(workload.command) else workload


def stack_info(walk, provision: str, host, workload):
    """The environment (provision.EnvInfo) a command workload's `{python}`
    and `{bin}` name: the one this apply provisioned, else the one recorded
    under the provision's identity on the host (a server left running:
    nothing was provisioned); None when the command names neither."""
    from specdsl.model.placeholders import STACK_ENV, uses

    info = walk.envs.get(provision)
    if info is not None or not uses(workload.command, STACK_ENV):
        return info
    from specdsl.provision import find

    info = find(host, walk.graph.steps[provision].identity)
    if info is None:
        raise StepFailed(f"the environment of {provision} is not on {host.key}: the command's `{{python}}` "
                         "or `{bin}` cannot be given (apply again to build it)")
    return info


def command_stack(info, stack_env, server):
    """The stack's environment as a command workload sees it
    (bench.StackEnv): `{python}` and `{bin}` of `info` (an EnvInfo, or None
    when the command names neither), and the stack's variables, then the
    server's, for its process (as the server gets them)."""
    from specdsl.bench.command import StackEnv

    env = {k: str(v) for k, v in dict(stack_env).items()} | {k: str(v) for k, v in server.env}
    if info is None:
        return StackEnv(python="", bin="", env=env)
    return StackEnv(python=info.python, bin=str(Path(info.python).parent), env=env)


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


def prior_runs(ctx: StepContext, wanted: int) -> list:
    """The runs recorded for this identity when there are fewer than
    `wanted` and their folder still holds them; else [] (measure afresh)."""
    state = ctx.writer.state
    run = state.result(ctx.step.identity)
    if run is None or run.runs is None or run.runs >= wanted:
        return []
    try:
        doc = json.loads((ctx.writer.state_dir / run.folder / "result.json").read_text())
    except (OSError, ValueError):
        return []
    runs = _valid(bench.BenchResult.from_json(doc).runs)  # the invalid ones are made again
    return [attrs.evolve(r, index=i) for i, r in enumerate(runs)] if len(runs) == run.runs else []
