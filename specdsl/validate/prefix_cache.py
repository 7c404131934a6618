"""A workload's `prefix_cache` against the servers it measures
(specdsl.model.prefix_cache): `off` needs an engine whose cache specdsl
can turn off and a server whose args do not turn it on; `reset` written
out needs the built-in client (a user's script sends its own requests)
and, on vLLM, the dev endpoints (a warning); a baseline measured beside
its candidate with its cache off, while the candidate's workload leaves
it on, would make the arms differ in more than the change. Located at the
workload's `prefix_cache` (or the experiment's `baseline`)."""

from __future__ import annotations

from typing import Callable, Sequence

from specdsl.diag import Diagnostic, Span
from specdsl.model import config
from specdsl.model.prefix_cache import OFF_FLAGS, cache_setting, mode_of, release_of

DEV_MODE = "VLLM_SERVER_DEV_MODE"


def check_prefix_cache(experiments: Sequence[config.Experiment], diags: list[Diagnostic],
                       at_setting: Callable[[config.Workload], Span | None],
                       at_baseline: Callable[[config.Experiment], Span | None]) -> None:
    """One diagnostic per workload (or experiment block) and problem."""
    seen: set[tuple] = set()
    by_group = {}
    for exp in experiments:
        by_group.setdefault(exp.group, exp)

    def report(key: tuple, diag: Diagnostic) -> None:
        if key not in seen:
            seen.add(key)
            diags.append(diag)

    for exp in experiments:
        w, server = exp.workload, exp.server
        said = w.prefix_cache
        if said == "off":
            if server.engine not in OFF_FLAGS:
                report((w.name, "engine", server.name), Diagnostic.error(
                    '`prefix_cache = "off"` needs an engine whose prefix cache specdsl can turn off',
                    at_setting(w),
                    f'server `{server.name}` runs engine "{server.engine}"; specdsl knows the flag of vllm '
                    '(`enable-prefix-caching = false`) and sglang (`disable-radix-cache = true`): turn the cache off in '
                    'the server\'s own command and say `prefix_cache = "warm"`'))
            elif cache_setting(server.engine, server.args, release_of(server.engine, exp.stack)) is True:
                report((w.name, "args", server.name), Diagnostic.error(
                    f'`prefix_cache = "off"` contradicts the args of server `{server.name}`',
                    at_setting(w),
                    "its args turn the prefix cache on: remove that from the server's `args`, or leave `prefix_cache` out"))
        elif said == "reset" and w.command:
            report((w.name, "command"), Diagnostic.error(
                '`prefix_cache = "reset"` is for the built-in client',
                at_setting(w),
                "this workload runs its own `command`, whose requests specdsl does not send, so it cannot empty the "
                'cache between its runs: use "off" or "warm", or leave `prefix_cache` out'))
        elif said == "reset" and server.engine == "vllm" and not _dev_mode(exp):
            report((w.name, "dev", server.name), Diagnostic.warning(
                f"vLLM serves its prefix-cache reset only with {DEV_MODE}=1",
                at_setting(w),
                f'add `env = {{ {DEV_MODE} = "1" }}` to server `{server.name}`: without it each run starts from the '
                "cache the earlier runs left (each run records the reset as not offered)"))
        base = by_group.get(exp.baseline.name) if exp.baseline is not None and exp.baseline.kind == "experiment" else None
        if base is not None and config.measured_beside(exp, base) and mode_of(base.workload) == "off" and mode_of(w) != "off":
            report((exp.group, "baseline"), Diagnostic.error(
                f"Baseline `{base.name}` is measured with its prefix cache off",
                at_baseline(exp),
                f'its workload `{base.workload.name}` says `prefix_cache = "off"`, which starts its server without the '
                f'cache, but `{exp.name}` is measured beside it with its own workload `{w.name}` '
                f'(`prefix_cache = "{mode_of(w)}"`): the arms would differ in the cache too; give both workloads the '
                "same `prefix_cache`"))


def _dev_mode(exp: config.Experiment) -> bool:
    return any(k == DEV_MODE and str(v) not in ("", "0") for k, v in (*exp.server.env, *exp.stack.env))
