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

from specdsl.apply.results import document_of, effective_of
from specdsl.diagnose import gpus as gpu_facts
from specdsl.servers import adapter_for
from specdsl.servers.args import asked_config
from specdsl.servers.logscan import scan_log

_MAX_LOG_BYTES = 64 * 1024 * 1024
# workload fields that say how much is measured, not what: a comparison of
# 2 runs with one of 6 measures the same load
_COUNTS = ("runs", "max_runs", "block", "span", "name")


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
    paired = bool(doc and doc.get("pairs") and doc.get("arms"))
    if paired:
        letter = "A" if side == "baseline" else "B"
        effective = dict((doc.get("effective") or {}).get(letter) or {})
        launches = [x for x in doc.get("launches", ()) if x.get("arm") == letter]
        argv = tuple(launches[-1]["argv"]) if launches else ()
        logs = [state_dir / x["log"] for x in launches if x.get("log")]
        name = doc["arms"].get(letter, run.experiment)
        metrics = _arm_metrics(doc, letter)
        launch = None
    else:
        effective = effective_of(run)
        launch = _launch_of(state, run)
        argv = tuple(launch.argv) if launch is not None else tuple(run.argv)
        logs = [state_dir / launch.folder / "server.log"] if launch is not None and launch.folder else []
        name = run.experiment
        metrics = dict(run.metrics)
    if experiment is not None:
        engine = experiment.server.engine
    else:
        engine = _engine_of(argv)
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
        args = _args_from_argv(argv, experiment)
        declared = frozenset(asked_config(engine, tuple(args.items())))
    _, version = adapter.distribution(_Packages(packages))
    warnings: list[str] = []
    log_facts: dict[str, Any] = {}
    for path in logs:
        try:
            with open(path, "rb") as f:
                log = f.read(_MAX_LOG_BYTES).decode("utf-8", "replace")
        except OSError:
            notes.append(f"{name}: server log {path.name} is gone; its warnings are not compared")
            continue
        facts, found = scan_log(adapter, log, asked={k: True for k in declared}, version=version)
        log_facts.update(facts)
        warnings += [w for w in found if w not in warnings]
    # the log resolves what the report left unresolved ('auto', None), and
    # re-read with the release's patterns it may know more than the record
    for key, value in log_facts.items():
        if key not in effective or effective[key] in ("auto", None, ""):
            effective[key] = value
    if not logs and argv:
        notes.append(f"{name}: no server log found; its warnings are not compared")
    gpus = gpu_facts.facts_of(state, run, launch, experiment.host.name if experiment is not None else None)
    return Arm(
        label=label or name, run_id=run.id, engine=engine, effective=effective, declared=declared, args=args,
        stack=_stack_of(experiment), packages=packages, env=_env_of(experiment), host=_host_of(experiment), gpus=gpus,
        workload=_workload_of(experiment), warnings=tuple(warnings), metrics=metrics, notes=tuple(notes),
        experiment=experiment,
    )


class _Packages:
    """Just enough of an EnvInfo for `Adapter.distribution`."""

    def __init__(self, packages: dict) -> None:
        self.packages = packages


def _arm_metrics(doc: dict, letter: str) -> dict[str, float]:
    from statistics import median

    runs = {i for p in doc.get("pairs", ()) for b in p["blocks"] if b["arm"] == letter for i in b["runs"]}
    values: dict[str, list[float]] = {}
    for r in doc.get("runs", ()):
        if r.get("index") in runs:
            for k, v in (r.get("metrics") or {}).items():
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    values.setdefault(k, []).append(float(v))
    return {k: median(v) for k, v in sorted(values.items())}


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


def _engine_of(argv: tuple[str, ...]) -> str:
    joined = " ".join(argv)
    if "sglang.launch_server" in joined:
        return "sglang"
    if "vllm" in joined:
        return "vllm"
    if len(argv) > 1 and Path(argv[0]).name == "transformers" or "transformers.cli" in joined:
        return "transformers"
    return "command"


_OWN_FLAGS = ("host", "port")


def _args_from_argv(argv: tuple[str, ...], experiment) -> dict[str, str]:
    """`--flag value` / `--flag` pairs of a command line (not the ones
    specdsl adds itself: host, port, model)."""
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
            if name not in _OWN_FLAGS:
                out["model" if name == "model-path" else name] = value
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

