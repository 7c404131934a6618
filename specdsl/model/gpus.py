"""GPUs: which devices a host offers and how many a server needs.

A host block declares its GPUs (`gpus = 8`, or the device ids
`gpus = [0, 2, 5]`); a server declares what it needs (`gpus = 2`), or it
is read from its args with the engines' flag tables (`specdsl.facts`,
matched by destination, so every spelling and alias counts) by the
engine's own rule (`gpus` of its module in specdsl/facts/engines: vLLM's
and SGLang's parallel sizes, 1 for `transformers serve`, the whole machine
for `command`).

Pure: no I/O. Used by validate (a server needing more GPUs than its host
has is an error), graph/plan (plan shows each server's GPUs) and apply
(the scheduler hands out disjoint GPU sets).
"""

from __future__ import annotations

import functools

from specdsl.facts import engine_flags
from specdsl.facts.engines import engine
from specdsl.model import config

WHOLE = None  # a need of the whole machine


def host_devices(host: config.Host) -> tuple[int, ...]:
    """The device ids specdsl may use on `host` (() for a host without GPUs)."""
    return host.gpu_ids or tuple(range(host.gpus))


def _arg_values(engine_name: str, args) -> dict[str, object]:
    """A server's args by destination (`tp-size` and `tensor-parallel-size`
    are both `tensor_parallel_size`); unknown flags are left out."""
    flags = engine_flags(engine_name)
    out: dict[str, object] = {}
    for key, value in args:
        info = flags.get(key)
        if info is not None:
            out[info.dest] = value
    return out


def server_need(server: config.Server) -> int | None:
    """How many GPUs `server` uses: its `gpus`, else what its args say;
    `WHOLE` (None) for a server whose needs specdsl cannot read (the
    `command` engine without `gpus`)."""
    if server.gpus is not None:
        return server.gpus
    try:
        return _need_of_args(server.engine, server.args)
    except TypeError:  # an unhashable value among the args: no memo
        return engine(server.engine).gpus(_arg_values(server.engine, server.args))


@functools.lru_cache(maxsize=4096)
def _need_of_args(engine_name: str, args: tuple) -> int | None:
    """A need by the engine and args alone (pure): validate and plan ask it
    of every cell's server, several times each."""
    return engine(engine_name).gpus(_arg_values(engine_name, args))


def need_text(need: int | None, host: config.Host) -> str:
    """`2 of 8 GPUs`, `all 8 GPUs`, ... for plan and messages."""
    total = len(host_devices(host))
    if need is WHOLE:
        return f"all {total} GPUs" if total else "the whole machine"
    if need == 0:
        return "no GPU"
    return f"{need} of {total} GPU{'s' if total != 1 else ''}"


def plan_note(host: config.Host, servers) -> str:
    """What plan says of a server's GPUs on a host that declares them
    (`2 of 8 GPUs`; a paired benchmark's arms share theirs), else ""."""
    if not host_devices(host):
        return ""
    needs = [server_need(s) for s in servers]
    if len(needs) == 2 and all(n is not WHOLE and n > 0 for n in needs) and sum(needs) <= len(host_devices(host)):
        return f"{need_text(sum(needs), host)}, side by side ({needs[0]} and {needs[1]})"
    need = WHOLE if any(n is WHOLE for n in needs) else max(needs)
    return need_text(need, host)
