"""What every server adapter gives, and the values a running server is known by.

An `Adapter` drives one serving engine: the argv that starts it, the URL
whose 200 means "started", and the engine's own report of its
configuration; what specdsl knows of the engine as data (distributions,
client quirks, the log patterns that set effective-configuration keys, what
moves its performance) is its `facts`, the engine's pure module in
specdsl/facts/engines. Adding an engine (TensorRT-LLM, llama.cpp server) is
that module and its entry in `facts.engines.BY_NAME` (the one list of
engines), and one module here, named after the engine, with its `ADAPTER`.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import attrs

from specdsl.bench.serverside import ServerSide
from specdsl.facts.engines import Engine
from specdsl.facts.engines import engine as engine_facts
from specdsl.model.config import Server
from specdsl.provision import EnvInfo

LOG_TAIL_LINES = 30


@attrs.frozen
class ServerHandle:
    """A running server. Plain values, so it can be recorded in state.
    `base_url` and `health_url` are reached from this machine (through
    `Host.reach`); `bind` is the address it listens on, on its host;
    `log_path` is a path on its host; `version` the engine's version."""

    pid: int
    pgid: int
    port: int
    bind: str
    base_url: str
    log_path: str
    argv: tuple[str, ...]
    engine: str = ""
    model: str = ""
    health_url: str = ""
    version: str | None = None
    jit_cache: str = ""  # `HOST ENV-IDENTITY` of the JIT cache folder it was pointed at (servers.caches)
    cache_cold: bool | None = None  # whether that folder held no earlier launch's kernels

    def process(self):
        from specdsl.hosts import ProcessHandle

        return ProcessHandle(self.pid, self.pgid, self.argv, self.log_path)


class LaunchError(Exception):
    """A server did not start or did not become ready. `str()` names what
    failed, the command, the log path and the log's last 30 lines."""

    def __init__(self, what: str, *, argv=(), log_path: str | None = None, pgid: int | None = None, tail: str = ""):
        self.what = what
        self.pgid = pgid  # the stopped server's process group, when one was started
        self.argv = tuple(argv)
        self.log_path = log_path
        self.tail = tail
        parts = [what]
        if self.argv:
            parts.append(f"  command: {shlex.join(self.argv)}")
        if log_path:
            parts.append(f"  log: {log_path}")
            parts.append(f"  last {LOG_TAIL_LINES} lines of the log:")
            parts += [f"    {line}" for line in self.tail.splitlines()] or ["    (empty)"]
        super().__init__("\n".join(parts))


class Adapter:
    """The default adapter; each engine module subclasses what differs.

    What specdsl knows of the engine as data is its `facts`
    (specdsl/facts/engines: an `Engine`); the adapter reads its
    distributions, client quirks, log patterns (`keyed`, `default_backend`,
    `kv_lists`), diagnosis tables (`impact`, `impact_packages`,
    `volatile`) and what its server offers beside the API (`cache_reset`,
    `counters`, `gauges`, ...) there, and adds what needs a process, a file
    or the network: the argv that starts it, its readiness URL and its own
    report of its configuration. `server_side()` gives the load generator
    what it may ask the server beside its API."""

    name = "command"
    facts: Engine = engine_facts("command")

    distributions = property(lambda self: self.facts.distributions)
    quirks = property(lambda self: self.facts.quirks)  # one source with planning (facts.engines.QUIRKS)
    keyed = property(lambda self: self.facts.keyed)
    default_backend = property(lambda self: self.facts.default_backend)
    kv_lists = property(lambda self: self.facts.kv_lists)
    impact = property(lambda self: self.facts.impact)
    impact_packages = property(lambda self: self.facts.impact_packages)
    volatile = property(lambda self: self.facts.volatile)
    cache_reset = property(lambda self: self.facts.cache_reset)
    cache_reset_hint = property(lambda self: self.facts.cache_reset_hint)
    metrics_path = property(lambda self: self.facts.metrics_path)
    metrics_hint = property(lambda self: self.facts.metrics_hint)
    counters = property(lambda self: self.facts.counters)
    gauges = property(lambda self: self.facts.gauges)

    def server_side(self) -> ServerSide:
        """What the load generator may ask this engine's server beside its API."""
        return ServerSide(cache_reset=self.cache_reset, cache_reset_hint=self.cache_reset_hint,
                          metrics_path=self.metrics_path, metrics_hint=self.metrics_hint, counters=self.counters,
                          gauges=self.gauges)

    def argv(self, server: Server, env: EnvInfo, bind: str, port: int, host=None) -> list[str]:
        """The full argv that starts `server` from `env`, listening on
        bind:port. `host` (a `Host`) answers questions about its files."""
        raise NotImplementedError

    def health_url(self, server: Server, base_url: str) -> str:
        return base_url + "/health"

    def distribution(self, env: EnvInfo) -> tuple[str | None, str | None]:
        """(distribution name, version) of the engine in an environment."""
        for name in self.distributions:
            if name in env.packages:
                return name, env.packages[name]
        return None, None

    def report(self, server: Server, handle: ServerHandle, log: str, config: dict[str, Any]) -> dict[str, Any]:
        """The engine's own account of its configuration, layered last
        over the spec's args and the log facts (`config`)."""
        return {}


def console_script(env: EnvInfo, name: str, module: str, host) -> list[str]:
    """The argv head that runs console script `name` of the environment.

    An environment made over an existing interpreter (`python = "system"`,
    a GPU host without a registry) sees that interpreter's packages but not
    their scripts, which live in the interpreter's own bin folder: then the
    script's entry point is called through the environment's python."""
    script = Path(env.python).parent / name
    if host is None or host.exists(script):
        return [str(script)]
    return [env.python, "-c", f"import sys; from {module} import main; sys.argv[0] = {name!r}; sys.exit(main())"]
