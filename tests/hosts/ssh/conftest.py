"""Fixtures: a real sshd on loopback (sshd.py) and `SshHost`s on it."""

from __future__ import annotations

import pytest

from sshd import Sshd, available


@pytest.fixture(scope="session")
def sshd(tmp_path_factory):
    why = available()
    if why:
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
