"""`command`: any OpenAI-compatible server started by the user's argv.
specdsl knows nothing of it beyond the API: no flag table, no log
patterns, no effective names (it reports what its user's script prints)."""

from __future__ import annotations

from specdsl.facts.engines.base import Engine

# `{port}` and `{host}` in its command are specdsl's (it has no flag table:
# validation checks none of its args); its GPUs: the whole machine (specdsl
# cannot know what it uses), the default rule
ENGINE = Engine(name="command", label="command", managed={"port": "port", "host": None})
