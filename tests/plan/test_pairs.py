from specdsl.graph.pairs import launches, pair_order, schedule


def test_abba_baab_order_and_launch_count():
    assert "".join(arm for _, arm in schedule(4)) == "ABBABAAB"
    assert [pair_order(i) for i in range(4)] == [("A", "B"), ("B", "A"), ("B", "A"), ("A", "B")]
    assert launches(4) == 6  # A | BB | A | B | AA | B
    assert launches(1) == 2
    # continuing after 4 pairs with B still up: the pattern repeats, A first
    assert launches(4, first=4, up="B") == 6
    assert launches(1, first=0, up="A") == 1  # A is up: only B starts
    assert schedule(2, first=4) == [(4, "A"), (4, "B"), (5, "B"), (5, "A")]
