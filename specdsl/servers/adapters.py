"""The engines' adapters by name: `ADAPTERS` and `adapter_for`.

Its own module, below the package face, so `lifecycle` and `logscan` find an
engine's adapter without importing the package that imports them.
"""

from __future__ import annotations

from specdsl.servers import command, sglang, transformers, vllm
from specdsl.servers.base import Adapter

ADAPTERS: dict[str, Adapter] = {a.name: a for a in (transformers.ADAPTER, vllm.ADAPTER, sglang.ADAPTER, command.ADAPTER)}


def adapter_for(engine: str) -> Adapter:
    """The adapter of `engine`; an unknown engine is driven like `command`."""
    return ADAPTERS.get(engine, ADAPTERS["command"])
