"""preflight: the host is there and has what the plan declares (GPUs).

On a host with `nvidia-smi` (asked through the host, so over SSH too):
every declared GPU is listed, none is busy (a compute process or memory in
use that is not a server of ours kept from an earlier apply) unless the
host block says `allow_busy_gpus = true`, and none is throttled (heat,
hardware slowdown, power brake). The host facts (GPU model, driver, each
GPU's clocks, memory, throttle mask and processes) are written to
`host.json` in the preflight's run folder and, for a preflight that
passed, into its run record's `effective` (`gpu_model`, `driver_version`,
`gpu_count`, `gpus` as JSON): state keeps them for diagnosis. Without
`nvidia-smi` (a CPU host) preflight says so and goes on when the host
declares no GPUs.
"""

from __future__ import annotations

import json

from specdsl.apply.context import StepContext, StepFailed
from specdsl.apply.outcome import Outcome
from specdsl.apply.steps.common import completed, planned_reuse
from specdsl.hosts import Host, HostError, host_key
from specdsl.hosts import gpus as smi
from specdsl.model.gpus import host_devices
from specdsl.plan.model import Action



class Preflight:
    def run(self, ctx: StepContext) -> Outcome:
        if ctx.walk.action(ctx.addr) is not Action.RUN:
            return planned_reuse(ctx)
        decl = ctx.step.payload["host"]
        ctx.begin()
        try:
            host = ctx.host
        except HostError as exc:
            raise StepFailed(str(exc)) from None
        ours = our_pids(ctx, host)
        try:
            report = smi.query(host)
        except smi.GpuQueryError as exc:
            if decl.gpus:
                raise StepFailed(f"host {decl.name}: {exc}") from None
            ctx.walk.result.warn(f"{ctx.addr}: no GPU facts recorded: {exc}")  # no GPU asked for: go on
            report = None
        if report is None and not decl.gpus:
            return completed(ctx, "host ready (no GPU asked for; no nvidia-smi answer: a CPU host)")
        folder = ctx.new_run()
        facts = report.facts() if report is not None else {"nvidia_smi": "not installed"}
        (folder / "host.json").write_text(json.dumps(facts, indent=1, sort_keys=True) + "\n")
        problem, held = check_host(host, decl, report, ours)
        if problem:
            raise StepFailed(problem, str(folder / "host.json"))
        with ctx.walk.mutex:
            ctx.walk.gpus_held[host_key(decl)] = frozenset(held)
        recorded = {k: v for k, v in facts.items() if k != "gpus"}
        recorded["gpus"] = json.dumps(facts.get("gpus", []), sort_keys=True)
        run = ctx.writer.run_record(ctx.step, ctx.run_id, folder, ctx.started, "completed", effective=recorded)
        ctx.writer.step_done(ctx.step, run)
        what = f"{len(host_devices(decl))} idle GPUs" if decl.gpus else "no GPUs asked for"
        model = f" ({facts['gpu_model']}, driver {facts['driver_version']})" if report is not None and report.gpus else ""
        return completed(ctx, f"host ready: {what}{model}", str(folder / "host.json"))


def our_pids(ctx: StepContext, host: Host) -> set[int]:
    """The processes of servers that state records on this machine (kept
    running by an earlier apply): their GPUs are ours, not busy."""
    pids: set[int] = set()
    for record in ctx.writer.state.servers:
        if record.host == host.key:
            try:
                pids.update(host.group_pids(record.pgid))
            except Exception:  # a server that is gone holds nothing
                continue
    return pids


def check_host(host: Host, decl, report: smi.GpuReport | None, ours: set[int] = frozenset()) -> tuple[str | None, set[int]]:
    """(what is wrong or None, the declared GPUs our kept servers hold)."""
    if not decl.gpus:
        return None, set()
    if report is None:
        return f"host {decl.name} declares gpus = {decl.gpus} but nvidia-smi is not installed there", set()
    found = report.by_index()
    wanted = host_devices(decl)
    missing = [i for i in wanted if i not in found]
    if missing:
        listed = ", ".join(str(i) for i in sorted(found)) or "none"
        return (f"host {decl.name} declares GPUs {', '.join(map(str, wanted))} but nvidia-smi lists "
                f"{len(found)} (ids {listed}): GPU {', '.join(map(str, missing))} not found"), set()
    busy, throttled, held = [], [], set()
    for i in wanted:
        gpu = found[i]
        if ours.intersection(p.pid for p in gpu.processes):
            held.add(i)
        why = gpu.busy(ours)
        if why:
            busy.append(f"GPU {i}: {why}")
        slow = gpu.throttled()
        if slow:
            throttled.append(f"GPU {i}: {', '.join(slow)}")
    if busy and not decl.allow_busy_gpus:
        return (f"host {decl.name}: GPUs busy ({'; '.join(busy)}); numbers measured beside another job are wrong: "
                "free them, or set `allow_busy_gpus = true` on the host to measure anyway"), held
    if throttled:
        return f"host {decl.name}: GPUs throttled ({'; '.join(throttled)}): let them cool or fix the machine first", held
    return None, held
