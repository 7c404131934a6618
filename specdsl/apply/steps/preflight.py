"""preflight: the host is there and has what the plan declares (GPUs)."""

from __future__ import annotations

from pathlib import Path

from specdsl.apply.context import StepContext, StepFailed
from specdsl.apply.outcome import Outcome
from specdsl.apply.steps.common import completed, planned_reuse
from specdsl.hosts import Host, HostError
from specdsl.plan.model import Action

NVIDIA_SMI_TIMEOUT_S = 30


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
        problem = check_host(host, decl)
        if problem:
            raise StepFailed(problem)
        return completed(ctx, "host ready")


def check_host(host: Host, decl) -> str | None:
    """None when `host` can run what `decl` declares, else what is wrong."""
    if not decl.gpus:
        return None
    smi = host.which("nvidia-smi")
    if smi is None:
        return f"host {decl.name} declares gpus = {decl.gpus} but nvidia-smi is not installed there"
    with host.temp_dir() as tmp:
        log = Path(tmp) / "nvidia-smi.log"
        result = host.run([smi, "-L"], log_path=log, timeout=NVIDIA_SMI_TIMEOUT_S, framed=False)
        if result.timed_out:
            return f"nvidia-smi did not answer within {NVIDIA_SMI_TIMEOUT_S}s"
        listing = host.read_text(log)
    found = sum(1 for line in listing.splitlines() if line.startswith("GPU "))
    if found < decl.gpus:
        return f"host {decl.name} declares gpus = {decl.gpus} but nvidia-smi lists {found}"
    return None
