"""`command`: any OpenAI-compatible server started by the user's argv.
specdsl knows nothing of it beyond the API: no flag table, no log
patterns, no effective names (it reports what its user's script prints)."""

from __future__ import annotations

from specdsl.facts.engines.base import Engine

ENGINE = Engine(name="command", label="command")
