"""The real one-node Slurm cluster of these tests (cluster.py), once per
module. Without Slurm installed the tests are skipped, unless
SPECDSL_REQUIRE_SLURM=1 (CI sets it: there a missing Slurm is a failure)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "apply"))

from cluster import Cluster, available  # noqa: E402


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    why = available()
    if why is not None:
        if os.environ.get("SPECDSL_REQUIRE_SLURM") == "1":
            pytest.fail(f"SPECDSL_REQUIRE_SLURM=1 but {why}")
        pytest.skip(why)
    c = Cluster(tmp_path_factory.mktemp("slurm")).start()
    try:
        yield c
    finally:
        c.cancel_all()
        c.stop()


@pytest.fixture
def fresh(cluster):
    """The cluster with no job and its node idle, before and after a test."""
    cluster.cancel_all()
    if not cluster.idle():
        cluster.resume()
    yield cluster
    cluster.cancel_all()
    if not cluster.idle():
        cluster.resume()
