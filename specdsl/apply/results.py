"""The recorded results an assertion reads: a benchmark's valid runs from
its run folder (`result.json`; specdsl.bench.validity), or the medians
state kept when the folder is gone."""

from __future__ import annotations

import json
from pathlib import Path

from specdsl.apply.checks import Results
from specdsl.bench.validity import valid_document
from specdsl.paired_result import PairedResult
from specdsl.state import State

RESULT_FILE = "result.json"
_OLD_RESULT_FILE = "results.json"  # what run folders of earlier versions hold


def _decode(value):
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def effective_of(run) -> dict:
    return {k: _decode(v) for k, v in run.effective}


def document_of(run, state_dir: Path) -> dict | None:
    """The result document a benchmark run left in its folder, None when gone."""
    folder = Path(state_dir) / run.folder
    for name in (RESULT_FILE, _OLD_RESULT_FILE):
        try:
            return json.loads((folder / name).read_text())
        except (OSError, ValueError):
            continue
    return None


def results_of_run(run, state_dir: Path) -> Results | None:
    if run is None:
        return None
    effective = effective_of(run)
    doc = valid_document(document_of(run, state_dir))  # an invalid run is never read
    if doc is not None:
        paired = PairedResult.of(doc)
        if paired is not None and paired.pairs:  # a paired result: the candidate's runs are this experiment's results
            from specdsl.apply.judge import blocks_of

            return blocks_of(doc, effective)[1]
        return Results.from_bench(doc, effective)
    # the run folder is gone: fall back to the medians state recorded
    return Results((dict(run.metrics),), {}, effective)


def per_run(run, state_dir: Path) -> tuple[Results, ...]:
    """One Results per run of a benchmark run (for intervals over runs)."""
    if run is None:
        return ()
    doc = valid_document(document_of(run, state_dir))
    effective = effective_of(run)
    if doc is None:
        return (Results((dict(run.metrics),), {}, effective),)
    return tuple(Results.from_bench({"runs": [r]}, effective) for r in doc.get("runs", ()))


def load_results(state: State, state_dir: Path, bench_identity: str) -> Results | None:
    """The recorded results of the benchmark step `bench_identity`."""
    return results_of_run(state.result(bench_identity), state_dir)


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
    # once this experiment's result is the track's baseline, it compares
    # with the run it replaced, not with itself
    mine = state.result(graph.steps[graph.by_experiment[exp.name]["benchmark"]].identity)
    base = state.baseline_for(exp.baseline.name, mine.id if mine is not None else None)
    if base is None:
        return None
    return results_of_run(state.run(base), state_dir)
