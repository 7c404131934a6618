"""Calibrate as a library operation: an experiment measured against itself
(A/A pairs, interleaved as a real comparison is), and from that result the
noise a comparison of it meets, recorded in state as a run of step
`calibrate.EXPERIMENT` through the walk's own state writer. `specdsl plan`
reads it for each assertion's detectable effect and for `block` when a
workload sets none. Nothing here prints."""

from __future__ import annotations

import math

import attrs

from specdsl.model import config
from specdsl.paired_result import PairedResult


@attrs.frozen
class Calibration:
    """What one calibration measured: `noise` (sd of the per-pair log ratio,
    per metric), `parts` (`noise_run.*`, `noise_launch.*`), `costs`
    (`cost.launch_s`, `cost.run_s`), `block` (`block.suggested`, or empty)."""

    pairs: int
    noise: dict
    parts: dict
    costs: dict
    block: dict


def aa_config(cfg: config.Config, exp: config.Experiment, pairs: int) -> tuple[config.Config, str]:
    """A config whose one comparison measures `exp` against a copy of itself,
    with at least 2 runs on every launch (the run noise is the spread inside
    a launch, the launch noise what is left between launches)."""
    block = max(2, exp.workload.block or 2)
    # `runs` counts the runs of each arm (plan.economy): `pairs` launches of `block` runs; `--pairs` is
    # what it measures: the comparison's own budget (max_launches, max_time) is not its
    workload = attrs.evolve(exp.workload, runs=pairs * block, max_runs=pairs * block, block=block,
                            max_launches=None, max_time=None)
    twin = attrs.evolve(exp, name=f"{exp.name}~aa", asserts=(), promote=None, baseline=None, workload=workload)
    cand = attrs.evolve(exp, name=f"{exp.name}~calibrate", asserts=(), promote=None, workload=workload,
                        baseline=config.BaselineRef("experiment", twin.name))
    return attrs.evolve(cfg, experiments=(twin, cand)), cand.name


def record(writer, graph, cand: str, exp: config.Experiment, state_dir) -> Calibration:
    """Read the A/A result the walk just recorded (`benchmark.CAND` of
    `graph`) from `writer`'s state, compute the noise and record it through
    `writer` (the walk's one state writer). A state that cannot be written
    raises its StateError."""
    from specdsl.apply.judge import blocks_of
    from specdsl.apply.results import document_of
    from specdsl.state import RunRecord, new_run_id, utc_now
    from specdsl.verdict import noise_of

    identity = graph.steps[f"benchmark.{cand}"].identity
    run = writer.state.result(identity)
    doc = document_of(run, state_dir)
    _, _, pairs = blocks_of(doc, {})
    names = sorted({k for r in doc["runs"] for k, v in r.get("metrics", {}).items() if isinstance(v, (int, float))})
    noise = {}
    for name in names:
        values = [(_mean(a, name), _mean(b, name)) for a, b in pairs]
        if all(x > 0 and y > 0 for x, y in values):
            noise[name] = noise_of(values)
    parts = components(doc, noise)
    costs = launch_and_run_costs(doc)
    block = suggested_block(parts, costs, exp)
    entry = RunRecord(id=new_run_id(), step=f"calibrate.{exp.name}", identity=identity, experiment=exp.name,
                      status="completed", started=run.started, finished=utc_now(), folder=run.folder, runs=len(pairs),
                      metrics={f"noise.{k}": v for k, v in noise.items()} | parts | costs | block,
                      reason=f"A/A noise of {exp.name} over {len(pairs)} pairs")
    writer.change(lambda s: s.with_run(entry), f"calibrate.{exp.name}")
    if writer.failure is not None:
        raise writer.failure
    return Calibration(pairs=len(pairs), noise=noise, parts=parts, costs=costs, block=block)


def components(doc: dict, noise: dict[str, float]) -> dict[str, float]:
    """`noise_run.METRIC` and `noise_launch.METRIC`: the sd of a run's log
    value inside one launch and of a launch's own level (one-way
    random-effects ANOVA over the launches of both arms, each arm's mean
    removed: verdict.variance_components)."""
    from specdsl.verdict import variance_components

    got = PairedResult.of(doc)
    runs = {r["index"]: r.get("metrics", {}) for r in got.runs}
    blocks = [b for _p, b in got.blocks()]
    out: dict[str, float] = {}
    for name in noise:
        values = [[runs.get(i, {}).get(name) for i in b.runs] for b in blocks]
        if not all(v and all(isinstance(x, (int, float)) and x > 0 for x in v) for v in values):
            continue  # a launch without this metric, or a value no log takes
        by_arm: dict[str, list[list[float]]] = {}
        for b, v in zip(blocks, values):
            by_arm.setdefault(b.arm, []).append([math.log(x) for x in v])
        groups = []
        for arm_groups in by_arm.values():  # an arm's own mean out: arms may differ by a constant
            mean = sum(sum(g) for g in arm_groups) / sum(len(g) for g in arm_groups)
            groups += [[x - mean for x in g] for g in arm_groups]
        try:
            parts = variance_components(groups)
        except ValueError:
            continue
        out[f"noise_run.{name}"] = math.sqrt(parts.run_var)
        out[f"noise_launch.{name}"] = math.sqrt(parts.launch_var)
    return out


def launch_and_run_costs(doc: dict) -> dict[str, float]:
    """`cost.launch_s` (median seconds from a launch's start to ready) and
    `cost.run_s` (median seconds of a run, as the walk timed it: requests,
    counters and records), from the A/A result."""
    import statistics

    got = PairedResult.of(doc)
    launches = [x.launch_s for x in (got.launches or ()) if isinstance(x.launch_s, (int, float))]
    runs = [t for x in (got.launches or ()) for t in x.run_s or () if isinstance(t, (int, float))]
    out = {}
    if launches:
        out["cost.launch_s"] = statistics.median(launches)
    if runs:
        out["cost.run_s"] = statistics.median(runs)
    return out


def suggested_block(parts: dict[str, float], costs: dict[str, float], exp: config.Experiment) -> dict[str, float]:
    """`block.suggested`: the runs per launch that give the most precise
    comparison for the time (verdict.runs_per_launch), for the metric the
    experiment's first ratio assertion reads (else output_throughput)."""
    from specdsl.model.assert_shape import noise_key, shape_of
    from specdsl.verdict import runs_per_launch

    metric = "output_throughput"
    for a in exp.asserts:
        shape = shape_of(a.expr)
        if shape.kind == "ratio":
            metric = noise_key(shape.candidate)
            break
    run, launch = parts.get(f"noise_run.{metric}"), parts.get(f"noise_launch.{metric}")
    if run is None or launch is None or "cost.launch_s" not in costs or "cost.run_s" not in costs:
        return {}
    try:
        return {"block.suggested": float(runs_per_launch(costs["cost.launch_s"], costs["cost.run_s"], run ** 2, launch ** 2))}
    except ValueError:
        return {}


def _mean(results, name: str) -> float:
    xs = [r[name] for r in results.runs if name in r]
    return sum(xs) / len(xs) if xs else math.nan
