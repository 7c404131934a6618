"""The launch and run durations recorded in a state folder, for the plan's
cost (`specdsl.plan.cost`). Reads the state and the run folders'
`result.json`; writes nothing, asks no host.

- a launch: a launch step's run records `launch_s` (seconds from the
  server's start to ready: specdsl.apply.steps.launch); a paired
  benchmark's result holds one entry per launch, with `launch_s` where it
  was recorded;
- a JIT cache: a launch run's effective `jit_cache` (`HOST ENV-IDENTITY`,
  servers.caches), or a paired result's launch entry's;
- by engine and model too (`cost.model_key`): the plan's budget reads them
  when this server was never launched (specdsl.plan.budget);
- a run: a paired result's launches carry `run_s`, the walk's own timing
  of each run they served (requests, counters, records); else each run of a
  result, `duration_s` where recorded, else the load generator's `duration`
  metric (seconds of traffic); a user's command in a plain benchmark
  records neither, and its runs have no duration.

Keys are what makes durations comparable: the launch identity (the server
and its environment), and for runs that with the workload (`cost.run_key`).
A benchmark run is read when its identity is a benchmark step of the graph
or one recorded at a step address (its content tells its servers).
"""

from __future__ import annotations

import json
from pathlib import Path

from specdsl.paired_result import PairedResult
from specdsl.plan.cost import Durations, arm_launch_identity, model_key, model_run_key, run_key, server_key

LAUNCH_S = "launch_s"
_ARMS = {"A": "baseline", "B": "candidate"}


def recorded_durations(state, state_dir: Path | None, graph=None, wanted: set[str] | None = None) -> Durations:
    """The durations recorded in `state` (and its run folders under
    `state_dir`). With `wanted` (benchmark addresses of `graph`), only the
    run folders whose servers or runs those benchmarks share are read (a
    result.json holds every request's samples: a plan of a few benchmarks
    does not read a sweep's thousand)."""
    if state is None:
        return Durations()
    launches: dict[str, list[float]] = {}
    runs: dict[str, list[float]] = {}
    caches: set[str] = set()
    by_model: tuple[dict, dict] = ({}, {})  # the same by engine and model (cost.model_key, cost.model_run_key)
    launch_contents = {}
    for record in state.steps:
        if record.kind == "launch":
            try:
                launch_contents[record.identity] = record.content_dict()
            except ValueError:
                continue
    for run in state.runs:
        if run.status == "completed" and run.step.startswith("launch.") and run.metric(LAUNCH_S) is not None:
            launches.setdefault(run.identity, []).append(run.metric(LAUNCH_S))
            cache = dict(run.effective).get("jit_cache")
            if isinstance(cache, str) and cache:
                caches.add(cache)
            if isinstance(launch_contents.get(run.identity, {}).get("server"), dict):
                by_model[0].setdefault(model_key(launch_contents[run.identity]), []).append(run.metric(LAUNCH_S))
    if state_dir is None:
        return Durations.of(launches, runs, caches, *by_model)
    contents: dict[str, dict] = {}
    for record in state.steps:
        if record.kind == "benchmark":
            try:
                contents[record.identity] = record.content_dict()
            except ValueError:
                continue
    for step in (graph.steps.values() if graph is not None else ()):
        if step.kind == "benchmark":
            contents[step.identity] = step.content
    keys = None
    if wanted is not None and graph is not None:
        keys = set().union(*(_keys(graph.steps[a].content) for a in wanted if a in graph.steps))
    for run in state.runs:
        content = contents.get(run.identity)
        if content is None or run.status != "completed" or not run.step.startswith("benchmark.") or not run.folder:
            continue
        if keys is not None and not keys & _keys(content):
            continue
        doc = _document(Path(state_dir) / run.folder)
        if doc is None:
            continue
        try:
            paired = PairedResult.of(doc)
            caches |= {x.jit_cache for x in (paired.launches or ()) if isinstance(x.jit_cache, str)} if paired else set()
            _read(doc, content, launches, runs, by_model)
        except (KeyError, TypeError, ValueError):
            continue  # a result this reader does not understand: its durations are not used
    return Durations.of(launches, runs, caches, *by_model)


def _keys(content: dict) -> set[str]:
    """The launch identities and run keys a benchmark's content names."""
    try:
        if "arms" in content:
            ids = {arm: arm_launch_identity(content, arm) for arm in _ARMS.values()}
            models = {model_key(content["arms"][arm]) for arm in _ARMS.values()}
            models |= {model_run_key(content["arms"][arm], content, arm) for arm in _ARMS.values()}
            return set(ids.values()) | {run_key(i, content, arm) for arm, i in ids.items()} | models
        key = server_key(content)
        return {key, run_key(key, content)}
    except (KeyError, TypeError):
        return set()


def _document(folder: Path) -> dict | None:
    for name in ("result.json", "results.json"):
        try:
            doc = json.loads((folder / name).read_text())
        except (OSError, ValueError):
            continue
        return doc if isinstance(doc, dict) else None
    return None


def _seconds(run: dict) -> float | None:
    value = run.get("duration_s")
    if value is None:
        value = (run.get("metrics") or {}).get("duration")
    return float(value) if isinstance(value, (int, float)) and value >= 0 else None


def _read(doc: dict, content: dict, launches: dict, runs: dict, by_model: tuple[dict, dict] = ({}, {})) -> None:
    by_index = {r["index"]: r for r in doc.get("runs", ())}
    paired = PairedResult.of(doc)
    if paired is not None and paired.pairs and "arms" in content:
        ids = {letter: arm_launch_identity(content, arm) for letter, arm in _ARMS.items()}
        timed = False  # the walk's own timing of each run (a launch's `run_s`): what a run costs, overhead included
        for entry in paired.launches or ():
            if entry.arm not in ids:
                continue
            arm = _ARMS[entry.arm]
            launch_s = entry.timed_launch()
            if launch_s is not None:
                launches.setdefault(ids[entry.arm], []).append(launch_s)
                by_model[0].setdefault(model_key(content["arms"][arm]), []).append(launch_s)
            if entry.run_s:
                seconds = list(entry.timed_runs())
                runs.setdefault(run_key(ids[entry.arm], content, arm), []).extend(seconds)
                by_model[1].setdefault(model_run_key(content["arms"][arm], content, arm), []).extend(seconds)
                timed = True
        for _pair, block in ([] if timed else paired.blocks()):
            letter = block.arm
            key = run_key(ids[letter], content, _ARMS[letter])
            same_model = model_run_key(content["arms"][_ARMS[letter]], content, _ARMS[letter])
            for i in block.runs:
                seconds = _seconds(by_index.get(i, {}))
                if seconds is not None:
                    runs.setdefault(key, []).append(seconds)
                    by_model[1].setdefault(same_model, []).append(seconds)
        return
    if "launch" in content or "endpoint" in content:
        key = run_key(server_key(content), content)
        for r in doc.get("runs", ()):
            seconds = _seconds(r)
            if seconds is not None:
                runs.setdefault(key, []).append(seconds)
