"""What every server adapter gives, and the values a running server is known by.

An `Adapter` holds everything specdsl knows about one serving engine: the
distributions that provide it, the argv that starts it, the URL whose 200
means "started", the log patterns that set effective-configuration keys, the
engine's own report of its configuration, and the client quirks the load
generator must respect. Adding an engine (TensorRT-LLM, llama.cpp server) is
one module with one `Adapter` and one line in `servers/__init__.py`.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any, Mapping

import attrs

from specdsl.bench.quirks import QUIRKS, ClientQuirks
from specdsl.bench.serverside import ServerSide
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

    `keyed` maps a log pattern's regex text (as in specdsl/facts) to the
    effective keys its groups set (None skips a group); `default_backend`
    lists patterns that mean "the server chose its attention backend
    itself"; `kv_lists` patterns whose last group is a `k=v, ...` dump.

    Beside its API: `cache_reset` is the (method, path) that empties the
    server's prefix cache (None: the engine has none), with
    `cache_reset_hint` for a server that answers 404 there; `counters` and
    `gauges` map the client's vocabulary of server-side quantities
    (specdsl.bench.serverside) to the engine's Prometheus metrics at
    `metrics_path`. `server_side()` gives them to the load generator.

    For diagnosis (specdsl.diagnose, docs/diagnose.md): `impact` maps the
    effective keys known to move this engine's performance to why, in one
    line; `impact_packages` the same for distributions (kernels, the engine
    itself). A difference in one of them ranks above the others. `volatile`
    names the effective keys whose value changes between any two launches
    of one configuration (ports, seeds): a diagnosis hides them as noise,
    with those it learns from the launches of one arm."""

    name = "command"
    distributions: tuple[str, ...] = ()
    quirks: ClientQuirks = QUIRKS["command"]  # one source with planning (specdsl.facts.engines)
    keyed: Mapping[str, tuple[str | None, ...]] = {}
    default_backend: frozenset[str] = frozenset()
    kv_lists: frozenset[str] = frozenset()
    cache_reset: tuple[str, str] | None = None
    cache_reset_hint: str = ""
    metrics_path: str = "/metrics"
    counters: Mapping[str, str] = {}
    gauges: Mapping[str, str] = {}
    impact: Mapping[str, str] = {}
    impact_packages: Mapping[str, str] = {}
    volatile: frozenset[str] = frozenset({"port"})

    def server_side(self) -> ServerSide:
        """What the load generator may ask this engine's server beside its API."""
        return ServerSide(cache_reset=self.cache_reset, cache_reset_hint=self.cache_reset_hint,
                          metrics_path=self.metrics_path, counters=self.counters, gauges=self.gauges)

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
