"""The hosts of one apply (or refresh), found by the physical machine they
mean, not by the name a spec gives them.

`host_key(decl)` names the machine a host declaration points at: every
block without `ssh` is this machine ("local"), whatever it is called, so
two such blocks share one `Host` object, one set of GPUs and one place for
environments. The registry makes each `Host` once, on first use, and closes
them all at the end. A new kind of host is one class and one entry in
`KINDS`; nothing above this layer changes.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

from specdsl.hosts.base import Host, HostError
from specdsl.hosts.local import LocalHost
from specdsl.hosts.ssh import SshHost

# An ssh config file for every ssh host (`ssh -F`), instead of ~/.ssh/config.
SSH_CONFIG_ENV = "SPECDSL_SSH_CONFIG"


def host_key(decl: Any) -> str:
    """The physical machine a host declaration (anything with `ssh`) means."""
    ssh = getattr(decl, "ssh", None)
    return f"ssh:{ssh}" if ssh else "local"


def host_kind(decl: Any) -> str:
    return "ssh" if getattr(decl, "ssh", None) else "local"


class HostRegistry:
    """One `Host` per physical machine. `env_root` moves this machine's
    environments (tests, `SPECDSL_ENV_ROOT`); remote hosts keep theirs under
    their `workdir`."""

    def __init__(self, *, env_root: Path | None = None, kinds: dict[str, Callable[..., Host]] | None = None) -> None:
        self.env_root = env_root
        self.kinds = dict(KINDS if kinds is None else kinds)
        self._hosts: dict[str, Host] = {}

    def get(self, decl: Any) -> Host:
        """The `Host` for a declaration; `HostError` when that kind of host
        cannot be driven by this version."""
        key = host_key(decl)
        host = self._hosts.get(key)
        if host is None:
            kind = host_kind(decl)
            make = self.kinds.get(kind)
            if make is None:
                name = getattr(decl, "name", key)
                raise HostError(
                    f"host {name} is reached over {kind} ({getattr(decl, 'ssh', '')}); this registry drives "
                    f"{', '.join(sorted(self.kinds)) or 'no kind of host'} only"
                )
            host = make(decl, self)
            self._hosts[key] = host
        return host

    def local(self) -> Host:
        """This machine."""
        return self.get(None)

    def close(self) -> None:
        for host in self._hosts.values():
            host.close()
        self._hosts.clear()


def _local(_decl: Any, registry: HostRegistry) -> Host:
    return LocalHost(env_root=registry.env_root)


def _ssh(decl: Any, _registry: HostRegistry) -> Host:
    """Connected at once, so the first step on it (preflight) says whether it can be reached."""
    host = SshHost(decl.ssh, name=getattr(decl, "name", None), workdir=getattr(decl, "workdir", None),
                   config=os.environ.get(SSH_CONFIG_ENV) or None)
    try:
        host.connect()
    except BaseException:
        host.close()
        raise
    return host


KINDS: dict[str, Callable[[Any, HostRegistry], Host]] = {"local": _local, "ssh": _ssh}

__all__ = ["HostError", "HostRegistry", "KINDS", "SSH_CONFIG_ENV", "host_key"]
