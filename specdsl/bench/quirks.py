"""What a server's OpenAI-compatible API accepts, as the load generator
needs to know it: defined with the facts about the servers
(specdsl.facts.client, each engine's in specdsl.facts.engines), where planning reads them too (a change of them is
a change of a benchmark's identity); re-exported here for the client.
"""

from __future__ import annotations

from specdsl.facts.client import BASIC, ClientQuirks, exact_len_fields
from specdsl.facts.engines import QUIRKS

__all__ = ["BASIC", "QUIRKS", "ClientQuirks", "exact_len_fields"]
