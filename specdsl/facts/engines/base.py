"""`Engine`: what specdsl knows of one serving engine as pure data, and
the helpers its rules share. One module per engine beside this one holds
its `ENGINE`; nothing here does I/O (a flag table or a pattern set is a
file name, read by specdsl.facts when first asked for)."""

from __future__ import annotations

from typing import Callable

import attrs

from specdsl.facts.client import BASIC, ClientQuirks


@attrs.frozen
class Engine:
    """One engine's facts.

    `label` is how messages name it (`SGLang 0.5.17`); `distributions` the
    packages that provide it (a stack pins its release with one of them).
    `flag_tables`, `pattern_sets` and `jit_sets` are (release, file in
    specdsl/facts), oldest first (`jit_sets`: the lines that mean a compile,
    an autotune or a CUDA graph capture); `default_release` the table of a stack that pins none.
    `effective_extra`: what the engine reports beside its resolved
    arguments (the flag table's dests). `quirks`: what its
    OpenAI-compatible API accepts from the benchmark client
    (specdsl.facts.client).

    `managed`: the flags specdsl sets itself, each with the server
    attribute to write instead (None: specdsl binds the server to its host);
    validation refuses them in `args`, diagnosis leaves them out of a
    command line it reads back. `started_by(argv)`: whether a recorded
    command line starts this engine (diagnosis without the spec).

    `gpus(args)`: how many GPUs a server of this engine uses, from its args
    keyed by flag destination (`tensor_parallel_size`, whatever spelling
    the spec used); None when specdsl cannot know (the whole machine).
    specdsl.model.gpus asks it for a server that does not say `gpus`.

    What its log says (specdsl.servers.logscan): `keyed` maps a log
    pattern's regex text (as in its pattern sets) to the effective keys its
    groups set (None skips a group); `default_backend` lists patterns that
    mean "the server chose its attention backend itself"; `kv_lists`
    patterns whose last group is a `k=v, ...` dump.

    For diagnosis (specdsl.diagnose, docs/diagnose.md): `impact` maps the
    effective keys known to move this engine's performance to why, in one
    line; `impact_packages` the same for distributions (kernels, the engine
    itself). `volatile` names the effective keys whose value changes
    between any two launches of one configuration (ports, seeds).

    Beside its API (the load generator's `ServerSide`): `cache_reset` is
    the (method, path) that empties its prefix cache (None: none), with
    `cache_reset_hint` for a server that answers 404 there; `counters` and
    `gauges` map the client's vocabulary of server-side quantities to its
    Prometheus metrics at `metrics_path`, with `metrics_hint` (the switch
    that serves them) for a server that answers 404 there."""

    name: str
    label: str
    distributions: tuple[str, ...] = ()
    flag_tables: tuple[tuple[str, str], ...] = ()
    default_release: str | None = None
    pattern_sets: tuple[tuple[str, str], ...] = ()
    jit_sets: tuple[tuple[str, str], ...] = ()
    effective_extra: tuple[str, ...] | None = None
    quirks: ClientQuirks = BASIC
    managed: dict[str, str | None] = attrs.Factory(dict)
    started_by: Callable[[tuple[str, ...]], bool] | None = None
    gpus: Callable[[dict[str, object]], int | None] = lambda args: None
    keyed: dict[str, tuple[str | None, ...]] = attrs.Factory(dict)
    default_backend: frozenset[str] = frozenset()
    kv_lists: frozenset[str] = frozenset()
    impact: dict[str, str] = attrs.Factory(dict)
    impact_packages: dict[str, str] = attrs.Factory(dict)
    volatile: frozenset[str] = frozenset({"port"})
    cache_reset: tuple[str, str] | None = None
    cache_reset_hint: str = ""
    metrics_path: str = "/metrics"
    metrics_hint: str = ""
    counters: dict[str, str] = attrs.Factory(dict)
    gauges: dict[str, str] = attrs.Factory(dict)


def as_int(value: object, default: int = 1) -> int:
    """An arg's value as a count (`2`, `2.0`, `"2"`); `default` for anything
    else (true/false, text)."""
    if isinstance(value, bool):
        return default
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return default


def size(args: dict[str, object], dest: str) -> int:
    """A parallel size from the args (1 when not given or not a count)."""
    return max(1, as_int(args.get(dest, 1)))
