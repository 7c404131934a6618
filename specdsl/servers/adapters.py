"""The engines' adapters by name: `ADAPTERS` and `adapter_for`.

The list of engines has one home, `specdsl.facts.engines.BY_NAME` (which
`facts.ENGINES` and the schema's `engine = ...` values read too): the
adapter of engine NAME is `specdsl.servers.NAME.ADAPTER`, found here by
that name, so a new engine is its facts module, its entry in `BY_NAME` and
its adapter module, and no list here to keep in step.

Its own module, below the package face, so `lifecycle` and `logscan` find an
engine's adapter without importing the package that imports them.
"""

from __future__ import annotations

import importlib

from specdsl.facts.engines import BY_NAME
from specdsl.servers.base import Adapter


def _adapter(name: str) -> Adapter:
    adapter = importlib.import_module(f"specdsl.servers.{name}").ADAPTER
    if adapter.name != name:  # a module's adapter is for the engine the module is named after
        raise ImportError(f"specdsl.servers.{name}.ADAPTER is the adapter of {adapter.name!r}, not {name!r}")
    return adapter


# in BY_NAME's order
ADAPTERS: dict[str, Adapter] = {name: _adapter(name) for name in BY_NAME}


def adapter_for(engine: str) -> Adapter:
    """The adapter of `engine`; an unknown engine is driven like `command`."""
    return ADAPTERS.get(engine, ADAPTERS["command"])
