"""Refresh: ask the hosts what still exists before planning.

For each environment in state: does its interpreter still exist on its
host? For each server: is its process alive there and does it answer HTTP
from here? The answer is a `plan.model.Refresh` (identities alive + drift
notes); planning itself stays pure. `--no-refresh` uses
`Refresh.from_state`: what state records is taken as true.

A record names its host by physical key (`local`, `ssh:...`); records of
earlier versions name a host block, which `names` maps to its declaration.
A host this version cannot drive is not asked: its records are trusted.
A host that cannot be reached (an ssh host down, a key refused) is not
asked either: its records are trusted and a drift note says why; with
`strict` (what `specdsl plan` and `apply` use), a host the spec declares
that cannot be reached is an error instead (`Unreachable`, naming each
such host and the cause): a plan that silently trusted it would say
"changes pending" for the wrong reason. `--no-refresh` plans offline. A server
on a remote host is asked through a port forwarded for this refresh (the
address state records is a forward of the apply that started it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import requests

from specdsl import provision
from specdsl.hosts import HostError, HostRegistry, ProcessHandle
from specdsl.hosts import host_key as host_key_of
from specdsl.hosts.http import session
from specdsl.model.config import Host as HostDecl
from specdsl.plan.model import Refresh

_LOCAL = None  # the declaration of this machine (a host block without ssh)


class Unreachable(Exception):
    """Hosts of the spec that refresh could not reach: `causes` maps each
    one's description to why (`host gpu8 (bench@gpu8): connecting: unknown
    host ...`)."""

    def __init__(self, causes: list[str], hosts: list[str] | None = None, fresh: Refresh | None = None) -> None:
        self.causes = causes
        self.hosts = hosts or []  # the host key of each cause
        self.fresh = fresh  # what the other hosts said (the unreachable ones' records trusted, their caches missing)
        super().__init__("; ".join(causes))


def address_now(host, record) -> str:
    """The base URL that reaches the recorded server `record` on `host` from
    here, now. On this machine, the recorded one. On a remote host, a port
    forwarded through this apply's master (`Host.reach`; one per port while
    the host is open): the recorded address is the forward of the apply that
    started the server, gone with that apply's master, and a later apply's
    forward is another local port. Raises HostError when it cannot be made."""
    if host.key == "local":
        return record.base_url
    here, port = host.reach(record.port)
    return f"http://{here}:{port}"


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
    if recorded_host.startswith("ssh:"):
        # a physical key: the spec's block for that target, else the target alone
        target = recorded_host[len("ssh:"):]
        for decl in names.values():
            if getattr(decl, "ssh", None) == target:
                return decl
        return HostDecl(name=target, ssh=target)
    return "unknown"


def refresh(state, registry: HostRegistry | None = None, names: dict[str, Any] | None = None,
            wanted: dict[str, Any] | None = None, *, strict: bool = False) -> Refresh:
    """Ask each record's host what still exists. `names` maps the spec's
    host block names to their declarations (for records written by earlier
    versions, which name the block). `wanted` maps the identities of the
    environments the plan needs to their host's declaration: one that state
    does not record but its host holds (the cache is shared by every spec)
    counts as existing, so the plan says `=` and apply reuses it. With
    `strict`, a host of `names` or `wanted` that cannot be reached raises
    `Unreachable` (after every host was tried: all are named at once)."""
    own_registry = registry is None
    registry = registry or HostRegistry()
    try:
        fresh, unreachable = _refresh(state, registry, names or {}, wanted)
        if strict:
            declared = {host_key_of(d) for d in [*(names or {}).values(), *(wanted or {}).values()] if d is not None}
            keys = [key for key in sorted(unreachable) if key in declared]
            if keys:
                raise Unreachable([unreachable[k] for k in keys], keys, fresh)
        return fresh
    finally:
        if own_registry:
            registry.close()  # an ssh host's master connection ends with the refresh


def _refresh(state, registry: HostRegistry, names: dict[str, Any], wanted: dict[str, Any] | None) -> tuple[Refresh, dict[str, str]]:
    if state is None:
        from specdsl.state import State

        state = State.new()
    envs, servers, drift = set(), set(), []
    unreachable: dict[str, str] = {}

    def host_for(recorded: str):
        decl = _decl_of(recorded, names)
        if isinstance(decl, str) or recorded in unreachable:
            return None
        try:
            return registry.get(decl)
        except HostError as exc:
            if recorded.startswith("ssh:") or getattr(decl, "ssh", None):
                unreachable[recorded] = str(exc)  # could not connect: noted once
                drift.append(f"{exc}: its records are taken as they are")
            return None

    def asked(recorded: str, question):
        """The host's answer, or None when it cannot be reached (noted once)."""
        try:
            return question()
        except HostError as exc:
            unreachable[recorded] = str(exc)
            drift.append(f"{exc}: its records are taken as they are")
            return None

    for env in state.environments:
        host = host_for(env.host)
        found = None if host is None else asked(env.host, lambda: host.exists(Path(env.python)))
        if found is None or found:
            envs.add(env.identity)  # found, or a host not asked: trust state
        else:
            drift.append(f"environment {env.identity[:12]} was recorded at {env.path}, is missing: will re-create if needed")
    for srv in state.servers:
        host = host_for(srv.host)
        up = None if host is None else asked(srv.host, lambda: _server_up(host, srv))
        if up is None or up:
            servers.add(srv.identity)
        else:
            drift.append(f"server {srv.addr} was recorded running (pid {srv.pid}, {srv.base_url}), does not answer: will relaunch if needed")
    recorded = {env.identity for env in state.environments}
    for identity, decl in sorted((wanted or {}).items()):
        if identity in recorded:
            continue
        if host_key_of(decl) in unreachable:
            continue
        try:
            host = registry.get(decl)
            if provision.find(host, identity) is not None:
                envs.add(identity)
        except HostError as exc:
            if host_key_of(decl) not in unreachable:
                unreachable[host_key_of(decl)] = str(exc)
                drift.append(f"{exc}: environments there are taken as missing")
    return Refresh(frozenset(envs), frozenset(servers), tuple(drift)), unreachable


def _server_up(host, srv) -> bool:
    if not host.alive(ProcessHandle(srv.pid, srv.pgid, (), srv.log)):
        return False
    return server_answers(address_now(host, srv))
