"""`state list` / `state show` know the plan's step addresses."""

from specdsl.state import State, StepRecord
from specdsl.state.commands import state_list, state_show


def test_steps_are_listed_and_shown_by_plan_address():
    state = State.new().with_step(StepRecord("launch.kimi", "launch", "abc", '{"server": {"engine": "sglang"}}', "t"))
    assert "launch.kimi\n" in state_list(state)
    shown = state_show(state, "launch.kimi")
    assert "identity" in shown and "abc" in shown and "sglang" in shown
