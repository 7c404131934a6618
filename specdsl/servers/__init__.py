"""servers: one adapter per serving engine, and the server lifecycle.

Each engine module (`transformers`, `vllm`, `sglang`, `command`) holds one
`Adapter`: argv, readiness URL and the engine's own report of its
effective configuration; what specdsl knows of the engine as data (flag
tables, log patterns, client quirks, diagnosis impact, metrics) it reads
from the engine's pure module in specdsl/facts/engines. `lifecycle` starts a server
on a `Host` (its own process group, a log on the host), waits until it
answers a real completion, reads its effective configuration and stops it;
it never creates a host or a process itself. Adding an engine is one module
here (named after the engine, with its `ADAPTER`), its facts module and its
entry in `specdsl.facts.engines.BY_NAME`, the one list of engines.

Imports: hosts, bench (client quirks), provision (EnvInfo), model, facts;
never graph, plan, apply or cli.
"""

from specdsl.facts import ENGINES, FlagInfo, engine_flags
from specdsl.servers.adapters import ADAPTERS, adapter_for
from specdsl.servers.args import render_args
from specdsl.servers.base import Adapter, LaunchError, ServerHandle
from specdsl.servers.lifecycle import answers, effective_config, health_url, launch, teardown
from specdsl.servers.logscan import parse_kv_list, scan_log


def build_argv(server, env, bind: str, port: int, host=None) -> list[str]:
    """The full argv that starts `server` from environment `env` on bind:port."""
    return adapter_for(server.engine).argv(server, env, bind, port, host)


__all__ = [
    "ADAPTERS", "Adapter", "ENGINES", "FlagInfo", "LaunchError", "ServerHandle", "adapter_for", "answers", "build_argv",
    "effective_config", "engine_flags", "health_url", "launch", "parse_kv_list", "render_args", "scan_log", "teardown",
]
