"""Refresh: ask the hosts what still exists before planning.

For each environment in state: does its interpreter still exist on its
host? For each server: is its process alive there and does it answer HTTP
from here? The answer is a `plan.model.Refresh` (identities alive + drift
notes); planning itself stays pure. `--no-refresh` uses
`Refresh.from_state`: what state records is taken as true.

A record names its host by physical key (`local`, `ssh:...`); records of
earlier versions name a host block, which `names` maps to its declaration.
A host this version cannot drive is not asked: its records are trusted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import requests

from specdsl import provision
from specdsl.hosts import HostError, HostRegistry, ProcessHandle
from specdsl.hosts.http import session
from specdsl.plan.model import Refresh

_LOCAL = None  # the declaration of this machine (a host block without ssh)


def server_answers(base_url: str, timeout: float = 2.0) -> bool:
    try:
        with session() as http:
            for path in ("/health", "/v1/models"):
                resp = http.get(base_url.rstrip("/") + path, timeout=timeout)
                if resp.status_code < 500:
                    return True
    except requests.RequestException:  # any transport failure means: does not answer
        return False
    return False


def _decl_of(recorded_host: str, names: dict[str, Any]):
    """The declaration a record's host means, or the string "unknown"."""
    if recorded_host == "local":
        return _LOCAL
    if recorded_host in names:
        return names[recorded_host]
    return "unknown"


def refresh(state, registry: HostRegistry | None = None, names: dict[str, Any] | None = None,
            wanted: dict[str, Any] | None = None) -> Refresh:
    """Ask each record's host what still exists. `names` maps the spec's
    host block names to their declarations (for records written by earlier
    versions, which name the block). `wanted` maps the identities of the
    environments the plan needs to their host's declaration: one that state
    does not record but its host holds (the cache is shared by every spec)
    counts as existing, so the plan says `=` and apply reuses it."""
    registry = registry or HostRegistry()
    if state is None:
        from specdsl.state import State

        state = State.new()
    names = names or {}
    envs, servers, drift = set(), set(), []

    def host_for(recorded: str):
        decl = _decl_of(recorded, names)
        if isinstance(decl, str):
            return None
        try:
            return registry.get(decl)
        except HostError:
            return None

    for env in state.environments:
        host = host_for(env.host)
        if host is None:
            envs.add(env.identity)  # a host not asked: trust state
            continue
        if host.exists(Path(env.python)):
            envs.add(env.identity)
        else:
            drift.append(f"environment {env.identity[:12]} was recorded at {env.path}, is missing: will re-create if needed")
    for srv in state.servers:
        host = host_for(srv.host)
        if host is None:
            servers.add(srv.identity)
            continue
        if host.alive(ProcessHandle(srv.pid, srv.pgid, (), srv.log)) and server_answers(srv.base_url):
            servers.add(srv.identity)
        else:
            drift.append(f"server {srv.addr} was recorded running (pid {srv.pid}, {srv.base_url}), does not answer: will relaunch if needed")
    recorded = {env.identity for env in state.environments}
    for identity, decl in sorted((wanted or {}).items()):
        if identity in recorded:
            continue
        try:
            host = registry.get(decl)
        except HostError:
            continue
        if provision.find(host, identity) is not None:
            envs.add(identity)
    return Refresh(frozenset(envs), frozenset(servers), tuple(drift))
