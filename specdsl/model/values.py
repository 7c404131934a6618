"""Evaluated values: what an expression of a spec evaluates to, before it is
checked against a schema and built into `specdsl.model.config` objects.

A `V` wraps a Python value (str, int, float, bool, list of V, dict of str to
V, `ast.Quantity`, `BlockRef`, `OverrideValue`) with the `Span` of the text
it came from, so a schema check on a merged, inherited, overridden or
matrix-substituted value still points at the right place. `INVALID` is the
value of something already reported as wrong: later checks skip it silently
so one mistake gives one diagnostic.

Both `specdsl.validate` (the schema checks) and `specdsl.resolve` (which
evaluates expressions into these values and runs the checks) use them, so
they live here, below both.
"""

from __future__ import annotations

from typing import Any

import attrs

from specdsl.diag import Span
from specdsl.model import ast


@attrs.frozen
class V:
    value: Any
    span: Span | None = attrs.field(default=None, eq=False)
    keys: dict | None = attrs.field(default=None, eq=False)  # map key -> span of the key


class _Invalid:
    def __repr__(self) -> str:
        return "INVALID"


INVALID = _Invalid()


@attrs.frozen
class BlockRef:
    """A reference to a named block: `stack.cu128`, `experiment.baseline`,
    or a track: `track.kimi-prod`."""

    kind: str
    name: str


@attrs.frozen
class OverrideValue:
    """`server.kimi { args = {...} }` evaluated: the block and the changes."""

    ref: BlockRef
    changes: dict  # attribute name -> V
    blocks: tuple = ()  # nested blocks of the override body (e.g. metric)


def plain(v: V | Any) -> Any:
    """Strip spans: V -> plain Python values (lists, dicts, scalars)."""
    if isinstance(v, V):
        v = v.value
    if isinstance(v, list):
        return [plain(x) for x in v]
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    return v


def type_name(value: Any) -> str:
    """How a diagnostic names the type of an evaluated value: "a string", "a map"."""
    if isinstance(value, bool):
        return "a bool"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a map"
    if isinstance(value, ast.Quantity):
        return "a duration" if value.unit != "%" else "a percentage"
    if isinstance(value, (BlockRef, OverrideValue)):
        kind = value.kind if isinstance(value, BlockRef) else value.ref.kind
        return f"a {kind} reference"
    return "a value"
