"""`Engine`: what specdsl knows of one serving engine as pure data, and
the helpers its rules share. One module per engine beside this one holds
its `ENGINE`; nothing here does I/O (a flag table or a pattern set is a
file name, read by specdsl.facts when first asked for)."""

from __future__ import annotations

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
    (specdsl.facts.client)."""

    name: str
    label: str
    distributions: tuple[str, ...] = ()
    flag_tables: tuple[tuple[str, str], ...] = ()
    default_release: str | None = None
    pattern_sets: tuple[tuple[str, str], ...] = ()
    effective_extra: tuple[str, ...] | None = None
    quirks: ClientQuirks = BASIC
