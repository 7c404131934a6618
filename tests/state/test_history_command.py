"""`specdsl history TRACK`: newest first, with verdicts, previous run and
lock; clear errors for no state and an unknown track."""

from __future__ import annotations

import json

import attrs

from specdsl.cli.main import main
from specdsl.state import RunRecord, State, load_state, write_state
from specdsl.verdict import Status, Verdict


def _state() -> State:
    state = State.new()
    for rid, step, detail in (("b1", "benchmark.cand", ""), ("v1", "check.cand.faster", "tps = 90, baseline.tps = 50"),
                              ("b2", "benchmark.fix", ""), ("v2", "check.fix.faster", "tps = 120, baseline.tps = 50")):
        verdict = Verdict("faster", Status.PASS, detail) if detail else None
        state = state.with_run(RunRecord(id=rid, step=step, identity=f"id-{rid}", experiment=step.split(".")[1],
                                         status="completed", started="t", verdict=verdict))
    state = state.with_promotion("prod", "b1", ["faster"], time="2026-03-01T10:00:00Z", experiment="cand", verdicts=["v1"],
                                 lock="../stacks/prod.lock.toml")
    return state.with_promotion("prod", "b2", ["faster"], time="2026-03-02T10:00:00Z", experiment="fix", verdicts=["v2"],
                                lock="../stacks/prod.lock.toml")


def test_history_lists_promotions_newest_first(tmp_path, capsys, monkeypatch):
    write_state(tmp_path / ".specdsl", _state())
    (tmp_path / "stacks").mkdir()
    (tmp_path / "stacks" / "prod.lock.toml").write_text('run = "b2"\n')
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.spec").write_text("")
    assert main(["history", "prod", "x.spec"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "Track prod: 2 promotions, newest first (.specdsl/state.toml)"
    assert out.index("run b2  experiment fix") < out.index("run b1  experiment cand")
    assert "    verdicts  faster: pass (tps = 120, baseline.tps = 50)" in out
    assert "    previous  run b1 (cand)" in out and "    previous  none: the first promotion of the track" in out
    assert "    lock      stacks/prod.lock.toml\n" in out
    assert "    lock      stacks/prod.lock.toml (now records run b2)" in out
    assert main(["history", "prod", "--json"]) == 0  # ./.specdsl by default
    doc = json.loads(capsys.readouterr().out)
    assert [(e["run"], e["experiment"], e["previous"], e["lock_current"]) for e in doc["promotions"]] == \
        [("b2", "fix", "b1", True), ("b1", "cand", None, False)]
    assert doc["promotions"][0]["verdicts"] == [{"check": "faster", "run": "v2", "detail": "tps = 120, baseline.tps = 50"}]


def test_unknown_track_and_no_state(tmp_path, capsys):
    state_dir = tmp_path / ".specdsl"
    assert main(["history", "prod", "--state", str(state_dir)]) == 1
    err = capsys.readouterr().err
    assert "No such state folder" in err
    write_state(state_dir, State.new())
    assert main(["history", "prod", "--state", str(state_dir)]) == 1
    assert "nothing has been promoted in this state yet" in capsys.readouterr().err
    write_state(state_dir, _state_over(state_dir))
    assert main(["history", "prd", "--state", str(state_dir)]) == 1
    assert "No promotions of track `prd` recorded; did you mean `prod`?" in capsys.readouterr().err
    assert main(["history", "zzz", "--state", str(state_dir)]) == 1
    assert "tracks with promotions: prod" in capsys.readouterr().err


def _state_over(state_dir):
    """_state() to write over the state in `state_dir` (its lineage and serial)."""
    current = load_state(state_dir)
    return attrs.evolve(_state(), lineage=current.lineage, serial=current.serial)
