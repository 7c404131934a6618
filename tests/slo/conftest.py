"""Fixtures of the SLO tests: a spec folder (tests/faults' Folder) whose
server doubles are stopped by their process groups when the test ends."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "faults"))

from faults_helpers import Folder  # noqa: E402


@pytest.fixture(scope="session")
def slo_envs(tmp_path_factory):
    """One environment root for the module: the system stack is built once."""
    return tmp_path_factory.mktemp("slo-envs")


@pytest.fixture
def folder(tmp_path, slo_envs):
    f = Folder(tmp_path, slo_envs)
    yield f
    left = f.groups_alive()
    f.kill_all()
    assert not left, f"server process groups left running: {left}"
