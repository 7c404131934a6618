"""The State model: lookups and `with_*` changes keep the invariants."""

from __future__ import annotations

import attrs
import pytest

from specdsl.state import FORMAT_VERSION, RunRecord, State, new_run_id
from specdsl.state.model import RUN_ID_RE


def test_new_state_has_fresh_lineage_and_serial_zero():
    a, b = State.new(), State.new()
    assert a.serial == 0 and a.format_version == FORMAT_VERSION
    assert a.lineage != b.lineage
    assert a.problems() == []


def test_completed_run_becomes_result_failed_run_does_not(sample_state):
    assert sample_state.result("bench-5e6f").id == "20260301T101000Z-aaaa0001"
    assert sample_state.result("bench-7a8b") is None
    rerun = RunRecord(id="r-new", step="benchmark.upgrade", identity="bench-5e6f", experiment="upgrade",
                      status="failed", started="t", reason="oom")
    after = sample_state.with_run(rerun)
    assert after.result("bench-5e6f").id == "20260301T101000Z-aaaa0001"
    assert after.runs_of("benchmark.upgrade")[-1].id == "r-new"
    assert after.problems() == []


def test_promotion_records_previous_baseline(sample_state):
    run = RunRecord(id="r2", step="benchmark.upgrade", identity="bench-9999", experiment="upgrade",
                    status="completed", started="t", metrics={"output_throughput": 95})
    state = sample_state.with_run(run).with_promotion("kimi-prod", "r2", ("faster",), time="t2")
    assert state.baseline("kimi-prod").run == "r2"
    history = state.promotions_of("kimi-prod")
    assert [p.previous for p in history] == [None, "20260301T101000Z-aaaa0001"]
    assert history[-1].checks == ("faster",)
    assert state.run("r2").metric("output_throughput") == 95.0
    assert state.problems() == []


def test_promoting_a_failed_run_is_a_bug(sample_state):
    with pytest.raises(ValueError, match="not a completed run"):
        sample_state.with_promotion("kimi-prod", "20260301T103000Z-aaaa0002", ())


def test_effective_drops_none_and_freezes(sample_state):
    server = sample_state.servers[0]
    rec = attrs.evolve(server, effective={"b": None, "a": {"x": [1, {"y": None}]}})
    assert rec.effective == (("a", (("x", (1, ())),)),)


def test_problems_reports_dangling_result_and_bad_run_id(sample_state):
    broken = attrs.evolve(sample_state, results={"bench-x": "nope"})
    broken = attrs.evolve(broken, runs=broken.runs + (attrs.evolve(broken.runs[0], id="../escape"),))
    where = [p[0] for p in broken.problems()]
    assert "results.bench-x" in where
    assert "runs[2].id" in where


def test_new_run_id_is_a_folder_name():
    rid = new_run_id("2026-03-01T10:00:00Z")
    assert rid.startswith("20260301T100000Z-") and RUN_ID_RE.match(rid)


def test_replacing_a_run_by_id_moves_its_result(sample_state):
    """Found by hypothesis: a run replaced in place by a failed one with
    another identity left a result pointing at a failed run."""
    rid = "20260301T103000Z-aaaa0002"
    done = attrs.evolve(sample_state.run(rid), status="completed", identity="bench-a", reason="")
    state = sample_state.with_run(done)
    assert state.result("bench-a").id == rid
    state = state.with_run(attrs.evolve(done, identity="bench-b", status="failed"))
    assert state.result("bench-a") is None and state.result("bench-b") is None
    assert len(state.runs) == len(sample_state.runs)
    assert state.problems() == []


def test_a_baseline_run_cannot_turn_failed(sample_state):
    run = sample_state.run("20260301T101000Z-aaaa0001")
    with pytest.raises(ValueError, match="is a baseline"):
        sample_state.with_run(attrs.evolve(run, status="failed"))
