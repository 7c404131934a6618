"""Fixtures: a real sshd on loopback (sshd.py) and `SshHost`s on it.

Without sshd or the ssh client installed the tests are skipped, unless
SPECDSL_REQUIRE_SSH=1 (CI sets it where sshd is installed: there a missing
sshd is a failure, not a quiet skip)."""

from __future__ import annotations

import os

import pytest

from sshd import Sshd, available


@pytest.fixture(scope="session")
def sshd(tmp_path_factory):
    why = available()
    if why:
        if os.environ.get("SPECDSL_REQUIRE_SSH") == "1":
            pytest.fail(f"SPECDSL_REQUIRE_SSH=1 but {why}")
        pytest.skip(why)
    server = Sshd(tmp_path_factory.mktemp("sshd")).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def ssh_host(sshd, tmp_path):
    from specdsl.hosts.ssh import SshHost

    host = SshHost("specdsl-test", name="loop", workdir=str(tmp_path / "workdir"), config=str(sshd.config))
    try:
        yield host
    finally:
        host.close()
