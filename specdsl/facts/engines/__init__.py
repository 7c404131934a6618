"""One pure module per serving engine (`sglang`, `vllm`, `transformers`,
`command`), each holding everything specdsl knows of that engine as data
and pure rules (an `Engine`, base.py): its flag tables and log-pattern sets
per release, the client quirks of its API, the flags specdsl sets itself,
how many GPUs a server of it needs, what its log lines mean and which of
its settings move performance (diagnosis).

specdsl.facts reads the tables and pattern sets named here; validation,
model/gpus, the server adapters (specdsl/servers), the benchmark client and
diagnosis read the rest from here. No I/O at import. A new engine is one
module here with its entry in `BY_NAME` (the one list of engines) and one
module of the same name in specdsl/servers (servers/adapters.py finds it).
"""

from __future__ import annotations

from specdsl.facts.engines import command, sglang, transformers, vllm
from specdsl.facts.client import ClientQuirks
from specdsl.facts.engines.base import Engine

# The one list of the engines, by name: specdsl.facts.ENGINES, the schema's
# `engine` values and the servers' adapters (servers/adapters.py) are read from it.
BY_NAME: dict[str, Engine] = {e.name: e for e in (sglang.ENGINE, vllm.ENGINE, transformers.ENGINE, command.ENGINE)}
# each engine's client quirks, the one table planning (a benchmark's
# identity holds them) and the adapters read
QUIRKS: dict[str, ClientQuirks] = {name: e.quirks for name, e in BY_NAME.items()}


def engine_of_argv(argv: tuple[str, ...]) -> str:
    """The engine a recorded command line starts (`command` when none
    says it is theirs), asked in BY_NAME's order."""
    for e in BY_NAME.values():
        if e.started_by is not None and e.started_by(tuple(argv)):
            return e.name
    return "command"


def engine(name: str) -> Engine:
    """The facts of engine `name`; an unknown engine is `command`'s (a
    server specdsl knows nothing of beyond its API)."""
    return BY_NAME.get(name, BY_NAME["command"])


__all__ = ["BY_NAME", "QUIRKS", "Engine", "engine", "engine_of_argv"]
