"""The steadiness checks on a run's own records (specdsl.bench.steady)."""

from specdsl.bench.steady import cold_start_warning, unsteady_warning


def test_a_first_wave_that_waited_much_longer_is_not_steady():
    cold = [300.0] * 4 + [40.0] * 8
    said = unsteady_warning(cold, 4)
    assert said is not None and said.startswith("not steady: the first 4 requests waited 7.5x longer"), said
    assert "300 ms" in said and "40 ms" in said and "warmup_time" in said


def test_steady_runs_and_runs_of_one_wave_are_not_flagged():
    assert unsteady_warning([41.0, 39.0, 40.0, 40.0] * 3, 4) is None
    assert unsteady_warning([300.0] * 4, 4) is None  # one wave: nothing to compare it with
    # twice as slow but only 10 ms more: jitter of small latencies, not a cold server
    assert unsteady_warning([20.0] * 4 + [8.0] * 8, 4) is None


def test_a_launch_whose_first_run_was_far_slower_had_a_cold_start():
    said = cold_start_warning([400.0, 1000.0, 980.0, 1020.0])
    assert said is not None and "60% below" in said and "1000" in said, said
    assert cold_start_warning([900.0, 1000.0, 980.0]) is None  # within 20%
    assert cold_start_warning([400.0]) is None  # one run: nothing to compare it with
    assert cold_start_warning([0.0, 1000.0]) is None  # a broken run is another check's business
