"""A recorded verdict read back: the assertion it checked (from the check
step's recorded content) and the numbers of its verdict line.

State keeps a verdict as the text apply printed (`reason = "pass: ratio
1.947 [1.6, inf) >= 1.2, n=3 pairs: PASS (...)"`, see
specdsl.state.promotions); the report shows what was decided then, so it
reads that line (the format `specdsl.verdict.decision` writes; a test pins
the two together) instead of deciding again.
"""

from __future__ import annotations

import math
import re
from typing import Any

import attrs

from specdsl.model import ast
from specdsl.model.printer import expr_text

_NUM = r"-?(?:inf|nan|[0-9.]+(?:e[+-]?[0-9]+)?)"
_LINE = re.compile(
    rf"^(?P<what>ratio|mean) (?P<est>{_NUM}) [\[(](?P<low>{_NUM}), (?P<high>{_NUM})[\])] (?P<op>>=|<=|>|<) (?P<k>{_NUM}), "
    r"n=(?P<n>\d+) (?P<unit>pairs|runs): (?P<status>[A-Z]+)"
)


@attrs.frozen
class Numbers:
    """What a gating verdict line says: estimate, its one-sided interval
    [low, high], the operator and threshold, n pairs (or runs)."""

    kind: str  # "ratio" (paired) or "mean" (a t interval on runs)
    estimate: float
    low: float
    high: float
    op: str
    threshold: float
    n: int
    unit: str  # "pairs" or "runs"


def parse_line(detail: str) -> Numbers | None:
    """The numbers of a verdict line, None for a line without them (an
    exact assertion, an error)."""
    m = _LINE.match(detail.strip())
    if m is None:
        return None
    est, low, high, k = (float(g) for g in m.group("est", "low", "high", "k"))
    return Numbers(m["what"], est, low, high, m["op"], k, int(m["n"]), m["unit"])


def decode_expr(value: Any) -> Any:
    """An expression back from its canonical JSON form
    (specdsl.model.config.canonical: `{"__kind__": "BinOp", ...}`)."""
    if isinstance(value, list):
        return tuple(decode_expr(v) for v in value)
    if not isinstance(value, dict) or "__kind__" not in value:
        return value
    cls = getattr(ast, value["__kind__"], None)
    if cls is None or not attrs.has(cls):
        raise ValueError(f"unknown expression node {value['__kind__']!r}")
    names = {f.name for f in attrs.fields(cls)}
    return cls(**{k: decode_expr(v) for k, v in value.items() if k != "__kind__" and k in names})


def assertion_of(content: dict) -> tuple[Any, str]:
    """(expression or None, its text) of a check step's recorded content."""
    raw = content.get("assert")
    if raw is None:
        return None, ""
    try:
        expr = decode_expr(raw)
        return expr, expr_text(expr)
    except (TypeError, ValueError, KeyError, RecursionError):
        return None, "(not readable)"


def finite(x: float | None) -> bool:
    return x is not None and math.isfinite(x)
