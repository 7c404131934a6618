"""Promotion records and the queries on them: what a promotion rests on
(its verdict runs, the runs it saw), the reader's checks of them, and the
newest-first history."""

from __future__ import annotations

from pathlib import Path

import pytest

from specdsl.state import RunRecord, State, StateError, decode_state, encode_state
from specdsl.state.promotions import Index, history, latest_verdict, verdict_of
from specdsl.verdict import Status, Verdict


def _run(rid: str, step: str, status: str = "", detail: str = "", identity: str = "") -> RunRecord:
    """A run of `step`; with `status`, a verdict run whose verdict says `detail`."""
    verdict = Verdict(step.rsplit(".", 1)[-1], status, detail) if status else None
    return RunRecord(id=rid, step=step, identity=identity or f"id-{step}", experiment=step.split(".")[1],
                     status="completed", started="t", verdict=verdict)


def _state() -> State:
    state = State.new()
    for run in (_run("b1", "benchmark.cand"), _run("v1", "check.cand.faster", "fail", "tps = 40, baseline.tps = 50"),
                _run("b2", "benchmark.fix"), _run("v2", "check.fix.faster", "pass", "tps = 90, baseline.tps = 50")):
        state = state.with_run(run)
    return state


def test_a_promotion_records_its_verdicts_what_it_saw_and_its_lock():
    state = _state().with_promotion("t", "b2", ["faster"], time="T1", experiment="fix", verdicts=["v2"],
                                    lock="../stacks/t.lock.toml")
    p = state.latest_promotion("t")
    assert (p.run, p.experiment, p.checks, p.verdicts, p.runs_seen, p.lock) == \
        ("b2", "fix", ("faster",), ("v2",), 4, "../stacks/t.lock.toml")
    assert decode_state(encode_state(state), Path("s.toml")) == state
    assert state.tracks() == ("t",)


def test_a_promotion_resting_on_unknown_verdicts_is_a_bug_and_is_refused_on_reading():
    with pytest.raises(ValueError):
        _state().with_promotion("t", "b2", ["faster"], verdicts=["nope"])
    text = encode_state(_state().with_promotion("t", "b2", ["faster"], verdicts=["v2"]))
    bad = text.replace('verdicts = [\n    "v2",\n]', 'verdicts = [\n    "gone",\n]').replace("runs_seen = 4", "runs_seen = 9")
    assert bad != text
    with pytest.raises(StateError) as err:
        decode_state(bad, Path("s.toml"))
    assert "promotions[0].verdicts[0]: run 'gone' is not a run in this state" in str(err.value)
    assert "promotions[0].runs_seen: expected 0 to 4" in str(err.value)


def test_a_promotion_written_before_these_fields_reads_back():
    text = encode_state(_state().with_promotion("t", "b2", ["faster"]))
    old = "\n".join(line for line in text.splitlines() if not line.startswith(("runs_seen", "lock =", "verdicts")))
    p = decode_state(old, Path("s.toml")).latest_promotion("t")
    assert (p.verdicts, p.runs_seen, p.lock) == ((), None, "")


def test_verdicts_and_what_is_new_to_a_promotion():
    state = _state()
    index = Index(state)
    assert index.verdict("check.cand.faster", "id-check.cand.faster").id == "v1"
    assert latest_verdict(state, "check.fix.faster", "id-check.fix.faster").id == "v2"
    v1 = verdict_of(state.run("v1"))
    assert v1.status is Status.FAIL and v1.detail == "tps = 40, baseline.tps = 50"
    assert verdict_of(state.run("b1")) is None and verdict_of(None) is None
    promoted = state.with_promotion("t", "b2", ["faster"], verdicts=["v2"])
    later = promoted.with_run(_run("v3", "check.cand.faster", "pass", "tps = 95, baseline.tps = 50"))
    index = Index(later)
    p = later.latest_promotion("t")
    assert index.verdict("check.cand.faster", "id-check.cand.faster").id == "v3"  # the latest is current
    assert not index.new_to(["b2", "v2"], p)  # what it promoted on
    assert not index.new_to(["b1", "v1"], p)  # what it saw and did not promote
    assert index.new_to(["b1", "v3"], p)  # recorded after it
    assert index.new_to(["b1"], None)  # no promotion yet: everything is new
    legacy = later.with_promotion("t", "b2", ["faster"])
    import attrs
    legacy = attrs.evolve(legacy, promotions=legacy.promotions[:-1] + (attrs.evolve(legacy.promotions[-1], runs_seen=None),))
    assert not Index(legacy).new_to(["v3"], legacy.latest_promotion("t"))  # unknown: seen


def test_history_is_newest_first_with_the_verdicts_and_the_previous_experiment():
    state = _state().with_promotion("t", "b1", ["faster"], time="T1", experiment="cand", verdicts=["v1"])
    state = state.with_promotion("t", "b2", ["faster"], time="T2", experiment="fix", verdicts=["v2"])
    entries = history(state, "t")
    assert [e.promotion.time for e in entries] == ["T2", "T1"]
    assert entries[0].verdicts == (("faster", "v2", Verdict("faster", Status.PASS, "tps = 90, baseline.tps = 50")),)
    assert (entries[0].promotion.previous, entries[0].previous_experiment) == ("b1", "cand")
    assert entries[1].previous_experiment is None
    assert history(state, "other") == []


def test_a_promoted_result_reads_the_baseline_it_replaced():
    state = _state().with_promotion("t", "b1", ["faster"], experiment="cand")
    assert state.baseline_for("t", "b2") == "b1"  # another candidate: the baseline now
    assert state.baseline_for("t", None) == "b1"
    assert state.baseline_for("t", "b1") is None  # the first promotion replaced nothing
    state = state.with_promotion("t", "b2", ["faster"], experiment="fix")
    assert state.baseline_for("t", "b2") == "b1"  # fix is the baseline: it compares with what it replaced
    assert state.baseline_for("t", "b1") == "b2"
    assert state.baseline_for("other", "b1") is None
