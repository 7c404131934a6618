"""Refresh: ask the hosts what still exists before planning.

For each environment in state: does its interpreter still exist? For each
server: is its process alive and does it answer HTTP? The answer is a
`plan.model.Refresh` (identities alive + drift notes); planning itself stays
pure. `--no-refresh` uses `from_state`: what state records is taken as true.
"""

from __future__ import annotations

from pathlib import Path

import requests

from specdsl.hosts.http import session
from specdsl.plan.model import Refresh
from specdsl.state.lock import pid_alive


def from_state(state) -> Refresh:
    if state is None:
        return Refresh()
    return Refresh(frozenset(e.identity for e in state.environments), frozenset(s.identity for s in state.servers))


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


def refresh(state, local_hosts: frozenset[str] = frozenset({"local"})) -> Refresh:
    """Ask what still exists. `local_hosts` are the spec's host names that
    mean this machine (no `ssh`): their records are checked here; records of
    other hosts are trusted (remote hosts are not asked yet)."""
    if state is None:
        return Refresh()
    envs, servers, drift = set(), set(), []
    for env in state.environments:
        if env.host not in local_hosts:
            envs.add(env.identity)  # remote hosts are not asked yet: trust state
            continue
        if Path(env.python).exists():
            envs.add(env.identity)
        else:
            drift.append(f"environment {env.identity[:12]} was recorded at {env.path}, is missing: will re-create if needed")
    for srv in state.servers:
        if srv.host not in local_hosts:
            servers.add(srv.identity)
            continue
        if pid_alive(srv.pid) and server_answers(srv.base_url):
            servers.add(srv.identity)
        else:
            drift.append(f"server {srv.addr} was recorded running (pid {srv.pid}, {srv.base_url}), does not answer: will relaunch if needed")
    return Refresh(frozenset(envs), frozenset(servers), tuple(drift))
