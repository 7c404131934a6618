"""The state's queries (specdsl.state.queries): which runs a step and an
experiment have, an experiment's benchmark result, the current verdict of
a check, an experiment's checks and what a promotion saw, each answered
from one index and the same as a scan of the state's records says."""

from __future__ import annotations

from specdsl.report.gather import Index as ReportIndex
from specdsl.state import RunRecord, State, StepRecord
from specdsl.state.promotions import Index as PlanIndex
from specdsl.state.queries import Queries
from specdsl.verdict import Verdict


def _run(rid: str, step: str, experiment: str, *, status: str = "completed", identity: str = "", verdict: str = "") -> RunRecord:
    return RunRecord(id=rid, step=step, identity=identity or f"id-{step}", experiment=experiment, status=status,
                     started=rid, verdict=Verdict(step.rsplit(".", 1)[-1], verdict, "d") if verdict else None)


def _state() -> State:
    state = State.new()
    runs = [
        _run("r1", "benchmark.grid[c=1]", "grid[c=1]"),
        _run("r2", "check.grid[c=1].ok", "grid[c=1]", verdict="fail", identity="old"),
        _run("r3", "benchmark.grid[c=4]", "grid[c=4]", status="failed"),
        _run("r4", "benchmark.grid[c=1]", "grid[c=1]", status="failed"),  # a later failed rerun keeps r1 the result
        _run("r5", "check.grid[c=1].ok", "grid[c=1]", verdict="pass", identity="new"),
        _run("r6", "check.grid[c=1].ok", "grid[c=1]", verdict="inconclusive", identity="old"),
        _run("r7", "launch.srv", "grid[c=1]", identity="L"),
    ]
    for r in runs:
        state = state.with_run(r)
    for addr, kind, identity in (("benchmark.grid[c=1]", "benchmark", "id-benchmark.grid[c=1]"),
                                 ("check.grid[c=1].ok", "check", "new"), ("check.grid[c=4].ok", "check", "x"),
                                 ("launch.srv", "launch", "L")):
        state = state.with_step(StepRecord(addr=addr, kind=kind, identity=identity))
    return state


def test_runs_by_step_and_by_experiment_are_a_scan_of_the_records():
    state = _state()
    q = Queries(state)
    for addr in {r.step for r in state.runs} | {"benchmark.none"}:
        assert q.runs_of(addr) == state.runs_of(addr)
    for exp in ("grid[c=1]", "grid[c=4]", "nope"):
        assert q.runs_of_experiment(exp) == tuple(r for r in state.runs if r.experiment == exp)
    assert q.experiments() == ["grid[c=1]", "grid[c=4]"]
    assert q.runs["r3"] is state.run("r3") and q.position["r5"] == 4


def test_results_verdicts_and_checks():
    state = _state()
    q = Queries(state)
    assert q.result("grid[c=1]").id == "r1"  # the recorded result, not the failed rerun
    assert q.result("grid[c=4]") is None  # no completed run
    # the verdict of the identity the step records, the latest of it
    assert q.verdict_run("check.grid[c=1].ok").id == "r5"
    assert q.verdict("check.grid[c=1].ok", "old").id == "r6"
    assert q.verdict("check.grid[c=1].ok", "gone") is None
    # a check recorded but never run belongs to the experiment its address names
    assert q.checks_of("grid[c=1]") == ("check.grid[c=1].ok",)
    assert q.checks_of("grid[c=4]") == ("check.grid[c=4].ok",)
    assert q.checks_of("nope") == ()
    assert q.launches["L"].addr == "launch.srv"


def test_what_a_promotion_saw():
    state = _state().with_promotion("t", "r1", ["ok"], verdicts=["r2"])
    q = Queries(state.with_run(_run("r8", "check.grid[c=1].ok", "grid[c=1]", verdict="pass", identity="new")))
    promotion = state.latest_promotion("t")
    assert not q.new_to(["r1", "r2"], promotion)
    assert q.new_to(["r1", "r8"], promotion)
    assert q.new_to([], None)


def test_nothing_recorded_answers_empty():
    q = Queries(None)
    assert (q.runs_of("x"), q.experiments(), q.result("x"), q.verdict_run("x"), q.checks_of("x")) == ((), [], None, None, ())


def test_the_plan_and_the_report_ask_the_same_queries(tmp_path):
    state = _state()
    assert PlanIndex is Queries
    report = ReportIndex(state, tmp_path)
    assert isinstance(report, Queries) and report.state_dir == tmp_path
    assert report.checks_of("grid[c=1]") == Queries(state).checks_of("grid[c=1]")
    assert report.content("launch.srv") == {} and report.content("nope") == {}
