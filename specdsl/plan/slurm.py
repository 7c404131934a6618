"""Which steps of a plan go to Slurm, as which jobs, with what resources.

Pure: the same grouping is what `plan` shows and what apply submits. The
steps of experiments whose host has `slurm` (its preflight aside, which
runs here, before anything is submitted) are split into jobs: a launch
with its benchmarks and its teardown is one chain; chains joined by a
step (a paired benchmark that alternates a baseline's and a candidate's
servers, a candidate measured after its baseline) are one job, so both
arms share one allocation; each job also carries the provision steps its
chains need (an environment provisioned by several jobs is built by the
first and reused by the others, under the environment's lock on the
shared filesystem). Checks and promotions stay on this machine: they read
what the jobs recorded.
"""

from __future__ import annotations

from typing import Any

import attrs

from specdsl.plan.model import Action, Plan

WORKING = (Action.CREATE, Action.REPLACE, Action.RUN)
CHAIN_KINDS = ("provision", "launch", "benchmark", "teardown")


@attrs.frozen
class SlurmJob:
    """One batch job: `name` (its first launch or benchmark, without the
    kind), the host declaration, and the addresses it walks, in graph order."""

    name: str
    host: Any
    steps: tuple[str, ...]
    preflight: str | None = None


def host_of(graph, addr: str):
    """The host declaration a step runs on, or None (checks, promotions)."""
    step = graph.steps[addr]
    payload = step.payload
    if "host" in payload:
        return payload["host"]
    if step.kind == "benchmark":
        return payload["experiment"].host
    if step.kind == "teardown":
        return graph.steps[payload["launch"]].payload["host"]
    return None


def on_slurm(graph, addr: str) -> bool:
    host = host_of(graph, addr)
    return host is not None and getattr(host, "slurm", None) is not None


def slurm_jobs(graph, plan: Plan) -> list[SlurmJob]:
    """The jobs the plan's Slurm-hosted steps make (see the module doc), in
    graph order; a job whose steps the plan only reuses is left out."""
    planned = {c.addr: c for c in plan.changes if c.addr in graph.steps}
    order = {a: i for i, a in enumerate(graph.order())}
    mine = [a for a in planned if graph.steps[a].kind in CHAIN_KINDS and on_slurm(graph, a)]
    parent = {a: a for a in mine}

    def find(a: str) -> str:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    def join(a: str, b: str) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb, key=order.get)] = min(ra, rb, key=order.get)

    chain = [a for a in mine if graph.steps[a].kind != "provision"]
    for addr in chain:
        step = graph.steps[addr]
        for dep in step.deps + step.after:
            if dep in parent and graph.steps[dep].kind != "provision":
                join(addr, dep)
    groups: dict[str, list[str]] = {}
    for addr in chain:
        groups.setdefault(find(addr), []).append(addr)
    for addr in mine:  # a provision no chain of this plan needs is a job of its own
        if graph.steps[addr].kind == "provision" and not any(
                addr in graph.upstream(c) for c in chain):
            groups.setdefault(addr, []).append(addr)
    jobs = []
    for root, members in groups.items():
        steps = set(members)
        for addr in members:
            steps |= {u for u in graph.upstream(addr) if u in parent and graph.steps[u].kind == "provision"}
        if not any(planned[a].action in WORKING for a in steps):
            continue
        ordered = tuple(sorted(steps, key=order.get))
        host = host_of(graph, ordered[0])
        pre = next((u for u in sorted(graph.upstream(ordered[0]), key=order.get) if graph.steps[u].kind == "preflight"), None)
        jobs.append(SlurmJob(root.split(".", 1)[1], host, ordered, pre))
    return sorted(jobs, key=lambda j: order[j.steps[0]] if j.steps[0] in order else 0)


def resources(slurm) -> list[str]:
    """The sbatch options of a host's `slurm` settings (what plan shows and
    apply submits with)."""
    out = []
    if slurm.partition:
        out.append(f"--partition={slurm.partition}")
    if slurm.account:
        out.append(f"--account={slurm.account}")
    if slurm.gres:
        out.append(f"--gres={slurm.gres}")
    if slurm.time is not None:
        out.append(f"--time={time_text(slurm.time)}")
    if slurm.exclusive:
        out.append("--exclusive")
    if slurm.cpus:
        out.append(f"--cpus-per-task={slurm.cpus}")
    if slurm.mem:
        out.append(f"--mem={slurm.mem}")
    return out + list(slurm.sbatch_args)


def time_text(seconds: float) -> str:
    """Slurm's D-HH:MM:SS, rounded up to the minute Slurm counts in."""
    minutes = max(1, int(-(-seconds // 60)))
    days, rest = divmod(minutes, 24 * 60)
    hours, mins = divmod(rest, 60)
    return f"{days}-{hours:02d}:{mins:02d}:00" if days else f"{hours:02d}:{mins:02d}:00"


def render_jobs(graph, plan: Plan) -> str:
    """The plan's Slurm section: one line per job, its steps and options;
    "" when nothing goes to Slurm."""
    jobs = slurm_jobs(graph, plan)
    if not jobs:
        return ""
    lines = ["", "Slurm jobs (one per chain, submitted with sbatch):"]
    by_host: dict[str, int] = {}
    for job in jobs:
        by_host[job.host.name] = by_host.get(job.host.name, 0) + 1
        opts = " ".join(resources(job.host.slurm)) or "(the cluster's defaults)"
        lines.append(f"  job {job.name} on host {job.host.name}: {opts}")
        lines.append("    " + ", ".join(job.steps))
    for name, n in sorted(by_host.items()):
        host = next(j.host for j in jobs if j.host.name == name)
        where = f"on the login node {host.ssh}" if getattr(host, "ssh", None) else "from this machine"
        lines.append(f"  host {name}: {n} job(s), at most {host.slurm.max_parallel} at once, submitted {where}")
    return "\n".join(lines) + "\n"
