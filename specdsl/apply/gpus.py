"""GPUs during a walk: what a server session claims, and the server pinned
to the GPUs the scheduler gave it.

A step that opens a session (a launch, a paired benchmark) claims GPUs of
its physical host: `Claim(devices, need)`, the host's device ids and how
many the server needs (`specdsl.model.gpus`). The scheduler gives it `need`
free ones (disjoint from every other open session's) and records them in
`walk.gpus[opener]`; the server then runs with `CUDA_VISIBLE_DEVICES` set
to them, after a check that nothing else holds them (`check_idle`). A host
without declared GPUs has no devices: its servers hold the whole machine,
one at a time, as before.

Each benchmark run on a host whose preflight had an nvidia-smi answer
takes a snapshot of its GPUs at its start and its end (`snapshot`, one
query each; nothing on a host without GPUs): the run record keeps them
(`gpus_start`, `gpus_end`) and a GPU throttled or holding another job's
process at either end is a warning naming the run (`run_gpu_facts`).
"""

from __future__ import annotations

import json
import time

import attrs

from specdsl.apply.context import StepFailed, Walk
from specdsl.hosts import gpus as smi
from specdsl.hosts import host_key
from specdsl.model.gpus import WHOLE, host_devices, server_need

VISIBLE = "CUDA_VISIBLE_DEVICES"
# A server stopped a moment ago may still be releasing its memory: how long
# a launch waits for its GPUs to read idle before it gives up.
IDLE_WAIT_S = 15.0
_IDLE_POLL_S = 1.0


@attrs.frozen
class Claim:
    """`devices`: the machine's GPUs offered (() when it declares none);
    `need`: how many of them; `exclusive`: the session holds the whole
    machine (a host without GPUs, a server needing all of them or none)."""

    devices: tuple[int, ...]
    need: int
    exclusive: bool


def claim(walk: Walk, host, servers) -> Claim:
    """The claim of a session on `host` (a host block) running `servers`
    (one, or the two arms of a paired benchmark, which take turns on the
    same GPUs: the larger need counts). GPUs that servers of an earlier
    apply hold (preflight found them) are not offered."""
    held = walk.gpus_held.get(host_key(host), frozenset())
    devices = tuple(d for d in host_devices(host) if d not in held)
    needs = [server_need(s) for s in servers]
    if not devices:
        return Claim((), 0, exclusive=True)
    if any(n is WHOLE or n > len(devices) for n in needs):
        # (validate refuses a need over the host's count; kept servers may hold the rest)
        return Claim(devices, len(devices), exclusive=True)
    if len(needs) == 2 and all(n > 0 for n in needs) and sum(needs) <= len(devices):
        return Claim(devices, sum(needs), exclusive=False)  # both arms up at once, on disjoint GPUs (`split`)
    most = max(needs)
    return Claim(devices, most, exclusive=most == 0)  # a server using no GPU runs alone, with none visible


def split(walk: Walk, opener: str, decl, servers) -> list[tuple[int, ...]] | None:
    """The GPUs of each of a paired benchmark's arms (the baseline and one
    candidate, or several candidates sharing the baseline's launches) when
    all fit at once on what the session `opener` was given (disjoint, in
    the order of `servers`), or None when they must take turns. A host that
    declares no GPUs runs them side by side, with none visible."""
    if not host_devices(decl):
        return [() for _ in servers]
    ids = tuple(walk.gpus.get(opener, ()))
    needs = [server_need(s) for s in servers]
    if any(n is WHOLE or n <= 0 for n in needs) or sum(needs) > len(ids):
        return None
    out, at = [], 0
    for n in needs:
        out.append(ids[at:at + n])
        at += n
    return out


def side_by_side(walk: Walk) -> int:
    """The most servers this walk could run at once beyond one per machine:
    the declared GPUs of its machines (each machine counted once), less one each."""
    per_machine: dict[str, int] = {}
    for step in walk.graph.steps.values():
        if step.kind == "preflight":
            decl = step.payload["host"]
            per_machine[host_key(decl)] = max(per_machine.get(host_key(decl), 0), len(host_devices(decl)))
    return sum(max(0, n - 1) for n in per_machine.values())


def claim_of(walk: Walk, step) -> Claim:
    """The claim of a session-opening step, from its payload: a launch's
    server, or both arms of a paired benchmark. A server already up (kept
    by an earlier apply, reused as it is) takes no GPU and blocks nothing:
    its own GPUs are held since it started (preflight saw them)."""
    payload = step.payload
    if "paired" in payload:
        return claim(walk, payload["host"], [payload["paired"].server, payload["experiment"].server])
    if walk.running(step.addr):
        return Claim((), 0, exclusive=False)
    return claim(walk, payload["host"], [payload["server"]])


def pin(walk: Walk, opener: str, host, decl, server, stop=None):
    """`server` with CUDA_VISIBLE_DEVICES set to the GPUs the scheduler gave
    the session `opener` (unchanged on a host without declared GPUs), after
    checking they are idle. StepFailed when they are not (unless the host
    allows busy GPUs)."""
    if not host_devices(decl):
        return server
    return pin_ids(host, decl, server, walk.gpus.get(opener, ()), stop)


def pin_ids(host, decl, server, ids, stop=None):
    """`server` with CUDA_VISIBLE_DEVICES set to `ids` (unchanged on a host
    without declared GPUs), after checking they are idle (see `pin`)."""
    if not host_devices(decl):
        return server
    if ids:
        problem = check_idle(host, decl, ids, stop)
        if problem:
            raise StepFailed(problem)
    value = ",".join(str(i) for i in ids)
    env = tuple((k, v) for k, v in server.env if k != VISIBLE) + ((VISIBLE, value),)
    return attrs.evolve(server, env=tuple(sorted(env)))


def visible(walk: Walk, opener: str, decl) -> dict[str, str]:
    """What a run record keeps of the GPUs `opener` used ({} without any)."""
    if not host_devices(decl):
        return {}
    return {VISIBLE: ",".join(str(i) for i in walk.gpus.get(opener, ()))}


def check_idle(host, decl, ids, stop=None, wait_s: float = IDLE_WAIT_S) -> str | None:
    """None when the GPUs `ids` of `host` hold no process and no memory
    (waiting up to `wait_s` for a stopped server's memory to be released),
    else why not. A host with `allow_busy_gpus` is not asked."""
    if decl.allow_busy_gpus:
        return None
    deadline = time.monotonic() + wait_s
    while True:
        try:
            report = smi.query(host)
        except smi.GpuQueryError as exc:
            return f"host {decl.name}: {exc}"
        if report is None:
            return f"host {decl.name} declares gpus but nvidia-smi is not installed there"
        found = report.by_index()
        busy = []
        for i in ids:
            gpu = found.get(i)
            if gpu is None:
                return f"host {decl.name}: nvidia-smi does not list GPU {i}"
            why = gpu.busy()
            if why:
                busy.append(f"GPU {i}: {why}")
        if not busy:
            return None
        if time.monotonic() >= deadline or (stop is not None and stop.is_set()):
            return (f"host {decl.name}: the GPUs given to this server are busy ({'; '.join(busy)}); numbers measured "
                    "beside another job are wrong: free them, or set `allow_busy_gpus = true` on the host")
        time.sleep(_IDLE_POLL_S)


# -- the GPUs of one benchmark run, at its start and its end ----------------------
START, END = "gpus_start", "gpus_end"  # the keys of a run record's `effective` (JSON lists)


def snapshots_wanted(walk: Walk, decl) -> bool:
    """Whether runs on `decl`'s machine take GPU snapshots: its preflight
    asked nvidia-smi in this walk and had an answer (a host without GPUs,
    or without nvidia-smi, is asked nothing more)."""
    return host_key(decl) in walk.gpus_held


def snapshot(walk: Walk, host, decl, opener: str, ours: set[int] = frozenset()) -> dict | None:
    """One nvidia-smi query of `host`, narrowed to the GPUs the session
    `opener` was given (all the host's when it declares none): each GPU's
    facts (`Gpu.to_json`) with `others`, the count of its compute processes
    not in `ours` (the run's own server). None on a host not asked
    (`snapshots_wanted`); {"error": why} when nvidia-smi failed."""
    if not snapshots_wanted(walk, decl):
        return None
    try:
        report = smi.query(host)
    except smi.GpuQueryError as exc:
        return {"error": str(exc)}
    if report is None:
        return {"error": "nvidia-smi is not installed"}
    ids = walk.gpus.get(opener, ()) if host_devices(decl) else tuple(g.index for g in report.gpus)
    found = report.by_index()
    gpus = []
    for i in ids:
        if i in found:
            g = found[i]
            gpus.append(g.to_json() | {"others": sum(1 for p in g.processes if p.pid not in ours)})
    return {"gpus": gpus}


def run_gpu_facts(addr: str, start: dict | None, end: dict | None) -> tuple[dict[str, str], list[str]]:
    """(entries of the run record's `effective`, warnings naming the run)
    of a run's two snapshots: a GPU throttled (heat, the hardware, the power
    brake) or holding another process at the start or the end of the run."""
    if start is None and end is None:
        return {}, []
    effective: dict[str, str] = {}
    warnings: list[str] = []
    for key, when, snap in ((START, "start", start), (END, "end", end)):
        if snap is None:
            continue
        if "error" in snap:
            warnings.append(f"{addr}: no GPU snapshot at the run's {when}: {snap['error']}")
            continue
        effective[key] = json.dumps(snap["gpus"], sort_keys=True)
        for g in snap["gpus"]:
            slow = smi.Gpu(g["index"], "", "", "", None, None, None, None, None,
                           _mask(g.get("throttle_mask"))).throttled()
            if slow:
                warnings.append(f"{addr}: GPU {g['index']} was throttled at the run's {when} ({', '.join(slow)}): "
                                "its numbers are slower than the GPU's")
            if g.get("others"):
                pids = ", ".join(str(p["pid"]) for p in g.get("processes", ()))
                warnings.append(f"{addr}: GPU {g['index']} had another process at the run's {when} "
                                f"({g['others']} not of this run; pids on it: {pids}): its numbers were measured "
                                "beside another job")
    return effective, warnings


def _mask(text) -> int | None:
    try:
        return int(str(text), 0)
    except ValueError:
        return None


def server_pids(walk: Walk, host, decl, handle) -> set[int]:
    """The processes of a run's own server (its process group), asked only
    where snapshots are taken: its GPU processes are not another job's."""
    if not snapshots_wanted(walk, decl):
        return set()
    try:
        return set(host.group_pids(handle.pgid))
    except Exception:  # a server that is gone holds nothing; the snapshot says what is there
        return set()
