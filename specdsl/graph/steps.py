"""Steps: the nodes of the DAG apply walks.

A step's `identity` is the SHA-256 of the canonical JSON of its `content`:
what the step does and the identities of the steps it builds on. Never object
ids, never times, so two processes on two machines agree. `addr` is the
human address (`launch.kimi`); it stays the same when the content changes so
a plan can say what replaces what.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import attrs

KINDS = ("preflight", "provision", "launch", "benchmark", "check", "promote", "teardown")
KIND_ORDER = {k: i for i, k in enumerate(KINDS)}


def digest(content: Any) -> str:
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


@attrs.frozen
class Step:
    """One node. `deps` are addresses of the steps it needs (data edges);
    `after` addresses it only runs after (ordering edges, e.g. a baseline's
    benchmark before its candidate's). `experiments` are the cells it serves.
    `payload` carries the config objects apply needs (left out of equality;
    the identity already covers them)."""

    addr: str
    kind: str
    identity: str
    content: dict = attrs.field(eq=False, hash=False)
    deps: tuple[str, ...] = ()
    after: tuple[str, ...] = ()
    host: str = "local"
    experiments: tuple[str, ...] = ()
    payload: dict = attrs.field(factory=dict, eq=False, hash=False, repr=False)

    @property
    def short(self) -> str:
        return self.identity[:12]
