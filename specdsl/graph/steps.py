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


# One encoder, made once: json.dumps with options builds a new one per call,
# which costs more than encoding a step's small content.
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_text(content: Any) -> str:
    """Canonical JSON: sorted keys, no spaces, UTF-8 kept as is."""
    return _ENCODER.encode(content)


def digest(content: Any) -> str:
    return hashlib.sha256(canonical_text(content).encode()).hexdigest()


def step_digest(kind: str, content: dict, texts: dict[str, str]) -> str:
    """`digest([kind, content])`, byte for byte, with the values of the keys
    in `texts` given as their canonical text already: a value shared by
    many steps (a workload, an assertion) is serialized once, not per cell."""
    body = ",".join(
        canonical_text(key) + ":" + (texts[key] if key in texts else canonical_text(content[key])) for key in sorted(content)
    )
    return hashlib.sha256(("[" + canonical_text(kind) + ",{" + body + "}]").encode()).hexdigest()


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
