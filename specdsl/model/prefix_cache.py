"""A workload's `prefix_cache`: whether the engine's prefix-cache hits are
part of what its runs measure, and the server flag that turns the cache off.

- `reset` (the default): the client empties the cache before each run
  (specdsl.bench.serverside), so every run starts cold and its hits are
  the ones its own prompts make. The engine is measured as it serves,
  with its cache on, and no run is helped by what an earlier one left.
- `off`: the server is started with its engine's flag that disables the
  cache (vLLM `enable-prefix-caching = false`, spelled as the release's
  flag table spells its negation; SGLang `disable-radix-cache = true`):
  no hits at all, nothing to reset.
- `warm`: the cache is left as the warm-up and the earlier runs leave it.

`server_for` is the server a workload's runs are measured on: the same
server, with the flag added for `off` (the server's own args win when they
already turn it off). Pure: the flag tables are package data.
"""

from __future__ import annotations

import attrs

from specdsl.facts import engine_flags, flag_table, pinned_version

MODES = ("reset", "off", "warm")
DEFAULT = "reset"
# the engine flag (its dest) that turns the prefix cache off, and the value that does
OFF_FLAGS = {"vllm": ("enable_prefix_caching", False), "sglang": ("disable_radix_cache", True)}


def mode_of(workload) -> str:
    """The workload's setting, the default when it says none."""
    return getattr(workload, "prefix_cache", None) or DEFAULT


def release_of(engine: str, stack) -> str | None:
    """The flag-table release a server of `engine` on `stack` is checked
    against (None: an engine without tables)."""
    choice = flag_table(engine, pinned_version(engine, stack.packages if stack is not None else ()))
    return choice.release if choice is not None else None


def cache_setting(engine: str, args, release: str | None = None) -> bool | None:
    """What a server's args say of its prefix cache: True on, False off,
    None not said (or an engine without such a flag)."""
    if engine not in OFF_FLAGS:
        return None
    dest, off = OFF_FLAGS[engine]
    flags = engine_flags(engine, release)
    said = None
    for key, value in args:
        name = str(key).lstrip("-")
        info = flags.get(name)
        if info is None or info.dest != dest or not isinstance(value, bool):
            continue
        if info.negation and name == info.negation:
            value = not value
        said = value != off
    return said


def off_arg(engine: str, release: str | None = None) -> tuple[str, bool] | None:
    """(flag, True) that turns the engine's prefix cache off in `release`'s
    spelling (vLLM 0.26: `no-enable-prefix-caching`, 0.33:
    `disable-prefix-caching`), None for an engine without one."""
    if engine not in OFF_FLAGS:
        return None
    dest, off = OFF_FLAGS[engine]
    for name, info in engine_flags(engine, release).items():
        if info.dest != dest or name != info.name:
            continue
        if off is False:
            return (info.negation, True) if info.negation else None
        return (name, True)
    return None


def server_for(server, workload, stack=None):
    """`server` as `workload`'s runs measure it: with the flag that turns
    its prefix cache off when the workload says `off` and its args do not
    already say so; else the same server."""
    if mode_of(workload) != "off" or server.engine not in OFF_FLAGS:
        return server
    release = release_of(server.engine, stack)
    if cache_setting(server.engine, server.args, release) is False:
        return server
    arg = off_arg(server.engine, release)
    if arg is None:
        return server
    return attrs.evolve(server, args=tuple(server.args) + (arg,))
