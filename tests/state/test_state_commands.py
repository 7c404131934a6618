"""`state list`, `state show` and `force-unlock` glue."""

from __future__ import annotations

import tomllib

import attrs
import pytest

from specdsl.state import write_state
from specdsl.state.commands import (
    UnknownAddress, cmd_force_unlock, cmd_state_list, cmd_state_show, state_list, state_show,
)
from specdsl.state.lock import lock_path


def test_list_one_address_per_line(sample_state):
    assert state_list(sample_state).splitlines() == [
        "environment.prov-1a2b",
        "server.launch.kimi",
        "run.20260301T101000Z-aaaa0001",
        "run.20260301T103000Z-aaaa0002",
        "baseline.kimi-prod",
    ]
    assert state_list(None) == ""


def test_servers_sharing_an_addr_are_listed_by_identity(sample_state):
    twin = attrs.evolve(sample_state.servers[0], identity="launch-9999", port=30001)
    lines = state_list(sample_state.with_server(twin)).splitlines()
    assert "server.launch-3c4d" in lines and "server.launch-9999" in lines


def test_show_run_is_readable_toml(sample_state):
    text = state_show(sample_state, "run.20260301T101000Z-aaaa0001")
    assert text.startswith("# run.20260301T101000Z-aaaa0001\n# the current result of step benchmark.upgrade")
    doc = tomllib.loads(text)
    assert doc["status"] == "completed" and doc["metrics"]["output_throughput"] == 92.6


def test_show_server_and_baseline_with_history(sample_state):
    server = tomllib.loads(state_show(sample_state, "server.launch.kimi"))
    assert server["effective"]["attention_backend"] == "triton"
    assert server["effective"]["speculative"] == {"algorithm": "EAGLE3", "num_steps": 3}
    baseline = tomllib.loads(state_show(sample_state, "baseline.kimi-prod"))
    assert baseline["run"] == "20260301T101000Z-aaaa0001"
    assert baseline["promotions"][0]["checks"] == ["faster", "latency", "backend"]
    assert "previous" not in baseline["promotions"][0]  # None is an omitted key


def test_show_unknown_address_suggests(sample_state):
    with pytest.raises(UnknownAddress, match="did you mean `baseline.kimi-prod`"):
        state_show(sample_state, "baseline.kimi-prd")
    with pytest.raises(UnknownAddress, match="specdsl state list"):
        state_show(sample_state, "zzz")


def test_cmd_functions_on_a_state_folder(state_dir, sample_state):
    code, text = cmd_state_list(state_dir)
    assert code == 1 and text.startswith(f"{state_dir}: error: No state recorded here")
    write_state(state_dir, sample_state)
    code, text = cmd_state_list(state_dir)
    assert code == 0 and "baseline.kimi-prod" in text
    code, text = cmd_state_show(state_dir, "environment.prov-1a2b")
    assert code == 0 and 'torch = "2.9.1+cu130"' in text
    code, text = cmd_state_show(state_dir, "environment.prov-1a2")
    assert code == 1 and "did you mean `environment.prov-1a2b`" in text and str(state_dir) in text
    (state_dir / "state.toml").write_text("format_version = 1\nlineage = ")
    code, text = cmd_state_list(state_dir)
    assert code == 1 and "not valid TOML" in text


def test_cmd_force_unlock_wrong_id(state_dir):
    from specdsl.state import locked
    with locked(state_dir, "apply") as info:
        code, text = cmd_force_unlock(state_dir, "nope")
        assert code == 1 and info.id in text
    assert not lock_path(state_dir).exists()
    code, text = cmd_force_unlock(state_dir.parent / "missing", "x")
    assert code == 1 and "No state folder" in text
