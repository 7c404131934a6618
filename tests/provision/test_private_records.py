"""What provisioning writes is its owner's only: folders 0700, files 0600,
whatever the umask (nothing is written around the host, whose mkdir and
write_text make them so)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from specdsl.hosts import LocalHost
from specdsl.model.config import Stack
from specdsl.provision import provision


@pytest.fixture
def open_umask():
    previous = os.umask(0)  # the most permissive: modes must not come from it
    yield
    os.umask(previous)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_environment_records_and_logs_are_private(tmp_path, open_umask):
    root = tmp_path / "cache" / "envs"
    log = tmp_path / "runs" / "r1" / "provision.log"
    host = LocalHost(env_root=root)
    stack = Stack(name="s", python="system", exclude=("never-installed",))
    record = provision(stack, host, "ident", log)
    provision(stack, host, "ident", log)  # a reuse: verify writes its log
    folder = root / "ident"
    for path in (root, tmp_path / "cache", folder, log.parent, tmp_path / "runs"):
        assert mode(path) == 0o700, path
    pth = next(Path(record.path).glob("lib/python*/site-packages/specdsl-inherited.pth"), None)
    files = [folder / "specdsl-env.json", folder / "overrides.txt", folder / "verify.log", root / "ident.lock", log]
    for path in files + ([pth] if pth else []):
        assert mode(path) == 0o600, path
