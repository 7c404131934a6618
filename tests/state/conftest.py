"""Shared fixtures for the state tests: a realistic State with one of each
record, and a fresh state folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from specdsl.state import Environment, RunRecord, ServerRecord, State


def make_state() -> State:
    """A State with an environment, a server, a completed and a failed run,
    and a promoted baseline (serial 0, new lineage)."""
    state = State.new()
    state = state.with_environment(Environment(
        identity="prov-1a2b", host="local", path="/envs/cu130", python="3.12",
        python_version="3.12.4", packages={"torch": "2.9.1+cu130", "sglang": "0.5.9"},
        torch={"torch": "2.9.1", "cuda": "13.0", "nccl": "2.27.7"}, created="2026-03-01T10:00:00Z"))
    state = state.with_server(ServerRecord(
        identity="launch-3c4d", addr="launch.kimi", host="local", pid=4242, pgid=4242, port=30000,
        base_url="http://127.0.0.1:30000", log="runs/r1/server.log", started="2026-03-01T10:05:00Z",
        effective={"attention_backend": "triton", "tp_size": 8, "enable_deepgemm": True,
                   "speculative": {"algorithm": "EAGLE3", "num_steps": 3}, "cuda_graph_bs": [1, 2, 4]}))
    state = state.with_run(RunRecord(
        id="20260301T101000Z-aaaa0001", step="benchmark.upgrade", identity="bench-5e6f",
        experiment="upgrade", status="completed", started="2026-03-01T10:10:00Z",
        finished="2026-03-01T10:20:00Z", folder="runs/20260301T101000Z-aaaa0001",
        metrics={"output_throughput": 92.6, "p99_itl_ms": 11.5}, effective={"attention_backend": "flashinfer"}))
    state = state.with_run(RunRecord(
        id="20260301T103000Z-aaaa0002", step="benchmark.backends[fa3]", identity="bench-7a8b",
        experiment="backends", status="failed", started="2026-03-01T10:30:00Z",
        finished="2026-03-01T10:31:00Z", folder="runs/20260301T103000Z-aaaa0002",
        reason="server exited with code 1 before it was ready"))
    return state.with_promotion("kimi-prod", "20260301T101000Z-aaaa0001", ["faster", "latency", "backend"],
                                time="2026-03-01T10:21:00Z")


@pytest.fixture
def sample_state() -> State:
    return make_state()


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    return tmp_path / "proj" / ".specdsl"
