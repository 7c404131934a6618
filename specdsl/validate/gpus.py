"""GPU needs against what hosts declare: a server that needs more GPUs than
its host offers can never start, so it is an error at validate (and plan)
time, located at the experiment's `server`, not a failure mid-apply.
Also: a server asking for GPUs on a host that declares none, and a
`CUDA_VISIBLE_DEVICES` of the spec's own on a host whose GPUs specdsl
hands out (it sets that variable itself). On a Slurm host, the GPUs a job
gets are its `gres` (`"gpu:8"`, `"gpu:h200:8"`; `"gpu"` is one): a server
that needs more is the same error, located at the same place."""

from __future__ import annotations

from typing import Callable, Sequence

from specdsl.diag import Diagnostic, Span
from specdsl.model import config
from specdsl.model.gpus import WHOLE, host_devices, server_need

VISIBLE = "CUDA_VISIBLE_DEVICES"


def _gres_gpus(host: config.Host) -> int | None:
    """The GPUs one Slurm job of `host` asks for through `gres` (`gpu:8`,
    `gpu:h200:8`, `gpu` is 1), or None: not a Slurm host, no gres, or a gres
    that names other resources only."""
    gres = host.slurm.gres if host.slurm is not None else None
    if not gres:
        return None
    total = None
    for item in gres.split(","):
        parts = item.strip().split(":")
        if parts[0] != "gpu":
            continue
        count = int(parts[-1]) if len(parts) > 1 and parts[-1].isdigit() else 1
        total = (total or 0) + count
    return total


def check_gpus(experiments: Sequence[config.Experiment], diags: list[Diagnostic],
               span_of: Callable[[config.Experiment], Span | None]) -> None:
    """One diagnostic per experiment block and problem (a sweep of many
    cells gives one line), at `span_of(exp)` (its `server = ...`)."""
    seen: set[tuple[str, str]] = set()

    def report(exp: config.Experiment, summary: str, detail: str) -> None:
        if (exp.group, summary) not in seen:
            seen.add((exp.group, summary))
            diags.append(Diagnostic.error(summary, span_of(exp), detail))

    for exp in experiments:
        host, server = exp.host, exp.server
        devices = host_devices(host)
        need = server_need(server)
        gres = _gres_gpus(host)
        if gres is not None and need is not WHOLE and need > gres:
            report(exp, f"Server `{server.name}` needs {need} GPUs but a Slurm job of host `{host.name}` gets {gres}",
                   f"the job asks for `gres = \"{host.slurm.gres}\"`; {need} comes from "
                   f"{'its `gpus`' if server.gpus is not None else 'its parallel sizes in `args`'} (docs/gpus.md): "
                   f"ask for `gres = \"gpu:{need}\"` or lower the server's need")
        if not devices:
            if server.gpus:
                report(exp, f"Server `{server.name}` needs {server.gpus} GPU{'s' if server.gpus != 1 else ''} "
                       f"but host `{host.name}` declares none",
                       f"declare the host's GPUs (`host \"{host.name}\" {{ gpus = {server.gpus} }}`) so specdsl "
                       "can give the server its own, or leave `gpus` out of the server")
            continue
        if need is not WHOLE and need > len(devices):
            why = "its `gpus`" if server.gpus is not None else "its parallel sizes in `args`"
            report(exp, f"Server `{server.name}` needs {need} GPUs but host `{host.name}` has {len(devices)}",
                   f"{need} comes from {why} (docs/gpus.md): lower it, or declare more GPUs on the host")
        for where, env in (("server", server.env), ("stack", exp.stack.env)):
            if any(k == VISIBLE for k, _ in env):
                report(exp, f"`{VISIBLE}` is set by specdsl on host `{host.name}`",
                       f"remove it from the {where}'s `env`: specdsl gives each server its own GPUs of the host's "
                       f"`gpus` and sets {VISIBLE} to them; list the devices to use on the host (`gpus = [0, 1]`)")
