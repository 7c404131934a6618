"""`transformers serve` (Hugging Face transformers 5.x): its facts (see base.Engine).

Flag tables: `transformers serve --help` of each release; no log patterns
(the adapter reads `continuous_batching` from its per-request `CB:` lines).
"""

from __future__ import annotations

from specdsl.facts.engines.base import Engine

ENGINE = Engine(
    name="transformers",
    label="transformers",
    distributions=("transformers",),
    flag_tables=(("5.17", "transformers-5.17-serve-help.txt"), ("5.19", "transformers-5.19-serve-help.txt")),
    default_release="5.17",
    effective_extra=("continuous_batching",),
)
