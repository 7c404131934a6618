"""What the walker does at each step that touches a host, results or state
records: kept apart from the scheduling in walker.py."""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
from pathlib import Path
from typing import Any

import attrs

from specdsl import bench, servers
from specdsl.apply.checks import Results
from specdsl.servers.launch import health_url
from specdsl.state import Environment, ServerRecord, State, utc_now

NVIDIA_SMI_TIMEOUT_S = 30


def preflight(host) -> str | None:
    """None when `host` can run the plan, else what is wrong."""
    if host.ssh:
        return (f"host {host.name} is reached over ssh ({host.ssh}); this version of specdsl runs on the local "
                "host only: leave out `ssh` to run here")
    if host.gpus:
        smi = shutil.which("nvidia-smi")
        if smi is None:
            return f"host {host.name} declares gpus = {host.gpus} but nvidia-smi is not installed here"
        try:
            out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=NVIDIA_SMI_TIMEOUT_S, start_new_session=True)
        except subprocess.TimeoutExpired:
            return f"nvidia-smi did not answer within {NVIDIA_SMI_TIMEOUT_S}s"
        found = sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))
        if found < host.gpus:
            return f"host {host.name} declares gpus = {host.gpus} but nvidia-smi lists {found}"
    return None


def localize(server, spec_dir: Path):
    """A model given as a path relative to the spec is made absolute."""
    model = server.model
    candidate = (Path(spec_dir) / model)
    if not Path(model).is_absolute() and (model.startswith(".") or candidate.exists()):
        return attrs.evolve(server, model=str(candidate.resolve()))
    return server


def environment_record(record, step) -> Environment:
    return Environment(
        identity=step.identity,
        host=step.host,
        path=record.path,
        python=record.python,
        python_version=record.python_version,
        packages=record.packages,
        torch={k: v for k, v in (record.torch or {}).items() if v is not None},
        created=record.created,
    )


def server_record(handle, step) -> ServerRecord:
    return ServerRecord(
        identity=step.identity,
        addr=step.addr,
        host=step.host,
        pid=handle.pid,
        pgid=handle.pgid,
        port=handle.port,
        base_url=handle.base_url,
        log=handle.log_path,
        started=utc_now(),
    )


def handle_from_record(record: ServerRecord, server) -> servers.ServerHandle:
    return servers.ServerHandle(
        pid=record.pid, pgid=record.pgid, port=record.port, host="127.0.0.1", base_url=record.base_url,
        log_path=record.log, argv=(), engine=server.engine, model=server.model,
        health_url=health_url(server, record.base_url),
    )


def run_workload(workload, server, handle, folder: Path, *, progress, stop) -> bench.BenchResult:
    if workload.command:
        return bench.run_command_workload(workload, host=handle.host, port=handle.port, model=server.model, out_dir=folder, stop=stop)
    tokenizer = server.model if Path(server.model).is_dir() else None
    return bench.run_benchmark(workload, handle.base_url, server.model, folder, engine=server.engine, tokenizer=tokenizer,
                               progress=progress, stop=stop)


def effective(server, handle) -> tuple[dict[str, Any], list[str]]:
    try:
        return servers.effective_config(server, handle)
    except Exception as exc:  # an unreadable report must not lose the benchmark's results
        return {}, [f"could not read the effective configuration: {exc}"]


def medians(result: bench.BenchResult) -> dict[str, float]:
    """Each scalar metric's median across runs (what state records)."""
    names: dict[str, list[float]] = {}
    for run in result.runs:
        for name, value in run.metrics.items():
            names.setdefault(name, []).append(float(value))
    return {name: statistics.median(values) for name, values in sorted(names.items())}


def _results_of_run(run, state_dir: Path) -> Results | None:
    if run is None:
        return None
    effective = {k: _decode(v) for k, v in run.effective}
    folder = Path(state_dir) / run.folder
    path = folder / "results.json"
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        # the run folder is gone: fall back to the medians state recorded
        return Results((dict(run.metrics),), {}, effective)
    return Results.from_bench(doc, effective)


def _decode(value):
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def load_results(state: State, state_dir: Path, bench_identity: str) -> Results | None:
    """The recorded results of the benchmark step `bench_identity`."""
    return _results_of_run(state.result(bench_identity), state_dir)


def baseline_results(state: State, state_dir: Path, exp, graph) -> Results | None:
    """The results `baseline.X` reads for `exp`: another experiment's
    benchmark, or the run a track's baseline points at."""
    if exp.baseline is None:
        return None
    if exp.baseline.kind == "experiment":
        bench_addr = graph.by_experiment.get(exp.baseline.name, {}).get("benchmark")
        if bench_addr is None:
            return None
        return load_results(state, state_dir, graph.steps[bench_addr].identity)
    base = state.baseline(exp.baseline.name)
    if base is None:
        return None
    return _results_of_run(state.run(base.run), state_dir)


def env_summary(record, state: State, identity: str) -> dict | None:
    if record is not None:
        return {"python_version": record.python_version, "packages": dict(record.packages),
                "torch": {k: v for k, v in (record.torch or {}).items() if v is not None}, "nvcc": record.nvcc}
    env = state.environment(identity)
    if env is None:
        return None
    return {"python_version": env.python_version, "packages": dict(env.packages), "torch": dict(env.torch)}
