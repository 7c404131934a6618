from specdsl.graph.pairs import launches, pair_order, run_order


def test_pairs_alternate_abba_baab_and_each_costs_two_fresh_launches():
    assert [pair_order(i) for i in range(4)] == [("A", "B"), ("B", "A"), ("B", "A"), ("A", "B")]
    # no launch is shared between pairs: two per pair, whatever came before
    assert [launches(n) for n in range(5)] == [0, 2, 4, 6, 8]


def test_one_at_a_time_each_arm_runs_its_block_on_its_own_launch():
    assert run_order(0, 2, side_by_side=False) == [("A", 0), ("A", 1), ("B", 0), ("B", 1)]
    assert run_order(1, 2, side_by_side=False) == [("B", 0), ("B", 1), ("A", 0), ("A", 1)]


def test_side_by_side_the_runs_alternate_abba_inside_the_pair():
    assert "".join(a for a, _ in run_order(0, 4, side_by_side=True)) == "ABBAABBA"
    assert "".join(a for a, _ in run_order(1, 2, side_by_side=True)) == "BAAB"
    # each arm's j-th run meets the other's j-th run: the same prompts, adjacent
    assert [j for _, j in run_order(0, 2, side_by_side=True)] == [0, 0, 1, 1]
    assert run_order(2, 1, side_by_side=True) == [("B", 0), ("A", 0)]


def test_blocks_of_one_candidate_are_the_pairs():
    from specdsl.graph.pairs import arm_order, arms_run_order

    for i in range(8):
        assert arm_order(i, ("A", "B")) == pair_order(i)
        for side in (True, False):
            assert arms_run_order(i, ("A", "B"), 2, side) == run_order(i, 2, side)


def test_shared_blocks_cancel_a_linear_drift_for_every_comparison():
    """Three arms one at a time: over every two blocks each candidate's
    position minus the baseline's sums to zero (a linear drift of the
    machine adds that difference to its log ratio)."""
    from specdsl.graph.pairs import arm_order

    arms = ("A", "B", "B2")
    assert [arm_order(i, arms) for i in range(4)] == [arms, arms[::-1], arms[::-1], arms]
    for cand in ("B", "B2"):
        offsets = [arm_order(i, arms).index(cand) - arm_order(i, arms).index("A") for i in range(4)]
        assert offsets[0] + offsets[1] == 0 and offsets[2] + offsets[3] == 0, offsets


def test_sharing_groups_are_benchmarks_of_one_key_in_plan_order():
    from specdsl.graph.pairs import sharing_groups

    groups = sharing_groups({"benchmark.fix": "k1", "benchmark.other": "k2", "benchmark.up": "k1"})
    assert groups == {"benchmark.fix": ("benchmark.fix", "benchmark.up"),
                      "benchmark.up": ("benchmark.fix", "benchmark.up")}
    assert sharing_groups({"benchmark.alone": "k1"}) == {}


def test_the_plan_carries_the_shared_groups_the_walk_measures(tmp_path):
    """The groups sharing the baseline's launches are the plan's decision
    (Change.shares), kept by the plan file, which the walk reads
    (apply.steps.paired.sharing_followers) instead of grouping again; a
    comparison that continues recorded pairs shares nothing."""
    from plan_helpers import applied_state, plan_for, resolve_text

    from specdsl.plan.planfile import read_plan, write_plan

    spec = ('stack "s" {\n  python = "3.11"\n}\nserver "m" {\n  engine = "sglang"\n  model = "m"\n}\n'
            'workload "w" {\n  requests = 4\n  concurrency = 2\n  runs = 2\n  max_runs = 4\n}\n'
            'experiment "base" {\n  stack = stack.s\n  server = server.m\n  workload = workload.w\n}\n')
    for name, value in (("up", "8"), ("fix", "16")):
        spec += (f'experiment "{name}" {{\n  stack = stack.s\n  server = server.m {{ args = {{ max-running-requests = {value} }} }}\n'
                 '  workload = workload.w\n  baseline = experiment.base\n'
                 '  assert "faster" { output_throughput >= baseline.output_throughput }\n}\n')
    graph, plan = plan_for(resolve_text(tmp_path, spec))
    group = ("benchmark.fix", "benchmark.up")
    assert plan.change("benchmark.up").shares == plan.change("benchmark.fix").shares == group
    assert plan.change("provision.s").shares == ()
    write_plan(tmp_path / "p.plan.toml", plan)
    assert read_plan(tmp_path / "p.plan.toml").change("benchmark.up").shares == group
    _, again = plan_for(resolve_text(tmp_path, spec), applied_state(graph), rerun=True)
    assert again.change("benchmark.up").shares == group  # --rerun: measured from nothing again
    _, done = plan_for(resolve_text(tmp_path, spec), applied_state(graph))
    assert done.change("benchmark.up").shares == ()  # nothing runs
