"""Property: any State round-trips through TOML, and through write/load,
unchanged but for the serial."""

from __future__ import annotations

import tempfile
from pathlib import Path

import attrs
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from specdsl.state import (
    Environment, RunRecord, ServerRecord, State, decode_state, encode_state, load_state, write_state,
)
from specdsl.state.model import STATUSES

text = st.text(max_size=12)
ints = st.integers(min_value=-(2**63), max_value=2**63 - 1)
floats = st.floats(allow_nan=False)
run_ids = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{0,16}", fullmatch=True)
scalars = st.one_of(text, ints, floats, st.booleans())
config_values = st.recursive(
    st.one_of(scalars, st.none()),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(text, inner, max_size=4)),
    max_leaves=12,
)
config = st.dictionaries(text, config_values, max_size=5)
str_map = st.dictionaries(text, text, max_size=4)

environments = st.builds(
    Environment, identity=text, host=text, path=text, python=text, python_version=text,
    packages=str_map, torch=str_map, created=text)
servers = st.builds(
    ServerRecord, identity=text, addr=text, host=text, pid=ints, pgid=ints, port=ints,
    base_url=text, log=text, started=text, effective=config)
runs = st.builds(
    RunRecord, id=run_ids, step=text, identity=text, experiment=text, status=st.sampled_from(STATUSES),
    started=text, finished=text, folder=text, metrics=st.dictionaries(text, floats, max_size=4),
    effective=config, reason=text, runs=st.none() | st.integers(min_value=0, max_value=1000))


@st.composite
def states(draw) -> State:
    state = State.new()
    for env in draw(st.lists(environments, max_size=3)):
        state = state.with_environment(env)
    for server in draw(st.lists(servers, max_size=3)):
        state = state.with_server(server)
    for run in draw(st.lists(runs, max_size=5)):
        state = state.with_run(run)
    completed = [r.id for r in state.runs if r.status == "completed"]
    if completed:
        every = [r.id for r in state.runs]
        for track, run_id, checks, time, verdicts, lock in draw(st.lists(
                st.tuples(text, st.sampled_from(completed), st.lists(text, max_size=3), text,
                          st.lists(st.sampled_from(every), max_size=3), text), max_size=3)):
            state = state.with_promotion(track, run_id, checks, time=time, verdicts=verdicts, lock=lock)
    return state


@given(states())
@example(State.new().with_server(ServerRecord(
    identity="s", addr="launch.x", host="h", pid=1, pgid=1, port=1, base_url="u",
    effective={"a": [["b", 1], ["a", 2]], "c": [["a", None]], "d": {}, "": [None, 1.5]})))
@example(State.new()
         .with_run(RunRecord(id="0", step="", identity="a", experiment="", status="completed", started=""))
         .with_run(RunRecord(id="0", step="", identity="", experiment="", status="failed", started="")))
@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
def test_encode_decode_round_trip(state):
    assert state.problems() == []  # the strategy builds sound states only
    assert decode_state(encode_state(state), Path("state.toml")) == state


@given(states())
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_write_load_round_trip(state):
    with tempfile.TemporaryDirectory() as tmp:
        state_dir = Path(tmp) / ".specdsl"
        written = write_state(state_dir, state)
        assert written == attrs.evolve(state, serial=state.serial + 1)
        loaded = load_state(state_dir)
        assert loaded == written
        again = write_state(state_dir, loaded)
        assert load_state(state_dir) == attrs.evolve(state, serial=2)
        assert again.lineage == state.lineage
