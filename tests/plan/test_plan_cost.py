"""The cost in the plan and what an undecided verdict needs (specdsl.plan.cost):
per benchmark pairs, launches, runs and the time estimated from recorded
launch and run durations, a total, the same as numbers in `--json`;
after an INCONCLUSIVE apply the undecided verdict with the pairs, launches
and time a decision needs (or that no affordable amount would), counted as
pending by `--detailed-exitcode`; and a baseline that only paired
candidates read is measured as their arm alone. State fixtures written
here, no server."""

import json
import math

import attrs
import pytest

from specdsl.cli.main import main
from specdsl.graph.pairs import launches
from specdsl.plan.cost import AFFORDABLE_PAIRS, arm_launch_identity, duration_text
from specdsl.plan.looks import max_runs
from specdsl.plan.durations import recorded_durations
from specdsl.plan.render import render_text, to_json
from specdsl.state import RunRecord, write_state
from specdsl.verdict import Decision, Status, Verdict, mde_ratio, pairs_needed

from plan_helpers import SPEC, applied_state, plan_for, resolve_text


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _result(state_dir, folder: str, doc: dict) -> None:
    (state_dir / folder).mkdir(parents=True)
    (state_dir / folder / "result.json").write_text(json.dumps(doc))


def test_empty_state_counts_pairs_launches_and_runs_and_the_time_is_unknown(tmp_path):
    cfg = resolve_text(tmp_path, SPEC)
    _, plan = plan_for(cfg)
    w = cfg.experiment("cand").workload
    cand, base = plan.cost("benchmark.cand"), plan.cost("benchmark.base")
    most = max_runs(w)
    assert (cand.pairs_first, cand.pairs_most) == (2, most)
    assert (cand.launches_first, cand.launches_most) == (launches(2), launches(most))
    assert (cand.runs_first, cand.runs_most) == (2 * (w.block or 1) * 2, 2 * (w.block or 1) * most)
    assert cand.seconds_first is None and "no recorded launch of either arm's server" in cand.unknown
    assert (base.pairs_first, base.launches_first, base.runs_first, base.seconds_first) == (None, 1, w.runs, None)
    text = render_text(plan)
    assert f"benchmark.cand  2-{most} pairs, {launches(2)}-{launches(most)} launches, 4-{2 * most} runs, time unknown" in text
    total = f"total           {1 + launches(2)}-{1 + launches(most)} launches"
    assert total in text, text
    doc = to_json(plan)
    (bench,) = [c for c in doc["changes"] if c["addr"] == "benchmark.cand"]
    assert bench["cost"] == {"pairs_first": 2, "pairs_most": most, "launches_first": launches(2), "launches_most": launches(most),
                             "runs_first": 4, "runs_most": 2 * most, "seconds_first": None, "seconds_most": None}
    assert doc["cost"]["launches_first"] == 1 + launches(2) and doc["cost"]["seconds_first"] is None
    assert all("cost" not in c for c in doc["changes"] if c["kind"] != "benchmark")


def _recorded_durations_state(tmp_path, spec: str = SPEC):
    """SPEC applied, with a launch of each server recorded (12 s and 20 s to
    ready), base's run at 4 s and the pairs' runs at 3 s (A, the same server
    and workload as base: pooled with it, median 3 s) and 2 s (B)."""
    cfg = resolve_text(tmp_path, spec)
    graph, _ = plan_for(cfg)
    state_dir = tmp_path / "state"
    state = applied_state(graph)
    cand = graph.steps["benchmark.cand"]
    base_launch = graph.steps["launch.tiny"].identity
    assert arm_launch_identity(cand.content, "baseline") == base_launch  # the arm's server is base's own launch
    cand_launch = arm_launch_identity(cand.content, "candidate")
    for i, (ident, seconds) in enumerate(((base_launch, 12.0), (cand_launch, 20.0))):
        state = state.with_run(RunRecord(id=f"l{i}", step="launch.tiny", identity=ident, experiment="base", status="completed",
                                         started="t", metrics={"launch_s": seconds}))
    runs = {r.step: r for r in state.runs}
    state = state.with_run(attrs.evolve(runs["benchmark.base"], id="rb", folder="runs/rb", runs=1))
    state = state.with_run(attrs.evolve(runs["benchmark.cand"], id="rc", folder="runs/rc", runs=2))
    _result(state_dir, "runs/rb", {"format_version": 1, "runs": [{"index": 0, "metrics": {"duration": 4.0}}]})
    _result(state_dir, "runs/rc", {"runs": [{"index": i, "metrics": {"duration": 3.0 if i in (0, 3) else 2.0}} for i in range(4)],
                                   "pairs": [{"pair": 0, "blocks": [{"arm": "A", "runs": [0]}, {"arm": "B", "runs": [1]}]},
                                             {"pair": 1, "blocks": [{"arm": "B", "runs": [2]}, {"arm": "A", "runs": [3]}]}],
                                   "arms": {"A": "base", "B": "cand"}, "launches": []})
    return cfg, graph, state, state_dir


def test_the_time_is_estimated_from_recorded_launches_and_runs_of_the_same_server_and_workload(tmp_path, capsys):
    cfg, graph, state, state_dir = _recorded_durations_state(tmp_path)
    durations = recorded_durations(state, state_dir, graph)
    _, plan = plan_for(cfg, state, rerun=True, durations=durations)
    w = cfg.experiment("cand").workload
    most = max_runs(w)
    cand = plan.cost("benchmark.cand")
    # launches x the arms' mean launch (12 s, 20 s) + per pair one run of each arm (3 s + 2 s)
    assert cand.seconds_first == pytest.approx(launches(2) * 16.0 + 2 * 5.0)
    assert cand.seconds_most == pytest.approx(launches(most) * 16.0 + most * 5.0)
    base = plan.cost("benchmark.base")  # its launch starts: 12 s, and one run (the median of 4, 3, 3 s)
    assert plan.change("launch.tiny").action.word == "create"
    assert base.seconds_first == pytest.approx(12.0 + 3.0)
    total = plan.total()
    assert total.seconds_first == pytest.approx(base.seconds_first + cand.seconds_first)
    assert total.launches_first == 1 + launches(2)
    text = render_text(plan)
    assert f"~{duration_text(cand.seconds_first)} to {duration_text(cand.seconds_most)}" in text, text
    doc = to_json(plan)
    assert doc["cost"]["seconds_first"] == round(total.seconds_first, 1)
    (bench,) = [c for c in doc["changes"] if c["addr"] == "benchmark.cand"]
    assert bench["cost"]["seconds_most"] == round(cand.seconds_most, 1)
    # through the CLI: the same numbers, read from the state folder
    write_state(state_dir, state)
    code, out, _ = run(capsys, "plan", "--no-refresh", str(tmp_path / "x.spec"), "--state", str(state_dir), "--rerun", "--json")
    assert code == 0 and json.loads(out)["cost"]["seconds_first"] == round(total.seconds_first, 1)
    # only the run folders that what is planned shares a server or workload with are read
    assert recorded_durations(state, state_dir, graph, set()).run_s == {}
    assert recorded_durations(state, state_dir, graph, set()).launch_s == durations.launch_s  # (from state alone)
    # another workload on the same servers: its runs were never recorded, the time is unknown
    other = resolve_text(tmp_path, SPEC.replace("requests    = 16", "requests    = 32"))
    _, plan = plan_for(other, state, durations=durations)
    assert plan.cost("benchmark.cand").seconds_first is None
    assert "no recorded run of this workload on either arm" in plan.cost("benchmark.cand").unknown


def _undecided_state(tmp_path, *, estimate: float, noise: float | None, n: int = 3):
    """SPEC applied with `runs = n` pairs recorded and check.cand.faster
    recorded INCONCLUSIVE with its evidence."""
    cfg = resolve_text(tmp_path, SPEC.replace("requests    = 16", f"requests    = 16\n  runs        = {n}\n  max_runs    = {n}"))
    graph, _ = plan_for(cfg)
    state = applied_state(graph)
    runs = {r.step: r for r in state.runs}
    state = state.with_run(attrs.evolve(runs["benchmark.cand"], id="rc", runs=n))
    check = graph.steps["check.cand.faster"]
    detail = f"ratio {estimate} [0.9, 1.2] >= 1.03, n={n} pairs: INCONCLUSIVE"
    decision = Decision(Status.INCONCLUSIVE, estimate, 0.9, 1.2, 0.95, n, 1.03, ">=", None, "paired t on log ratios", detail,
                        statistic="ratio", unit="pairs")
    verdict = Verdict("faster", Status.INCONCLUSIVE, detail, gating=True, decision=decision, noise=noise)
    state = state.with_run(RunRecord(id="v1", step=check.addr, identity=check.identity, experiment="cand", status="completed",
                                     started="t", verdict=verdict))
    return cfg, graph, state


def test_an_undecided_verdict_says_what_a_decision_needs_and_is_pending(tmp_path, capsys):
    cfg, graph, state = _undecided_state(tmp_path, estimate=1.10, noise=0.08)
    _, plan = plan_for(cfg, state)
    assert not plan.has_changes and plan.pending
    (u,) = plan.undecided
    needed = pairs_needed(0.08, 1.10 / 1.03, alpha=0.05, max_pairs=AFFORDABLE_PAIRS)
    assert needed is not None and needed > 3
    assert (u.check, u.pairs, u.noise, u.needed, u.more_pairs, u.launches) == (
        "check.cand.faster", 3, 0.08, needed, needed - 3, launches(needed - 3))
    text = render_text(plan)
    assert "? check.cand.faster  ratio 1.1 [0.9, 1.2] >= 1.03, n=3 pairs: INCONCLUSIVE (run v1)" in text, text
    assert "nothing was promoted to track prod: check.cand.faster was inconclusive" in text
    assert (f"a decision needs about {needed} pairs at the measured noise (sd 0.08 of the log ratios of 3 pairs) and "
            f"estimate: {needed - 3} more pairs, {launches(needed - 3)} launches, time unknown") in text
    b = cfg.experiment("cand").workload.runs  # no block, nothing calibrated: all of `runs` on one launch (plan.economy)
    assert f"raise `max_runs` of workload w to {needed * b} ({needed} pairs of {b} runs a launch) and apply again" in text
    assert "No changes to the steps, but 1 gating verdict is undecided" in text and "No changes. Every" not in text
    # the check's noise note: measured by the pairs, not "measure it with calibrate"
    assert "measured by the 3 pairs of verdict run v1" in plan.change("check.cand.faster").reason
    assert "calibrate" not in text
    doc = to_json(plan)
    assert doc["pending"] is True and doc["has_changes"] is False
    (ju,) = doc["undecided"]
    assert (ju["pairs_needed"], ju["more_pairs"], ju["launches"], ju["seconds"], ju["noise"]) == (
        needed, needed - 3, launches(needed - 3), None, 0.08)
    # through the CLI: --detailed-exitcode counts it as pending work
    state_dir = tmp_path / "state"
    write_state(state_dir, state)
    code, out, _ = run(capsys, "plan", "--no-refresh", str(tmp_path / "x.spec"), "--state", str(state_dir), "--detailed-exitcode")
    assert code == 2 and "Undecided" in out
    code, out, _ = run(capsys, "plan", "--no-refresh", str(tmp_path / "x.spec"), "--state", str(state_dir), "--json")
    assert code == 0 and json.loads(out)["undecided"][0]["pairs_needed"] == needed
    # saved and shown: the same lines
    saved = tmp_path / "p.plan.toml"
    assert run(capsys, "plan", "--no-refresh", str(tmp_path / "x.spec"), "--state", str(state_dir), "-o", str(saved))[0] == 0
    code, shown, _ = run(capsys, "show", str(saved))
    assert code == 0 and f"raise `max_runs` of workload w to {needed * 3} ({needed} pairs of 3 runs" in shown


def test_an_undecidable_verdict_says_no_affordable_amount_would_with_the_detectable_effect(tmp_path):
    cfg, _, state = _undecided_state(tmp_path, estimate=1.031, noise=0.2)
    _, plan = plan_for(cfg, state)
    (u,) = plan.undecided
    most = max_runs(cfg.experiment("cand").workload)
    assert u.needed is None and u.mde_at_most == pytest.approx(mde_ratio(0.2, most))
    assert f"more than {AFFORDABLE_PAIRS} pairs would be needed" in u.advice
    assert f"{most} pairs (max_runs) detect {mde_ratio(0.2, most) - 1:.1%} beyond the threshold" in u.advice
    assert math.isclose(to_json(plan)["undecided"][0]["mde_at_max_runs"], mde_ratio(0.2, most))


def test_calibrate_is_suggested_only_where_nothing_measured_the_noise(tmp_path):
    cfg, _, state = _undecided_state(tmp_path, estimate=1.10, noise=None)
    _, plan = plan_for(cfg, state)
    (u,) = plan.undecided
    assert "nothing measured it: measure it with `specdsl calibrate x.spec cand`" in u.advice
    assert "noise of output_throughput unknown: measure it with `specdsl calibrate" in plan.change("check.cand.faster").reason


def test_a_rerun_or_a_decided_verdict_is_not_undecided(tmp_path):
    cfg, _, state = _undecided_state(tmp_path, estimate=1.10, noise=0.08)
    _, plan = plan_for(cfg, state, rerun=True)  # measured again: a change, not an undecided verdict
    assert plan.undecided == () and plan.has_changes
    graph, _ = plan_for(cfg)
    _, plan = plan_for(cfg, applied_state(graph))  # no verdict recorded
    assert plan.undecided == ()


BASELINE_ONLY = SPEC.replace('''  # an assertion of its own: base is benchmarked on its own launch (a
  # baseline only paired candidates read is measured as their arm alone)
  assert "serves" { output_throughput > 0 }
''', "")


def test_a_baseline_only_paired_candidates_read_is_not_benchmarked_on_its_own(tmp_path, capsys):
    assert BASELINE_ONLY != SPEC
    cfg = resolve_text(tmp_path, BASELINE_ONLY)
    graph, plan = plan_for(cfg)
    assert "benchmark.base" not in graph.steps and not [a for a in graph.steps if a.startswith(("launch.", "teardown."))]
    assert graph.by_experiment["base"]["benchmark"] == "benchmark.cand" and graph.arm("base") == "A" and graph.arm("cand") == "B"
    assert plan.total().launches_first == launches(2)  # the pairs' launches, nothing more
    # --target base plans the pairs that measure it
    _, targeted = plan_for(cfg, targets=("base",))
    assert [c.addr for c in targeted.changes if c.kind == "benchmark"] == ["benchmark.cand"]
    # with an assertion of its own (SPEC), or read by a candidate on another machine, it keeps its own benchmark
    assert "benchmark.base" in plan_for(resolve_text(tmp_path, SPEC))[0].steps
    apart = BASELINE_ONLY + '''
host "far" { ssh = "gpu@far" }
experiment "remote" {
  host     = host.far
  stack    = stack.s
  server   = server.tiny
  workload = workload.w
  baseline = experiment.base
  assert "faster" { output_throughput >= baseline.output_throughput }
}
'''
    graph, _ = plan_for(resolve_text(tmp_path, apart))
    assert "benchmark.base" in graph.steps and graph.arm("base") is None


def test_diff_reads_the_paired_arm_of_a_baseline_measured_only_there(tmp_path):
    from specdsl.diagnose import side_of

    cfg = resolve_text(tmp_path, BASELINE_ONLY)
    graph, _ = plan_for(cfg)
    state = applied_state(graph)
    run_, exp, arm = side_of(state, tmp_path, cfg, graph, "base")
    assert run_.step == "benchmark.cand" and exp.name == "base" and arm == "baseline"
    assert side_of(state, tmp_path, cfg, graph, "cand")[2] == "candidate"


def test_a_calibrated_block_is_what_the_plan_counts_runs_by(tmp_path):
    """A workload that declares no `block` runs what `specdsl calibrate`
    suggested on each launch, at most `runs` (plan.looks.block_of, as the
    walk does): the plan's runs, its benchmark line and the time of the
    runs say that many, and a declared `block` still wins. `runs = 6`:
    uncalibrated, 2 pairs of 6 runs a launch, up to 3; calibrated at 3 a
    launch, 2 pairs of 3, up to 6, whose look at 2 pairs cannot decide: 3
    pairs to the first look (plan.economy)."""
    cfg, graph, state, state_dir = _recorded_durations_state(
        tmp_path, SPEC.replace("  requests    = 16\n}", "  requests    = 16\n  runs        = 6\n}", 1))
    w = cfg.experiment("cand").workload
    assert w.block is None and w.runs == 6
    durations = recorded_durations(state, state_dir, graph)
    _, plain = plan_for(cfg, state, rerun=True, durations=durations)
    calibrated = state.with_run(RunRecord(id="cal", step="calibrate.cand", identity="c", experiment="cand",
                                          status="completed", started="t", metrics={"block.suggested": 3.0}))
    _, plan = plan_for(cfg, calibrated, rerun=True, durations=durations)
    before, after = plain.cost("benchmark.cand"), plan.cost("benchmark.cand")
    assert (before.pairs_first, before.pairs_most, after.pairs_first, after.pairs_most) == (2, 3, 3, 6)
    assert (before.runs_first, before.runs_most) == (2 * 6 * 2, 2 * 6 * 3)
    assert (after.runs_first, after.runs_most) == (2 * 3 * 3, 2 * 3 * 6)
    assert (before.launches_first, after.launches_first) == (launches(2), launches(3))
    # one more pair's launches (12 s and 20 s), 9 runs of each arm (3 s + 2 s) instead of 12
    assert after.seconds_first - before.seconds_first == pytest.approx(12.0 + 20.0 - 3 * 5.0)
    assert f"{launches(3)} launches, {2 * 3 * 3} runs" in plan.change("benchmark.cand").reason
    declared = resolve_text(tmp_path, SPEC.replace("requests    = 16", "requests    = 16\n  block       = 2"))
    _, plan = plan_for(declared, calibrated, rerun=True, durations=durations)
    assert plan.cost("benchmark.cand").runs_first == 2 * 2 * 2


def test_the_budget_estimates_a_launch_from_calibration_then_the_server_then_its_engine_and_model(tmp_path):
    """The chain of specdsl.plan.budget.launch_cost on recorded durations:
    the candidate's own recorded launches (20 s to ready, 2 s runs); a
    `specdsl calibrate` record of it wins over them; a server never
    launched is estimated from launches of the same engine and model (the
    launch step's 12 s: the candidate's 20 s has no step content recorded
    here to tell its engine; runs of 3 s and 2 s of both arms: 2.5 s)."""
    cfg, graph, state, state_dir = _recorded_durations_state(tmp_path)
    durations = recorded_durations(state, state_dir, graph)
    _, plan = plan_for(cfg, state, rerun=True, durations=durations)
    worst = plan.worst("benchmark.cand")
    assert (worst.candidate_source, worst.candidate_s) == ("recorded", pytest.approx(20.0 + 2.0))
    assert (worst.baseline_source, worst.baseline_s) == ("recorded", pytest.approx(12.0 + 3.0))
    assert "from recorded launches of this server" in render_text(plan)
    calibrated = state.with_run(RunRecord(id="cal", step="calibrate.cand", identity="c", experiment="cand", status="completed",
                                          started="t", metrics={"cost.launch_s": 30.0, "cost.run_s": 5.0}))
    _, plan = plan_for(cfg, calibrated, rerun=True, durations=durations)
    worst = plan.worst("benchmark.cand")
    assert (worst.candidate_source, worst.candidate_s) == ("calibrated", pytest.approx(35.0))
    assert worst.baseline_source == "recorded"  # base has no calibration of its own
    assert "from `specdsl calibrate cand`" in render_text(plan)
    other = resolve_text(tmp_path, SPEC.replace('server.tiny { args = { attention-backend = "flashinfer" } }',
                                                'server.tiny { args = { attention-backend = "fa3" } }'))
    graph2, _ = plan_for(other)
    _, plan = plan_for(other, state, durations=recorded_durations(state, state_dir, graph2))
    worst = plan.worst("benchmark.cand")
    assert (worst.candidate_source, worst.candidate_s) == ("same engine and model", pytest.approx(12.0 + 2.5))
    assert worst.seconds_most == pytest.approx(worst.pairs_most * (worst.baseline_s + worst.candidate_s))
