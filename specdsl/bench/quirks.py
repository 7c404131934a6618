"""What a server's OpenAI-compatible API accepts, as the load generator
needs to know it: defined with the facts about the servers
(specdsl.facts.client), where planning reads them too (a change of them is
a change of a benchmark's identity); re-exported here for the client.
"""

from __future__ import annotations

from specdsl.facts.client import BASIC, QUIRKS, ClientQuirks, exact_len_fields

__all__ = ["BASIC", "QUIRKS", "ClientQuirks", "exact_len_fields"]
