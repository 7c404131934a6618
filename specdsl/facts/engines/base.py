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
    `flag_tables` and `pattern_sets` are (release, file in specdsl/facts),
    oldest first; `default_release` the table of a stack that pins none.
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
    specdsl.model.gpus asks it for a server that does not say `gpus`."""

    name: str
    label: str
    distributions: tuple[str, ...] = ()
    flag_tables: tuple[tuple[str, str], ...] = ()
    default_release: str | None = None
    pattern_sets: tuple[tuple[str, str], ...] = ()
    effective_extra: tuple[str, ...] | None = None
    quirks: ClientQuirks = BASIC
    managed: dict[str, str | None] = attrs.Factory(dict)
    started_by: Callable[[tuple[str, ...]], bool] | None = None
    gpus: Callable[[dict[str, object]], int | None] = lambda args: None


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
