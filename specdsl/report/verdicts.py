"""What a report reads beside a recorded verdict: the assertion it checked,
from the check step's recorded content. The verdict itself (its status,
line and numbers) state keeps structured (specdsl.verdict.Verdict); the
report shows what was decided then instead of deciding again.
"""

from __future__ import annotations

import math
from typing import Any

import attrs

from specdsl.model import ast
from specdsl.model.printer import expr_text


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
