"""The budget's arithmetic and the estimate of a launch's cost
(specdsl.plan.budget): the chain calibration > same server > same engine
and model > launch_estimate > a stated guess, and the pairs that fit."""

from __future__ import annotations

import attrs
import pytest

from specdsl.model import config
from specdsl.plan.budget import (GUESS_S, ApplyWorst, Limit, Source, Worst, apply_worst, launch_cost, pairs_fit,
                                 reached, worst_of)
from specdsl.plan.cost import Cost

W = config.Workload("w", warmup_time=5.0, cooldown=1.0)


def test_a_launch_costs_its_start_its_warmup_and_its_runs():
    got = launch_cost(W, 3, recorded=(40.0, 10.0))
    assert got.seconds == pytest.approx(40 + 5 + 3 * (10 + 1)) and got.source is Source.RECORDED


def test_the_first_source_that_knows_both_parts_wins():
    both = dict(calibrated=(100.0, 20.0), recorded=(40.0, 10.0), same_model=(70.0, 15.0))
    assert launch_cost(W, 1, **both, calibrated_by="up").source is Source.CALIBRATED
    assert "specdsl calibrate up" in launch_cost(W, 1, **both, calibrated_by="up").text
    # a calibration without its run cost does not count: the next source does
    half = dict(both, calibrated=(100.0, None))
    assert launch_cost(W, 1, **half).source is Source.RECORDED
    assert launch_cost(W, 1, **dict(half, recorded=(None, 10.0))).source is Source.SAME_MODEL
    got = launch_cost(W, 1, **dict(half, recorded=(None, 10.0), same_model=(None, None)))
    assert got.source is Source.GUESS and got.seconds == GUESS_S and "launch_estimate" in got.text


def test_a_stated_launch_estimate_comes_before_the_guess_and_after_any_record():
    stated = attrs.evolve(W, launch_estimate=240.0)
    assert launch_cost(stated, 2) == launch_cost(stated, 2)  # pure
    got = launch_cost(stated, 2)
    assert (got.seconds, got.source) == (240.0, Source.STATED)  # the whole launch: no runs added
    assert launch_cost(stated, 2, same_model=(30.0, 3.0)).source is Source.SAME_MODEL


def test_pairs_fit_by_launches_and_by_time():
    assert pairs_fit(Limit(6), done=0, most=15, pair_launches=2, pair_s=100) == 3
    assert pairs_fit(Limit(7), done=0, most=15, pair_launches=2, pair_s=100) == 3  # half a pair does not run
    assert pairs_fit(Limit(None, 450.0), done=0, most=15, pair_launches=2, pair_s=100) == 4
    assert pairs_fit(Limit(6, 150.0), done=0, most=15, pair_launches=2, pair_s=100) == 1  # the tighter one
    assert pairs_fit(Limit(), done=2, most=15, pair_launches=2, pair_s=100) == 15
    # recorded pairs are spent and kept: raising 6 to 10 launches allows 2 more
    assert pairs_fit(Limit(10), done=3, most=15, pair_launches=2, pair_s=100, spent_launches=6) == 5
    # a budget below what was spent keeps the recorded pairs, adds none
    assert pairs_fit(Limit(4), done=3, most=15, pair_launches=2, pair_s=100, spent_launches=6) == 3


def test_reached_says_which_limit_the_next_pair_would_pass():
    assert reached(Limit(6), launches=6, seconds=10, pair_launches=2, pair_s=5) == "6 of 6 launches"
    assert reached(Limit(8), launches=6, seconds=10, pair_launches=2, pair_s=5) == ""
    assert reached(Limit(None, 12.0), launches=6, seconds=10, pair_launches=2, pair_s=5) == "~10 s of 12 s"


def _cost(addr, pairs, launches, shares_with=None):
    return Cost(addr, 2 * pairs, 2 * pairs, launches, launches, pairs, pairs, shares_with=shares_with)


def test_a_comparisons_worst_case_against_its_budget():
    a, b = launch_cost(W, 1, recorded=(50.0, 4.0)), launch_cost(W, 1, recorded=(34.0, 4.0))
    capped = attrs.evolve(W, max_launches=6)
    w = worst_of("benchmark.up", _cost("benchmark.up", 15, 30), capped, baseline=a, candidate=b, done=0)
    assert (w.pairs_most, w.launches_most, w.pairs_fit) == (15, 30, 3)
    assert w.seconds_most == pytest.approx(15 * (60 + 44))
    line = w.line()
    assert "at most 15 pairs, 30 launches" in line and "exceeds max_launches 6: 3 of 15 pairs fit" in line, line
    assert "from recorded launches of this server" in line
    free = worst_of("benchmark.up", _cost("benchmark.up", 15, 30), W, baseline=a, candidate=b, done=0)
    assert free.pairs_fit == 15 and "exceeds" not in free.line() and "within" not in free.line()


def test_a_follower_in_shared_blocks_pays_its_candidates_launch_for_the_shared_pairs():
    a = b = launch_cost(W, 1, recorded=(10.0, 4.0))  # 20 s a launch
    w = worst_of("benchmark.fix", _cost("benchmark.fix", 3, 3, shares_with="benchmark.up"), W, baseline=a, candidate=b,
                 done=0)
    assert w.seconds_most == pytest.approx(3 * 20)


def test_the_apply_wide_budget_counts_pairs_in_plan_order():
    def worst(addr, pairs, fit=None):
        return Worst(addr, 0, pairs, 2 * pairs, 100.0 * pairs, 50, "recorded", "", 50, "recorded", "",
                     pairs_fit=pairs if fit is None else fit)

    both = [worst("benchmark.a", 5), worst("benchmark.b", 5, fit=2)]  # b's own budget: 2 pairs
    free = apply_worst(both, Limit())
    assert (free.pairs_most, free.launches_most, free.pairs_fit) == (7, 14, 7)
    capped = apply_worst(both, Limit(10))
    assert capped.pairs_fit == 5 and "exceeds --max-launches 10: 5 of 7 pairs fit" in capped.line()
    timed = apply_worst(both, Limit(None, 350.0))
    assert timed.pairs_fit == 3 and "--max-time" in timed.line()
    assert isinstance(capped, ApplyWorst) and "within" in apply_worst(both, Limit(20)).line()


SPEC = """
stack "sys" {
  python = "system"
}
workload "w" {
  runs = 2
  max_runs = 6
  block = 1
  max_launches = 8
  %s
}
server "a" {
  engine = "command"
  model = "m"
  command = ["serve", "{port}"]
}
server "b" {
  engine = "command"
  model = "m"
  command = ["serve", "{port}", "--fast"]
}
experiment "base" {
  stack = stack.sys
  server = server.a
  workload = workload.w
}
experiment "cand" {
  stack = stack.sys
  server = server.b
  workload = workload.w
  baseline = experiment.base
  assert "faster" { output_throughput >= baseline.output_throughput * 1.05 }
}
"""


def _plan(tmp_path, capsys, extra: str = "", *flags: str):
    import json

    from specdsl.cli.main import main

    spec = tmp_path / "b.spec"
    spec.write_text(SPEC % extra)
    assert main(["plan", "--no-refresh", str(spec), "--state", str(tmp_path / "s"), *flags]) == 0
    text = capsys.readouterr().out
    assert main(["plan", "--no-refresh", str(spec), "--state", str(tmp_path / "s"), "--json", *flags]) == 0
    return text, json.loads(capsys.readouterr().out)


def test_the_plan_shows_the_worst_case_against_the_budget_on_an_empty_state(tmp_path, capsys):
    text, doc = _plan(tmp_path, capsys, "launch_estimate = 90s")
    line = next(x for x in text.splitlines() if x.strip().startswith("benchmark.cand") and "at most" in x)
    assert "at most 6 pairs, 12 launches, ~18.0 min" in line, line
    assert "a launch ~1.5 min (stated: launch_estimate of workload w)" in line, line
    assert "exceeds max_launches 8: 4 of 6 pairs fit" in line, line
    budget = next(c["budget"] for c in doc["changes"] if c["addr"] == "benchmark.cand")
    assert budget["pairs_fit"] == 4 and budget["seconds_most"] == 6 * 180.0 and budget["max_launches"] == 8
    assert budget["launch_estimate"]["baseline"] == {"seconds": 90.0, "source": "launch_estimate"}
    assert doc["budget"]["max_launches"] is None and doc["budget"]["worst"]["pairs_fit"] == 4


def test_without_a_stated_estimate_the_plan_says_it_guesses(tmp_path, capsys):
    text, _ = _plan(tmp_path, capsys)
    assert "a launch ~10.0 min (guessed: nothing recorded; set `launch_estimate` in workload w)" in text, text


def test_the_apply_wide_flags_cap_the_whole_apply_and_are_kept_in_a_saved_plan(tmp_path, capsys):
    from specdsl.plan.planfile import read_plan

    text, doc = _plan(tmp_path, capsys, "launch_estimate = 90s", "--max-launches", "20", "--max-time", "9m")
    # its own budget allows 4 pairs; 9 minutes of 3-minute pairs, 3
    assert "apply" in text and "exceeds --max-launches 20, --max-time 9.0 min: 3 of 4 pairs fit" in text, text
    assert doc["budget"] == {"max_launches": 20, "max_seconds": 540.0, "worst": doc["budget"]["worst"]}
    assert doc["budget"]["worst"]["pairs_fit"] == 3
    from specdsl.cli.main import main

    out = tmp_path / "p.plan.toml"
    assert main(["plan", "--no-refresh", str(tmp_path / "b.spec"), "--state", str(tmp_path / "s"), "-o", str(out),
                 "--max-launches", "20"]) == 0
    capsys.readouterr()
    saved = read_plan(out)
    assert saved.max_launches == 20 and saved.max_time is None and saved.worst("benchmark.cand").pairs_fit == 4


def test_a_budget_below_a_pair_is_refused_on_the_command_line(tmp_path, capsys):
    from specdsl.cli.main import main

    (tmp_path / "b.spec").write_text(SPEC % "")
    with pytest.raises(SystemExit) as exited:
        main(["plan", "--no-refresh", str(tmp_path / "b.spec"), "--max-launches", "3"])
    assert exited.value.code == 1 and "give 4 or more" in capsys.readouterr().err


def test_calibrate_measures_its_pairs_whatever_the_comparisons_budget(tmp_path):
    from specdsl.operations.calibrate import aa_config
    from specdsl.resolve.resolver import resolve_file

    (tmp_path / "b.spec").write_text(SPEC % "max_time = 1m")
    resolved = resolve_file(tmp_path / "b.spec")
    cfg = resolved.config
    assert cfg.experiment("cand").workload.max_launches == 8
    aa, cand = aa_config(cfg, cfg.experiment("cand"), 6)
    workload = aa.experiment(cand).workload
    # 6 pairs of calibrate's launches (2 runs each arm: runs count the runs of each arm)
    assert (workload.runs, workload.block, workload.max_launches, workload.max_time) == (12, 2, None, None)
