"""Glue for the `state list`, `state show` and `force-unlock` commands.

Pure renderers (`state_list`, `state_show`) work on a State; the `cmd_*`
functions take the parsed argument values, do the I/O and return
`(exit code, text)`: exit 0 with text for stdout, or non-zero with an error
message for stderr (1: a user mistake or a bad state folder, 6: a conflict,
the CLI's exit codes). Nothing here prints.

Addresses: `environment.<identity>`, `server.<launch addr>` (e.g.
`server.launch.kimi`; `server.<identity>` when two servers share an addr),
`run.<id>`, `baseline.<track>`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import tomli_w

from specdsl.diag import did_you_mean
from specdsl.names import natural_sorted
from specdsl.state.codec import encode_record
from specdsl.state.errors import StateError
from specdsl.state.lock import force_unlock
from specdsl.state.model import State
from specdsl.state.statefile import load_state, state_path


class UnknownAddress(ValueError):
    """`state show` was given an address that is not in the state."""


def _resources(state: State) -> dict[str, tuple[str, Any]]:
    """address -> (kind, record), in listing order: environments, servers,
    runs (in the order they ran), baselines, steps; within each kind by
    address, numbers by value (`grid[c=4]` before `grid[c=16]`)."""
    def by_address(items: dict[str, tuple[str, Any]]) -> dict[str, tuple[str, Any]]:
        return {addr: items[addr] for addr in natural_sorted(items)}

    out: dict[str, tuple[str, Any]] = {}
    out |= by_address({f"environment.{env.identity}": ("environment", env) for env in state.environments})
    servers = {}
    for server in state.servers:
        shared = len(state.servers_at(server.addr)) > 1
        servers[f"server.{server.identity if shared else server.addr}"] = ("server", server)
    out |= by_address(servers)
    for run in state.runs:
        out[f"run.{run.id}"] = ("run", run)
    out |= by_address({f"baseline.{b.track}": ("baseline", b) for b in state.baselines})
    # the plan's addresses: `state show launch.kimi`
    out |= by_address({step.addr: ("step", step) for step in state.steps})
    return out


def state_list(state: State | None) -> str:
    """One address per line: environments, servers, runs, baselines."""
    if state is None:
        return ""
    return "".join(addr + "\n" for addr in _resources(state))


def state_show(state: State | None, addr: str) -> str:
    """A readable TOML dump of the resource at `addr`. UnknownAddress (with
    a did-you-mean) when there is none."""
    resources = _resources(state) if state is not None else {}
    if addr not in resources:
        hint = did_you_mean(addr, resources)
        message = f"No resource `{addr}` in the state"
        message += f"; {hint}" if hint else "; run `specdsl state list` to see every address"
        raise UnknownAddress(message)
    kind, record = resources[addr]
    lines = [f"# {addr}"]
    if kind == "run" and dict(state.results).get(record.identity) == record.id:
        lines.append(f"# the current result of step {record.step} ({record.identity})")
    doc: dict[str, Any] = encode_record(record)
    if kind == "baseline":
        doc["promotions"] = [encode_record(p) for p in state.promotions_of(record.track)]
    lines.append(tomli_w.dumps(doc).rstrip("\n"))
    return "\n".join(lines) + "\n"


def _error(err: StateError) -> tuple[int, str]:
    return (6 if err.conflict else 1), str(err) + "\n"


def cmd_state_list(state_dir: Path) -> tuple[int, str]:
    """`specdsl state list`."""
    try:
        state = load_state(state_dir)
    except StateError as err:
        return _error(err)
    if state is None:
        return 0, ""
    return 0, state_list(state)


def cmd_state_show(state_dir: Path, addr: str) -> tuple[int, str]:
    """`specdsl state show ADDR`."""
    try:
        state = load_state(state_dir)
        return 0, state_show(state, addr)
    except StateError as err:
        return _error(err)
    except UnknownAddress as err:
        where = state_path(state_dir)
        return 1, f"{where}: error: {err}\n"


def cmd_force_unlock(state_dir: Path, lock_id: str) -> tuple[int, str]:
    """`specdsl force-unlock ID`."""
    try:
        holder = force_unlock(state_dir, lock_id)
    except StateError as err:
        return _error(err)
    return 0, (f"Removed the lock {holder.id} of {holder.operation!r} "
               f"(pid {holder.pid} on {holder.host}, since {holder.created}).\n")
