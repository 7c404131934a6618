"""An arm: everything recorded about one side of a comparison.

Read from state and the run folders it names (this machine's files, as
`apply.results` reads them): the server's effective configuration, the
command that started it, the environment it ran in (resolved packages,
torch/CUDA/NCCL), and the facts and warnings of its log, read again with
the patterns of the engine's release, and the GPUs it ran on as its host's
preflight recorded them (`diagnose.gpus`). The experiment, when known (from
the spec), adds what was declared: stack, server args, environment
variables, host and workload; without it the server args are read back from
the command line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs

from specdsl import stats
from specdsl.apply.results import document_of, effective_of
from specdsl.diagnose import gpus as gpu_facts
from specdsl.facts.engines import engine as engine_facts
from specdsl.facts.engines import engine_of_argv
from specdsl.paired_result import PairedResult
from specdsl.servers import adapter_for
from specdsl.servers.args import asked_config
from specdsl.servers.logscan import scan_log_sourced

_MAX_LOG_BYTES = 64 * 1024 * 1024
# workload fields that say how much is measured, not what: a comparison of
# 2 runs with one of 6 measures the same load
_COUNTS = ("runs", "max_runs", "block", "max_launches", "max_time", "launch_estimate", "span", "name")


@attrs.frozen
class Arm:
    """One side. Values are text (`text()`), keyed as the category keys
    them; `declared` the effective keys (argparse dests) the spec set."""

    label: str
    run_id: str
    engine: str = ""
    effective: dict = attrs.Factory(dict)
    declared: frozenset = frozenset()
    args: dict = attrs.Factory(dict)
    stack: dict = attrs.Factory(dict)
    packages: dict = attrs.Factory(dict)
    env: dict = attrs.Factory(dict)
    host: dict = attrs.Factory(dict)
    gpus: dict = attrs.Factory(dict)  # the GPU facts of its host's preflight (diagnose.gpus)
    workload: dict = attrs.Factory(dict)
    warnings: tuple = ()
    metrics: dict = attrs.Factory(dict)
    notes: tuple = ()
    experiment: Any = None  # config.Experiment when the spec was given
    launches: tuple = ()  # the launches of this arm (their numbers in the run, as apply's warnings name them)
    warned: dict = attrs.Factory(dict)  # warning -> the launches whose log says it
    volatile: frozenset = frozenset()  # effective keys that differ between this arm's own launches
    sources: dict = attrs.Factory(dict)  # effective key -> the log message it was read from
    measured: str = ""  # what its metric figures are (specdsl.stats vocabulary)


def text(value: Any) -> str:
    """A value as the text a difference shows and compares."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, tuple) and value and all(isinstance(p, tuple) and len(p) == 2 for p in value):
        value = dict(value)
    return json.dumps(value, sort_keys=True, default=str)


def arm_of_run(state, state_dir: Path, run, *, side: str, experiment=None, label: str | None = None) -> Arm:
    """The arm of benchmark run `run`: for a paired run, its baseline arm
    (`side="baseline"`, letter A) or its candidate arm (B); otherwise the
    run itself. `experiment` (config.Experiment) is that arm's experiment."""
    state_dir = Path(state_dir)
    notes: list[str] = []
    doc = document_of(run, state_dir)
    got = PairedResult.of(doc)
    paired = bool(got and got.pairs and got.arms)
    numbered: list = []
    if paired:
        letter = "A" if side == "baseline" else "B"
        effective = dict(got.effective_of(letter))
        numbered = got.launches_of(letter)
        argv = tuple(numbered[-1][1].argv) if numbered else ()
        logs = [(i, state_dir / x.log) for i, x in numbered if x.log]
        name = got.name(letter, run.experiment)
        metrics, count = _arm_metrics(got, letter)
        measured = f"{stats.ARM_MEDIAN} (arm {letter}: {count} runs of paired benchmark run {run.id})"
        launch = None
    else:
        effective = effective_of(run)
        launch = _launch_of(state, run)
        argv = tuple(launch.argv) if launch is not None else tuple(run.argv)
        logs = [(0, state_dir / launch.folder / "server.log")] if launch is not None and launch.folder else []
        name = run.experiment
        metrics = dict(run.metrics)
        count = len((doc or {}).get("runs", ())) or run.runs
        measured = f"{stats.RUN_MEDIAN} ({f'{count} runs of ' if count else ''}benchmark run {run.id}, measured alone)"
    if experiment is not None:
        engine = experiment.server.engine
    else:
        engine = engine_of_argv(argv)
    adapter = adapter_for(engine)
    environment = _environment_of(state, argv)
    packages = dict(environment.packages) if environment is not None else {}
    if environment is not None:
        packages.update({f"torch.{k}": v for k, v in environment.torch if k != "version"})
        packages["python"] = environment.python_version
    elif argv:
        notes.append(f"{name}: no environment recorded for {argv[0]} (resolved versions unknown)")
    if experiment is not None:
        args = {"model": experiment.server.model, **{k: text(v) for k, v in experiment.server.args}}
        declared = frozenset(asked_config(engine, experiment.server.args))
    else:
        args = _args_from_argv(argv, experiment, engine)
        declared = frozenset(asked_config(engine, tuple(args.items())))
    _, version = adapter.distribution(_Packages(packages))
    warnings: list[str] = []
    warned: dict[str, list[int]] = {}
    log_facts: dict[str, Any] = {}
    sources: dict[str, str] = {}
    per_launch: list[dict[str, Any]] = []
    for number, path in logs:
        try:
            with open(path, "rb") as f:
                log = f.read(_MAX_LOG_BYTES).decode("utf-8", "replace")
        except OSError:
            notes.append(f"{name}: server log {path.name} is gone; its warnings are not compared")
            continue
        facts, found, said = scan_log_sourced(adapter, log, asked={k: True for k in declared}, version=version)
        facts = flatten(facts)
        per_launch.append(facts)
        log_facts.update(facts)
        sources.update(said)
        for w in found:
            if w not in warnings:
                warnings.append(w)
            warned.setdefault(w, []).append(number)
    # the log resolves what the report left unresolved ('auto', None), and
    # re-read with the release's patterns it may know more than the record
    effective = flatten(effective)
    for key, value in log_facts.items():
        if key not in effective or effective[key] in ("auto", None, ""):
            effective[key] = value
    sources = {k: v for k, v in sources.items() if text(log_facts.get(k)) == text(effective.get(k))}
    # what differs between two launches of this one configuration is noise
    # (ports, seeds): in their logs, and in the configurations they reported
    volatile = _varying(per_launch) | _varying([flatten(x.effective) for _, x in numbered if x.effective]
                                               if paired else [])
    if not logs and argv:
        notes.append(f"{name}: no server log found; its warnings are not compared")
    gpus = gpu_facts.facts_of(state, run, launch, experiment.host.name if experiment is not None else None)
    if environment is not None and environment.nvcc:
        packages["cuda.nvcc"] = environment.nvcc
    if experiment is not None:
        stack, env = _stack_of(experiment), _env_of(experiment)
    else:  # what the step records of state say the arm declared
        stack, env = _recorded_stack(state, run, side if paired else "candidate", launch)
    return Arm(
        label=label or name, run_id=run.id, engine=engine, effective=effective, declared=declared, args=args,
        stack=stack, packages=packages, env=env, host=_host_of(experiment), gpus=gpus,
        workload=_workload_of(experiment), warnings=tuple(warnings), metrics=metrics, notes=tuple(notes),
        experiment=experiment, measured=measured, launches=tuple(n for n, _ in logs),
        warned={w: tuple(ns) for w, ns in warned.items()}, volatile=volatile, sources=sources,
    )


def _varying(launches: list[dict]) -> frozenset:
    """The keys whose values are not the same in every launch (of two or more)."""
    if len(launches) < 2:
        return frozenset()
    return frozenset(k for k in set().union(*launches) if len({text(f.get(k)) for f in launches}) > 1)


def flatten(mapping: dict, prefix: str = "") -> dict:
    """A nested configuration as one level: `internal_states` (a dict, or
    SGLang's list of one dict per data-parallel rank) becomes
    `internal_states.avg_spec_accept_length` (`internal_states[1].x` past the
    first rank), so two arms are compared field by field, never as one blob."""
    out: dict = {}
    for key, value in mapping.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.update(flatten(value, name + "."))
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            for i, v in enumerate(value):
                out.update(flatten(v, f"{name}." if i == 0 else f"{name}[{i}]."))
        else:
            out[name] = value
    return out


def _recorded_stack(state, run, side: str, launch) -> tuple[dict[str, str], dict[str, str]]:
    """(declared stack, environment variables) of an arm from the step
    records of state: the paired benchmark's arm (or the launch step) names
    its provision step, whose record holds the stack as planned."""
    step = state.step(run.step) if launch is None else state.step(launch.step)
    content = step.content_dict() if step is not None else {}
    arm = (content.get("arms") or {}).get(side) if isinstance(content.get("arms"), dict) else content
    if not isinstance(arm, dict):
        return {}, {}
    prov = next((s for s in state.steps if s.kind == "provision" and s.identity == arm.get("provision")), None)
    stack = (prov.content_dict().get("stack") or {}) if prov is not None else {}
    out = {"python": stack.get("python"), "cuda": stack.get("cuda"), "installer": stack.get("installer")}
    for key in ("index", "find_links", "overrides", "exclude"):
        if stack.get(key):
            out[key] = text(list(stack[key]))
    for req in stack.get("packages") or ():
        out[f"packages.{_req_name(req)}"] = req
    env = {k: text(v) for k, v in (stack.get("env") or {}).items()}
    env.update({k: text(v) for k, v in ((arm.get("server") or {}).get("env") or {}).items()})
    return {k: text(v) for k, v in out.items() if v is not None}, env


class _Packages:
    """Just enough of an EnvInfo for `Adapter.distribution`."""

    def __init__(self, packages: dict) -> None:
        self.packages = packages


def _arm_metrics(got: PairedResult, letter: str) -> tuple[dict[str, float], int]:
    """The median of each metric over arm `letter`'s runs, and how many runs."""
    from statistics import median

    runs = got.run_indexes(letter)
    values: dict[str, list[float]] = {}
    for r in got.runs:
        if r.get("index") in runs:
            for k, v in (r.get("metrics") or {}).items():
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    values.setdefault(k, []).append(float(v))
    return {k: median(v) for k, v in sorted(values.items())}, len(runs)


def _launch_of(state, run):
    """The launch run that started the server `run` measured: the last
    completed launch of its experiment that began before it."""
    best = None
    for r in state.runs:
        if r.step.startswith("launch.") and r.status == "completed" and r.started <= run.started \
                and (r.experiment == run.experiment or r.step == f"launch.{run.experiment}"):
            best = r
    return best


def _environment_of(state, argv: tuple[str, ...]):
    if not argv:
        return None
    head = argv[0]
    for env in state.environments:
        if head == env.python or head.startswith(env.path.rstrip("/") + "/"):
            return env
    return None


def _args_from_argv(argv: tuple[str, ...], experiment, engine: str = "command") -> dict[str, str]:
    """`--flag value` / `--flag` pairs of a command line, but the ones
    specdsl adds itself (the engine's managed flags, facts/engines): host
    and port left out, the model's flag (`model-path`) as `model`."""
    managed = engine_facts(engine).managed
    out: dict[str, str] = {}
    items = list(argv)
    i = 0
    while i < len(items):
        word = items[i]
        if word.startswith("--") and len(word) > 2:
            name, eq, value = word[2:].partition("=")
            if not eq:
                if i + 1 < len(items) and not items[i + 1].startswith("--"):
                    value = items[i + 1]
                    i += 1
                else:
                    value = "true"
            if managed.get(name, name) == "model":
                out["model"] = value
            elif name not in managed:
                out[name] = value
        elif i == 2 and len(items) > 1 and items[1] == "serve":  # `transformers serve MODEL`, `vllm serve MODEL`
            out["model"] = word
        i += 1
    return out


def _stack_of(exp) -> dict[str, str]:
    if exp is None:
        return {}
    s = exp.stack
    out = {"python": s.python, "cuda": s.cuda, "installer": s.installer,
           "index": text(list(s.index)) if s.index else None,
           "find_links": text(list(s.find_links)) if s.find_links else None,
           "overrides": text(list(s.overrides)) if s.overrides else None,
           "exclude": text(list(s.exclude)) if s.exclude else None}
    for req in s.packages:
        out[f"packages.{_req_name(req)}"] = req
    return {k: v for k, v in out.items() if v is not None}


def _req_name(req: str) -> str:
    import re

    m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", req)
    return (m.group(1) if m else req).lower().replace("_", "-")


def _env_of(exp) -> dict[str, str]:
    if exp is None:
        return {}
    out = {k: text(v) for k, v in exp.stack.env}
    out.update({k: text(v) for k, v in exp.server.env})
    return out


def _host_of(exp) -> dict[str, str]:
    if exp is None:
        return {}
    h = exp.host
    return {k: text(v) for k, v in (("name", h.name), ("ssh", h.ssh), ("gpus", h.gpus), ("workdir", h.workdir)) if v is not None}


def _workload_of(exp) -> dict[str, str]:
    if exp is None:
        return {}
    out = {}
    for field in attrs.fields(type(exp.workload)):
        if field.name in _COUNTS:
            continue
        value = getattr(exp.workload, field.name)
        if value is None or value == ():
            continue
        out[field.name] = text(value)
    return out

