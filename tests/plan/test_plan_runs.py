"""A benchmark's identity is what it measures: its `runs`, `timeout` and
`cooldown` are left out, so raising them keeps recorded results, and a
result with fewer runs than the workload wants asks for the rest."""

from __future__ import annotations

import attrs
import pytest

from specdsl.plan.model import Action
from specdsl.plan.render import render_text
from specdsl.state import State, decode_state, encode_state

from plan_helpers import SPEC, applied_state, plan_for, resolve_text


def with_workload(tmp_path, extra: str, name: str):
    """SPEC with `extra` lines added to workload "w"."""
    return resolve_text(tmp_path, SPEC.replace("  requests    = 16\n", "  requests    = 16\n" + extra), name)


def bench_identity(cfg, exp="base"):
    graph, _ = plan_for(cfg)
    return graph.steps[f"benchmark.{exp}"].identity


def with_recorded_runs(state: State, counts: dict[str, int | None]) -> State:
    """The result of each benchmark address in `counts` summarizing that many runs."""
    for run in state.runs:
        if run.step in counts:
            state = state.with_run(attrs.evolve(run, runs=counts[run.step]))
    return state


def test_runs_timeout_and_cooldown_are_not_part_of_the_identity(tmp_path):
    plain = bench_identity(with_workload(tmp_path, "", "a.spec"))
    for i, extra in enumerate(("  runs = 5\n", "  timeout = 20m\n", "  cooldown = 30s\n")):
        assert bench_identity(with_workload(tmp_path, extra, f"b{i}.spec")) == plain, extra
    # what is measured still is
    assert bench_identity(with_workload(tmp_path, "  input_len = 64\n", "c.spec")) != plain
    assert bench_identity(with_workload(tmp_path, "  warmup = 3\n", "d.spec")) != plain


def test_raising_timeout_reuses_recorded_results(tmp_path):
    before = with_workload(tmp_path, "", "a.spec")
    graph, _ = plan_for(before)
    state = applied_state(graph)
    state = state.with_promotion("prod", state.result(graph.steps["benchmark.cand"].identity).id, ["faster"])
    _, plan = plan_for(with_workload(tmp_path, "  timeout = 30m\n  cooldown = 5s\n", "b.spec"), state)
    assert not plan.has_changes, render_text(plan)


def test_fewer_recorded_runs_than_wanted_asks_for_the_rest(tmp_path):
    cfg = with_workload(tmp_path, "  runs = 5\n  block = 1\n", "a.spec")  # block 1: `runs` pairs of one run
    graph, _ = plan_for(cfg)
    state = with_recorded_runs(applied_state(graph), {"benchmark.base": 3, "benchmark.cand": 4})
    _, plan = plan_for(cfg, state)
    base, cand = plan.change("benchmark.base"), plan.change("benchmark.cand")
    assert base.action is Action.RUN and base.reason == "2 more runs needed (3 recorded, 5 wanted)"
    assert cand.action is Action.RUN and cand.reason.startswith("1 more run needed (4 recorded, 5 wanted); paired with base (two fresh launches a pair): 5 pairs to the first look")
    assert base.fields == () and cand.fields == ()  # the same identity: nothing changed but the count
    assert plan.change("launch.tiny").action is Action.CREATE  # the runs need their server
    assert plan.change("promote.cand").action is Action.PROMOTE


@pytest.mark.parametrize("recorded", [5, 7, None])
def test_enough_or_unknown_recorded_runs_reuse(tmp_path, recorded):
    # None: a state written before runs were counted; taken as enough
    cfg = with_workload(tmp_path, "  runs = 5\n", "a.spec")
    graph, _ = plan_for(cfg)
    state = with_recorded_runs(applied_state(graph), {"benchmark.base": recorded})
    _, plan = plan_for(cfg, state)
    assert plan.change("benchmark.base").action is Action.REUSE
    assert plan.change("benchmark.base").reason.startswith("results recorded in run ")
    assert plan.change("launch.tiny").action is Action.REUSE


def test_rerun_reason_wins_over_the_run_count(tmp_path):
    cfg = with_workload(tmp_path, "  runs = 5\n", "a.spec")
    graph, _ = plan_for(cfg)
    state = with_recorded_runs(applied_state(graph), {"benchmark.base": 3})
    _, plan = plan_for(cfg, state, rerun=True)
    assert plan.change("benchmark.base").reason.startswith("rerun requested")


def test_state_records_the_run_count_and_reads_old_states_without_it(tmp_path):
    cfg = with_workload(tmp_path, "  runs = 5\n", "a.spec")
    graph, _ = plan_for(cfg)
    state = with_recorded_runs(applied_state(graph), {"benchmark.base": 3})
    text = encode_state(state)
    assert "runs = 3\n" in text
    back = decode_state(text, tmp_path / "state.toml")
    assert back == state
    assert back.result(graph.steps["benchmark.base"].identity).runs == 3
    assert back.result(graph.steps["benchmark.cand"].identity).runs is None  # absent: unknown
    with pytest.raises(Exception, match=r"runs\[0\]\.runs: expected an integer"):
        decode_state(text.replace("runs = 3\n", 'runs = "3"\n'), tmp_path / "state.toml")
    with pytest.raises(Exception, match=r"runs\[0\]\.runs: expected a count"):
        decode_state(text.replace("runs = 3\n", "runs = -1\n"), tmp_path / "state.toml")


def test_warmup_time_is_part_of_the_identity_only_when_set(tmp_path):
    plain = bench_identity(with_workload(tmp_path, "", "a.spec"))
    assert bench_identity(with_workload(tmp_path, "  warmup_time = 0s\n", "b.spec")) != plain  # set: it is measured so
    warm = bench_identity(with_workload(tmp_path, "  warmup_time = 20s\n", "c.spec"))
    assert warm != plain and warm != bench_identity(with_workload(tmp_path, "  warmup_time = 30s\n", "d.spec"))
