"""Servers the state records that no apply is looking after.

An apply killed (`kill -9`, a lost machine) leaves its servers running and
recorded; one may since have died, frozen, or been dropped from the spec.
`survey` looks at every recorded server on its host (is its process
group alive, does it answer), and `stop_stale` stops every one a walk will
not reuse, dropping a record only once its process group is gone. A server
that cannot be stopped, or whose host cannot be reached, keeps its record
and is reported. `for_plan` is what `specdsl plan` shows of them: what
apply will do to each (`action`: stop, drop, or keep and report).
"""

from __future__ import annotations

from typing import Any

import attrs

from specdsl.apply.refresh import address_now, server_answers
from specdsl.apply.state_writer import StateWriter
from specdsl.apply.steps.launch import STALE_GRACE_S, record_process, stop_recorded
from specdsl.hosts import HostError, HostRegistry, host_key
from specdsl.state import ServerRecord, State

ANSWERING, NOT_ANSWERING, DEAD, UNREACHABLE = "answering", "alive, not answering", "not running", "host not reachable"
NOT_CHECKED = "not checked (--no-refresh)"
STOP, DROP, KEEP = "stop", "drop", "keep"  # what apply does to a stale server: `action`


@attrs.frozen
class Seen:
    """A recorded server and what its host says of it now."""

    record: ServerRecord
    condition: str  # ANSWERING, NOT_ANSWERING, DEAD or UNREACHABLE
    host: Any = attrs.field(default=None, eq=False)
    why: str = ""  # why it is to be stopped ("" when a walk reuses it)

    @property
    def addr(self) -> str:
        return f"server.{self.record.addr}"

    def line(self) -> str:
        r = self.record
        where = f"pid {r.pid}, process group {r.pgid}, port {r.port} on {r.host}"
        spec = f", from {r.spec}" if r.spec else ""
        return f"{self.addr}  ({where}; recorded {r.status}{spec}): {self.condition}"

    @property
    def action(self) -> str:
        """What apply does to it, when stale: stop it, drop its record (gone),
        or keep the record and report it (its host cannot be reached)."""
        return DROP if self.condition == DEAD else KEEP if self.condition == UNREACHABLE else STOP

    def as_json(self) -> dict:
        r = self.record
        return {"addr": self.addr, "identity": r.identity, "host": r.host, "pid": r.pid, "pgid": r.pgid, "port": r.port,
                "status": r.status, "spec": r.spec, "condition": self.condition, "action": self.action, "why": self.why}


def host_for(record: ServerRecord, registry: HostRegistry, decls: dict[str, Any]):
    """The host a record names (its physical key, or a host block name of an
    older record), or None when this spec does not declare it."""
    if record.host == "local":
        return registry.get(None)
    decl = decls.get(record.host)
    if decl is None:
        decl = next((d for d in decls.values() if host_key(d) == record.host), None)
    if decl is None:
        return None
    try:
        return registry.get(decl)
    except HostError:
        return None


def survey(state: State | None, registry: HostRegistry, decls: dict[str, Any] | None = None,
           reused: frozenset[str] | set[str] = frozenset()) -> list[Seen]:
    """Every server `state` records, with its condition now. `reused`: the
    identities a walk will reuse (recorded, answering, still in the spec);
    every other one gets a `why` (to be stopped, or its dead record dropped)."""
    out = []
    for record in (state.servers if state is not None else ()):
        host = host_for(record, registry, decls or {})
        if host is None:
            out.append(Seen(record, UNREACHABLE, None, f"its host {record.host} is not declared in this spec"))
            continue
        try:
            alive = host.alive(record_process(record))
            url = address_now(host, record) if alive else ""  # on a remote host: through this apply's forward
        except HostError as exc:
            out.append(Seen(record, UNREACHABLE, host, f"its host could not be asked: {exc}"))
            continue
        if not alive:
            # the leader gone: what is left of its group is stopped too
            out.append(Seen(record, DEAD, host, "its process is gone: the record is dropped"))
        elif not server_answers(url):
            out.append(Seen(record, NOT_ANSWERING, host, "frozen or never became ready: it is stopped (TERM, then KILL)"))
        elif record.identity not in reused:
            out.append(Seen(record, ANSWERING, host, "no apply uses it now: it is stopped"))
        else:
            out.append(Seen(record, ANSWERING, host))
    return out


def for_plan(state: State | None, reused: set[str], *, refresh: bool, registry: HostRegistry | None = None,
             decls: dict[str, Any] | None = None) -> list[Seen]:
    """The recorded servers apply will stop, drop or report before its walk,
    as `plan` shows them. With `refresh` each one's host is asked (as apply
    asks it); without, nothing is contacted: state is taken as true, so a
    record the plan reuses is reused, and every other one is to be stopped
    (or its record dropped, if it turns out to be gone)."""
    if state is None or not state.servers:
        return []
    if refresh:
        return stale(survey(state, registry, decls, reused))
    return [Seen(r, NOT_CHECKED, None, "no apply uses it now: it is stopped (its record dropped if it is gone)")
            for r in state.servers if r.identity not in reused]


def stale(seen: list[Seen]) -> list[Seen]:
    """The surveyed servers to stop or drop (every one with a `why`)."""
    return [s for s in seen if s.why]


def stop_stale(writer: StateWriter, seen: list[Seen], *, grace_s: float = STALE_GRACE_S) -> list[str]:
    """Stop each stale server and drop its record once its group is gone.
    Returns one line for each that could not be (its record kept)."""
    problems = []
    for s in stale(seen):
        if s.host is None:
            problems.append(f"{s.addr}: {s.why}; its record is kept (stop it on {s.record.host}: "
                            f"`kill -TERM -{s.record.pgid}`)")
            continue
        problem = stop_recorded(writer, s.record, s.host, grace_s=grace_s)
        if problem:
            problems.append(problem)
    return problems
