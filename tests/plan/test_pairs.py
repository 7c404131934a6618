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
