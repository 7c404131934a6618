"""What `runs` means in a paired comparison (specdsl.plan.economy): runs of
each arm, in launches of `block` runs, at least 2 pairs; and a seeded
simulation that the schedule it gives (a first look at 2 pairs) keeps the
verdicts' error rates with launch effects from 0 to 3 times the run noise,
the launch mean of its runs being one value of its pair."""

from __future__ import annotations

import math
import random

import pytest

from specdsl.model.config import Workload
from specdsl.plan import economy
from specdsl.plan.looks import block_of, first_pairs, grid_first, looks_of, max_runs, recorded_block, schedule_for
from specdsl.verdict import Status, runs_per_launch, sequential_decision


def w(**kw) -> Workload:
    return Workload(name="w", **kw)


def test_the_storys_runs_are_one_launch_of_each_arm_twice_over():
    story = w(runs=5)
    assert block_of(story) == 5  # every run the user asked for on one launch of each arm
    assert grid_first(story) == 2 and max_runs(story) == 3  # 2 pairs, up to 15 runs of each arm
    assert schedule_for(story).looks() == [2, 3]  # the look at 2 pairs is taken: it can decide
    assert looks_of(story)["block"] == 5


def test_a_declared_block_splits_the_runs_over_launches():
    assert (grid_first(w(runs=4, block=2)), max_runs(w(runs=4, max_runs=6, block=2))) == (2, 3)
    assert (grid_first(w(runs=6, block=2)), max_runs(w(runs=6, block=2))) == (3, 9)
    assert grid_first(w(runs=2, block=2)) == 2  # never fewer than 2 pairs: the launch is the unit
    assert grid_first(w(runs=1)) == 2 and max_runs(w(runs=1)) == 3  # the default workload, as before


def test_a_block_of_one_is_the_rule_before_and_old_schedules_keep_it():
    assert (grid_first(w(runs=5), 1), max_runs(w(runs=5), 1)) == (5, 15)
    old = {"first": 3, "step": 1, "horizon": 6, "spending": "obf", "reserve": 0.2, "skip_t": 30.0}  # no block
    assert recorded_block(old, w(runs=3, max_runs=6)) == economy.BEFORE
    assert schedule_for(w(runs=3, max_runs=6), old).max == 6
    # its runs per launch were the declared block: the walk goes on with it, and `runs` still counts pairs
    from specdsl.plan.looks import counting_block

    assert (recorded_block(old, w(runs=3, block=2)), counting_block(old, w(runs=3, block=2))) == (2, economy.BEFORE)
    assert schedule_for(w(runs=3, max_runs=6, block=2), old).max == 6


def test_a_calibrated_suggestion_is_bounded_by_runs():
    class Run:
        def __init__(self, suggested):
            self.step, self.status, self.metrics = "calibrate.e", "completed", {"block.suggested": float(suggested)}

    class State:
        def __init__(self, suggested):
            self.runs = [Run(suggested)]

    assert block_of(w(runs=5), State(16), "e") == 5
    assert block_of(w(runs=6), State(2), "e") == 2
    # 3 pairs of 2 runs first, up to 9: the look at 3 pairs cannot decide (a t beyond 30) and is not taken
    assert (grid_first(w(runs=6), 2), max_runs(w(runs=6), 2), first_pairs(w(runs=6), block=2)) == (3, 9, 4)
    assert block_of(w(runs=6, block=3), State(2), "e") == 3  # a declared block wins


def test_kalibera_jones_spends_launches_where_the_variance_is():
    # launches 20x dearer than runs: alike launches get many runs, differing launches few
    assert runs_per_launch(20.0, 1.0, 1e-4, 0.0, hi=5) == 5
    assert runs_per_launch(20.0, 1.0, 1e-4, 1e-4, hi=16) == 4  # sqrt(20)
    assert runs_per_launch(20.0, 1.0, 1e-4, 30e-4, hi=16) == 1  # sqrt(20 / 30) = 0.82


APPLIES = 1500


def _walk(rng: random.Random, truth: float, k: float, run_sd: float, launch_sd: float, block: int, schedule) -> Status:
    """One apply under `schedule`: pair i one launch of each arm (a factor
    exp(launch_sd z) shared by its `block` runs), the arm's value the mean of
    its launch's runs; stops at the first PASS or FAIL."""
    def arm(speed: float) -> float:
        factor = math.exp(rng.gauss(0.0, launch_sd))
        return sum(speed * factor * math.exp(rng.gauss(0.0, run_sd)) for _ in range(block)) / block

    pairs = []
    for n in schedule.looks():
        while len(pairs) < n:
            pairs.append((arm(1.0), arm(truth)))
        d = sequential_decision(pairs, ">=", k, schedule)
        if d.verdict is not Status.INCONCLUSIVE:
            return d.verdict
    return d.verdict


@pytest.mark.parametrize("ratio", [0.0, 1.0, 3.0])
def test_aa_at_the_threshold_stays_within_the_stated_error_with_launch_effects(ratio):
    """`runs = 5` (5 runs a launch, looks at 2 and 3 pairs), the candidate
    exactly at `>= baseline * 1.03`: false PASS and false FAIL each within
    5% plus the simulation's error (one binomial sd at 1500 applies: 0.56
    points), whether the launches agree or differ by 3x the run noise."""
    workload = w(runs=5)
    schedule = schedule_for(workload)
    rng = random.Random(20261203 + int(ratio * 10))
    verdicts = [_walk(rng, 1.03, 1.03, 0.005, ratio * 0.005, block_of(workload), schedule) for _ in range(APPLIES)]
    assert sum(v is Status.PASS for v in verdicts) / APPLIES <= 0.065
    assert sum(v is Status.FAIL for v in verdicts) / APPLIES <= 0.065


def test_the_storys_effects_decide_at_the_first_looks():
    """At the story's noise (runs within 83.5-84.9: about 0.5% per run, no
    launch effect) the upgrade (0.94 against `>= 1.03`) and the fix (1.05)
    decide within 3 pairs of 5 runs a launch: at most 9 launches with the
    baseline's launch shared."""
    workload = w(runs=5)
    schedule = schedule_for(workload)
    rng = random.Random(5)
    up = [_walk(rng, 0.94, 1.03, 0.005, 0.0, 5, schedule) for _ in range(200)]
    fix = [_walk(rng, 1.05, 1.03, 0.005, 0.0, 5, schedule) for _ in range(200)]
    assert all(v is Status.FAIL for v in up)
    assert sum(v is Status.PASS for v in fix) >= 198
