"""The real one-node Slurm cluster of these tests (cluster.py), once per
module. Without Slurm installed the tests are skipped, unless
SPECDSL_REQUIRE_SLURM=1 (CI sets it: there a missing Slurm is a failure).

`login`: a real sshd on loopback (tests/hosts/ssh/sshd.py) standing in for
the cluster's login node. Both run as the current user (root: the
cluster's daemons need it), so a job submitted through the sshd session
runs as that user on the one node, and the "login node" sees the same
filesystem as the node, as a real login node does."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "apply"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "hosts" / "ssh"))

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


@pytest.fixture(scope="module")
def login(tmp_path_factory):
    from sshd import Sshd, available as sshd_available

    why = sshd_available()
    if why:
        for switch in ("SPECDSL_REQUIRE_SLURM", "SPECDSL_REQUIRE_SSH"):
            if os.environ.get(switch) == "1":
                pytest.fail(f"{switch}=1 but {why}")
        pytest.skip(why)
    server = Sshd(tmp_path_factory.mktemp("login")).start()
    try:
        yield server
    finally:
        server.stop()
