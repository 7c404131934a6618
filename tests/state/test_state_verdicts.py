"""Verdicts in state: format 2 keeps a check's verdict as structured fields
(`[runs.verdict]`) that read back equal; a format 1 file, which kept it as
prose in `reason`, opens, upgrades and loses nothing (a real one: an SGLang
run on an H200, tests/state/data/format1-sglang-h200.toml)."""

from __future__ import annotations

import math
import shutil
import tomllib
from pathlib import Path

import pytest

from specdsl import verdict as v
from specdsl.state import RunRecord, State, StateError, decode_state, encode_state, load_state, write_state
from specdsl.state.promotions import history, latest_verdict
from specdsl.state.upgrade import verdict_of_v1
from specdsl.verdict import Status, Verdict

OLD = Path(__file__).parent / "data" / "format1-sglang-h200.toml"


def _with_verdicts(*verdicts: Verdict) -> State:
    state = State.new()
    for i, verdict in enumerate(verdicts):
        state = state.with_run(RunRecord(id=f"v{i}", step=f"check.e.{verdict.name}", identity=f"c{i}", experiment="e",
                                         status="completed", started="t", verdict=verdict))
    return state


def test_verdicts_read_back_equal_with_their_numbers():
    passed = v.ratio_decision([(100, 131), (100, 128), (101, 133)], ">=", 1.1)  # high = inf
    error = v.ratio_decision([(100, 131)], ">=", 1.1)  # nan estimate, no mde
    mean = v.absolute_decision([41.0, 44.5, 43.2, 40.1], "<=", 50.0)  # low = -inf
    state = _with_verdicts(
        Verdict("faster", passed.verdict, passed.line(), gating=True, decision=passed, noise=0.012),
        Verdict("few", error.verdict, error.line(), gating=True, decision=error),
        Verdict("lat", mean.verdict, mean.line(), gating=True, decision=mean, needed=37, needed_beyond=True),
        Verdict("backend", Status.PASS, "effective.attention_backend = 'flashinfer'"),
    )
    text = encode_state(state)
    assert decode_state(text, Path("s.toml")) == state
    doc = tomllib.loads(text)
    faster = doc["runs"][0]["verdict"]
    assert (faster["status"], faster["gating"], faster["noise"]) == ("pass", True, 0.012)
    assert faster["decision"]["high"] == math.inf and faster["decision"]["n"] == 3
    assert (faster["decision"]["statistic"], faster["decision"]["unit"], faster["decision"]["op"]) == ("ratio", "pairs", ">=")
    assert "mde" not in doc["runs"][1]["verdict"]["decision"] and math.isnan(doc["runs"][1]["verdict"]["decision"]["estimate"])
    assert "decision" not in doc["runs"][3]["verdict"] and "reason" in doc["runs"][3]  # nothing in the prose field


def test_a_bad_verdict_table_is_named_by_its_key_path():
    d = v.ratio_decision([(100, 131), (100, 128), (101, 133)], ">=", 1.1)
    text = encode_state(_with_verdicts(Verdict("faster", d.verdict, d.line(), gating=True, decision=d)))
    bad = text.replace('status = "pass"', 'status = "passed"').replace('op = ">="', 'op = "=>"').replace("n = 3\n", "")
    with pytest.raises(StateError) as err:
        decode_state(bad, Path("s.toml"))
    shown = str(err.value)
    assert "runs[0].verdict.status: expected one of 'pass', 'fail', 'inconclusive', 'error', found a string 'passed'" in shown
    assert "runs[0].verdict.decision.op: expected one of '>=', '>', '<=', '<'" in shown
    assert "runs[0].verdict.decision.n: missing" in shown


def test_a_real_format_1_state_opens_upgrades_and_keeps_every_verdict(tmp_path):
    state_dir = tmp_path / ".specdsl"
    state_dir.mkdir()
    shutil.copy(OLD, state_dir / "state.toml")
    old_doc = tomllib.loads(OLD.read_text())
    state = load_state(state_dir)
    assert state.format_version == 1 and len(state.runs) == len(old_doc["runs"])
    old_checks = [r for r in old_doc["runs"] if r["step"].startswith("check.")]
    new_checks = [r for r in state.runs if r.step.startswith("check.")]
    for old, new in zip(old_checks, new_checks, strict=True):
        status, _, detail = old["reason"].partition(": ")
        assert (new.verdict.status, new.verdict.detail) == (status, detail)  # the line as apply printed it
        assert new.reason == "" and "pass" not in dict(new.metrics)

    backend, fixed, triton = (r.verdict for r in new_checks)
    assert backend.decision is None and not backend.gating  # an exact assertion: no interval
    d = fixed.decision
    assert (d.verdict, d.statistic, d.estimate, d.low, d.high, d.op, d.threshold, d.n, d.unit, d.level) == \
        (Status.PASS, "ratio", 1.035, 0.9348, math.inf, ">=", 0.9, 3, "pairs", 0.95)
    assert d.method == "paired t on log ratios, one-sided, 95%"
    assert triton.status is Status.INCONCLUSIVE and triton.decision.high == 1.235 and triton.needed == 60

    # the promotion still rests on its verdict, and history shows it
    (entry,) = history(state, "prod")
    assert [(name, verdict) for name, _, verdict in entry.verdicts] == [("throughput", fixed), ("backend", backend)]
    assert latest_verdict(state, "check.triton.throughput", new_checks[2].identity).verdict == triton

    # the next write stores format 2; the format 1 text stays as the backup; it reads back the same
    written = write_state(state_dir, state)
    assert tomllib.loads((state_dir / "state.toml").read_text())["format_version"] == 2
    assert (state_dir / "state.toml.backup").read_text() == OLD.read_text()
    again = load_state(state_dir)
    assert again == written and again.format_version == 2


@pytest.mark.parametrize("pairs, op, k", [
    ([(100, 131), (100, 128), (101, 133)], ">=", 1.1),   # PASS: [low, inf)
    ([(100, 90), (100, 91), (101, 89)], ">=", 1.0),      # FAIL: (0, high]
    ([(100, 99), (100, 104), (101, 100)], "<=", 1.01),   # INCONCLUSIVE: both bounds
    ([(10, 5.1), (10, 4.9), (10, 5.0)], "<", 0.8),
])
def test_a_format_1_ratio_line_upgrades_to_its_decision(pairs, op, k):
    """The upgrade reads the line format 1 wrote (specdsl.verdict.decision's
    `line()`): pinned here, so a change to the line cannot lose old verdicts."""
    d = v.ratio_decision(pairs, op, k)
    line = d.line() + "; Holm over 2 gating assertions: level 0.975"
    up = verdict_of_v1("check.e.faster", f"{d.verdict.value}: {line}", {"pass": 1.0})
    got = up["decision"]
    assert (up["name"], up["status"], up["detail"], up["gating"]) == ("faster", d.verdict.value, line, True)
    assert (got["statistic"], got["op"], got["n"], got["unit"], got["threshold"], got["method"], got["level"]) == \
        ("ratio", op, 3, "pairs", k, d.method, 0.95)
    for key in ("estimate", "low", "high"):
        shown, exact = got[key], getattr(d, key)
        assert (math.isinf(shown) and shown == exact) or math.isclose(shown, exact, rel_tol=1e-3)


def test_a_format_1_verdict_takes_its_recorded_evidence_and_others_have_no_decision():
    d = v.absolute_decision([41.0, 44.5, 43.2, 40.1], "<=", 50.0)
    evidence = {"evidence.estimate": d.estimate, "evidence.high": d.high, "evidence.n": 4.0, "evidence.mde": d.mde}
    up = verdict_of_v1("check.e.lat", f"pass: {d.line()}", {"pass": 1.0, **evidence})["decision"]
    assert (up["statistic"], up["unit"], up["estimate"], up["high"], up["low"], up["mde"]) == \
        ("mean", "runs", d.estimate, d.high, -math.inf, d.mde)  # full precision where it was recorded
    error = v.ratio_decision([(1, 1)], ">=", 1.0)
    assert "decision" not in verdict_of_v1("check.e.x", f"error: {error.line()}", {})
    exact = verdict_of_v1("check.e.be", 'fail: effective.attention_backend = "triton"', {"pass": 0.0})
    assert exact == {"name": "be", "status": "fail", "detail": 'effective.attention_backend = "triton"', "gating": False}
    assert verdict_of_v1("check.e.x", "server exited", {}) is None  # not a verdict: left as it was
