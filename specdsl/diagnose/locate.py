"""Find the recorded runs a diagnosis compares: an experiment's result and
its baseline's, from the spec's graph (identities) or from state alone."""

from __future__ import annotations

from pathlib import Path

import attrs
from specdsl.paired_result import PairedResult


class DiagnoseError(Exception):
    """What is missing to diagnose, and how to get it (a user's problem, not a bug)."""


@attrs.frozen
class Sides:
    """The two runs to compare (the same run for a paired result), with
    their experiments where the spec is known and the labels to show."""

    baseline_run: object
    candidate_run: object
    baseline: object = None
    candidate: object = None
    labels: tuple[str, str] = ("", "")


def sides_of(state, cfg, graph, name: str, *, spec: str = "") -> Sides:
    """The runs experiment `name` (of config `cfg`, graph `graph`) compares.
    DiagnoseError when it has no baseline or no recorded results."""
    exp = cfg.experiment(name) if cfg is not None else None
    if exp is None:
        from specdsl.diag import did_you_mean

        names = [e.name for e in cfg.experiments] if cfg is not None else []
        hint = did_you_mean(name, names) or ("experiments: " + ", ".join(names) if names else "")
        raise DiagnoseError(f"no experiment {name!r} in {spec or 'the spec'}" + (f"; {hint}" if hint else ""))
    again = f"specdsl apply {spec} --target {name}" if spec else f"specdsl apply FILE --target {name}"
    if exp.baseline is None:
        raise DiagnoseError(
            f"experiment {name!r} has no baseline to compare with: add `baseline = experiment.NAME` (or a track) "
            f"to it, or compare two experiments with `specdsl diff A B {spec}`".rstrip())
    bench = graph.steps.get(graph.by_experiment.get(name, {}).get("benchmark", ""))
    run = state.result(bench.identity) if (bench is not None and state is not None) else None
    if run is None:
        raise DiagnoseError(f"experiment {name!r} has no recorded results: run `{again}` first")
    if "paired" in bench.payload:
        return Sides(run, run, bench.payload["paired"], exp, (bench.payload["paired"].name, name))
    if exp.baseline.kind == "experiment":
        base_exp = cfg.experiment(exp.baseline.name)
        base_bench = graph.steps.get(graph.by_experiment.get(exp.baseline.name, {}).get("benchmark", ""))
        base_run = state.result(base_bench.identity) if base_bench is not None else None
        if base_run is None:
            raise DiagnoseError(f"the baseline {exp.baseline.name!r} of {name!r} has no recorded results: run "
                                f"`specdsl apply {spec or 'FILE'} --target {exp.baseline.name}` first")
        return Sides(base_run, run, base_exp, exp, (exp.baseline.name, name))
    base_id = state.baseline_for(exp.baseline.name, run.id)
    base_run = state.run(base_id) if base_id else None
    if base_run is None:
        raise DiagnoseError(f"track {exp.baseline.name!r}, the baseline of {name!r}, has no promoted run yet: "
                            f"promote one first (an experiment with `promote = \"{exp.baseline.name}\"`)")
    base_exp = cfg.experiment(base_run.experiment)
    return Sides(base_run, run, base_exp, exp, (f"{exp.baseline.name} ({base_run.experiment})", name))


def side_of(state, state_dir: Path, cfg, graph, ref: str, *, spec: str = "") -> tuple[object, object, str]:
    """(run, experiment or None, which arm: "candidate"/"baseline") for one
    side of `diff`: an experiment of the spec, an experiment recorded in
    state, or a run (`run.ID` as `state list` prints it, or the bare ID).
    A paired result is its candidate arm."""
    if state is None:
        raise DiagnoseError("nothing is recorded in this state folder yet: run `specdsl apply` first")
    run = state.run(ref) or (state.run(ref[len("run."):]) if ref.startswith("run.") else None)  # `run.ID` as state list prints it
    if run is not None:
        exp = cfg.experiment(run.experiment) if cfg is not None else None
        return run, exp, "candidate"
    exp = cfg.experiment(ref) if cfg is not None else None
    if exp is not None and graph is not None:
        bench = graph.steps.get(graph.by_experiment.get(ref, {}).get("benchmark", ""))
        run = state.result(bench.identity) if bench is not None else None
        if run is None:
            raise DiagnoseError(f"experiment {ref!r} has no recorded results: run `specdsl apply {spec or 'FILE'} --target {ref}` first")
        # a baseline measured only as its candidate's paired arm (graph `arm_only`): that result's A arm
        return run, exp, "baseline" if graph.arm(ref) == "A" else "candidate"
    found = [r for r in state.runs if r.step == f"benchmark.{ref}" and r.status == "completed"]
    if found:
        return found[-1], None, "candidate"
    # the baseline arm of a paired result that holds it
    for r in reversed(state.runs):
        if r.step.startswith("benchmark.") and r.status == "completed":
            from specdsl.apply.results import document_of

            doc = document_of(r, Path(state_dir))
            if doc and (doc.get("arms") or {}).get("A") == ref:
                return r, None, "baseline"
    raise DiagnoseError(f"no experiment or run {ref!r} is recorded" + (f" in {spec}" if spec else "")
                        + ": give an experiment name or a run, `run.ID` (`specdsl state list` shows them)")



def sides_from_state(state, state_dir: Path, name: str) -> Sides:
    """The runs of experiment `name` without its spec: only a paired result
    holds its baseline (otherwise the baseline is declared in the spec)."""
    from specdsl.apply.results import document_of

    runs = [r for r in (state.runs if state is not None else ()) if r.step == f"benchmark.{name}" and r.status == "completed"]
    if not runs:
        raise DiagnoseError(f"experiment {name!r} has no recorded results here: run `specdsl apply FILE --target {name}` "
                            "first (or give the spec FILE, or --state DIR)")
    run = runs[-1]
    doc = document_of(run, Path(state_dir))
    got = PairedResult.of(doc)
    arms = (got.arms if got is not None else (doc or {}).get("arms")) or {}
    if not (got and got.pairs and "A" in arms):
        raise DiagnoseError(f"the baseline of {name!r} is declared in its spec: give the spec FILE "
                            f"(`specdsl diagnose {name} FILE`)")
    return Sides(run, run, None, None, (arms["A"], name))
