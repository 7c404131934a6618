"""Expressions -> evaluated values that remember where they were written.

The value types (`V`, `INVALID`, `BlockRef`, `OverrideValue`) are defined in
`specdsl.model.values` and re-exported here.

`evaluate` turns a configuration expression into a V. Problems are reported
into the diagnostics list and the result is `INVALID`, which later checks
skip silently so one mistake gives one diagnostic.
"""

from __future__ import annotations

import math
from typing import Any

import attrs

from specdsl.diag import Diagnostic, Span, did_you_mean
from specdsl.model import ast
# The value types live in the model (validation reads them too); resolve
# re-exports them as the values it evaluates.
from specdsl.model.values import INVALID, BlockRef, OverrideValue, V, plain, type_name  # noqa: F401

BLOCK_KINDS = ("variable", "host", "stack", "server", "workload", "experiment")
REF_NAMESPACES = {"var": "variable", "host": "host", "stack": "stack", "server": "server", "workload": "workload",
                  "experiment": "experiment"}


@attrs.define
class Scope:
    """What names an expression may read."""

    variables: dict[str, V]
    blocks: dict[str, dict[str, Any]]  # kind -> name -> declaring ast.Block
    matrix: dict[str, V] | None = None
    matrix_keys: tuple[str, ...] = ()
    tracks: bool = False  # `track.NAME` allowed (the `baseline` attribute)


def nul_error(what: str, span: Span | None) -> Diagnostic:
    """A NUL character (`\\0`, `\\u0000`) in a value: no program argument,
    environment variable or file name can hold one, so it is refused here
    rather than when a server is launched."""
    return Diagnostic.error(
        f"{what} contains a NUL character",
        span,
        "a NUL (written `\\0` or `\\u0000`) cannot be passed in a program's arguments, its environment "
        "or a file name; remove it",
    )


def merge(base: V, change: V) -> V:
    """Maps merge key by key (recursively); lists and scalars replace."""
    if isinstance(base.value, dict) and isinstance(change.value, dict):
        out = dict(base.value)
        for key, value in change.value.items():
            out[key] = merge(out[key], value) if key in out else value
        return V(out, change.span, {**(base.keys or {}), **(change.keys or {})})
    return change


def _key_span(item: ast.MapItem) -> Span | None:
    s = item.span
    if s is None:
        return None
    width = len(item.key) + (2 if item.quoted else 0)
    return Span(s.file, s.line, s.col, s.line, s.col + width)


def evaluate(expr: ast.Expr, scope: Scope, diags: list[Diagnostic]) -> V:
    span = expr.span
    if isinstance(expr, (ast.Number, ast.Quantity)) and expr.value in (math.inf, -math.inf):
        return V(INVALID, span)  # "Number out of range", reported by the builder
    if isinstance(expr, ast.String) and "\0" in expr.value:
        diags.append(nul_error("String", span))
        return V(INVALID, span)
    if isinstance(expr, (ast.Number, ast.String, ast.Bool)):
        return V(expr.value, span)
    if isinstance(expr, ast.Quantity):
        return V(expr if expr.unit in ast.UNITS else INVALID, span)  # a bad unit is reported by the builder
    if isinstance(expr, ast.ListExpr):
        items = [evaluate(e, scope, diags) for e in expr.items]
        return V(items, span)
    if isinstance(expr, ast.MapExpr):
        out: dict[str, V] = {}
        keys: dict[str, Span | None] = {}
        for item in expr.items:
            if "\0" in item.key:
                diags.append(nul_error("Map key", _key_span(item)))
                continue
            if item.key in out:
                diags.append(Diagnostic.error(f"Duplicate key `{item.key}`", item.span, "each key may appear once in a map"))
            out[item.key] = evaluate(item.value, scope, diags)
            keys[item.key] = _key_span(item)
        return V(out, span, keys)
    if isinstance(expr, ast.Ref):
        return _ref(expr, scope, diags)
    if isinstance(expr, ast.Override):
        target = _ref(expr.ref, scope, diags)
        if target.value is INVALID:
            return target
        if not isinstance(target.value, BlockRef) or target.value.kind not in ("host", "stack", "server", "workload"):
            diags.append(
                Diagnostic.error(
                    "Only a host, stack, server or workload can be overridden",
                    expr.ref.span,
                    "write `server.NAME { attribute = value }` to change attributes of a named block",
                )
            )
            return V(INVALID, span)
        changes: dict[str, V] = {}
        blocks = []
        for item in expr.body:
            if isinstance(item, ast.Attribute):
                if item.name in changes:
                    diags.append(Diagnostic.error(f"Duplicate attribute `{item.name}`", item.name_span, "set each attribute once"))
                changes[item.name] = evaluate(item.value, scope, diags)
            elif isinstance(item, ast.Block):
                blocks.append(item)
            else:
                diags.append(Diagnostic.error("An assertion cannot go in an override", item.span, "put `assert` blocks in the experiment"))
        return V(OverrideValue(target.value, changes, tuple(blocks)), span)
    if isinstance(expr, ast.Neg):
        inner = evaluate(expr.operand, scope, diags)
        if inner.value is INVALID:
            return inner
        if isinstance(inner.value, (int, float)) and not isinstance(inner.value, bool):
            return V(-inner.value, span)
        diags.append(Diagnostic.error(f"Cannot negate {type_name(inner.value)}", expr.span, "`-` applies to numbers"))
        return V(INVALID, span)
    if isinstance(expr, ast.BinOp) and expr.op in "+-*/":
        left, right = evaluate(expr.left, scope, diags), evaluate(expr.right, scope, diags)
        if left.value is INVALID or right.value is INVALID:
            return V(INVALID, span)
        return _arith(expr, left.value, right.value, diags)
    if isinstance(expr, ast.Call):
        diags.append(
            Diagnostic.error(
                f"Function `{expr.func}` cannot be used here",
                expr.span,
                "functions such as p99() read benchmark results: use them inside `assert` blocks",
            )
        )
        return V(INVALID, span)
    # comparisons, and/or/not
    diags.append(
        Diagnostic.error(
            "A condition cannot be used as a value",
            expr.span,
            "comparisons and `and`/`or`/`not` belong in `assert` blocks",
        )
    )
    return V(INVALID, span)


def _arith(expr: ast.BinOp, a: Any, b: Any, diags: list[Diagnostic]) -> V:
    def number(x):
        return isinstance(x, (int, float)) and not isinstance(x, bool)

    if expr.op == "+" and isinstance(a, str) and isinstance(b, str):
        return V(a + b, expr.span)
    if number(a) and number(b):
        if expr.op == "/":
            if b == 0:
                diags.append(Diagnostic.error("Division by zero", expr.right.span))
                return V(INVALID, expr.span)
            return V(a / b, expr.span)
        result = {"+": a + b, "-": a - b, "*": a * b}[expr.op]
        return V(result, expr.span)
    diags.append(
        Diagnostic.error(
            f"Cannot apply `{expr.op}` to {type_name(a)} and {type_name(b)}",
            expr.span,
            "arithmetic works on numbers; `+` also joins two strings",
        )
    )
    return V(INVALID, expr.span)


def _ref(ref: ast.Ref, scope: Scope, diags: list[Diagnostic]) -> V:
    parts, span = ref.parts, ref.span
    head = parts[0]
    if head == "matrix":
        if scope.matrix is None:
            diags.append(
                Diagnostic.error(
                    f"`{ref.dotted}` used outside a matrix",
                    span,
                    "`matrix.KEY` reads the value of the current cell inside an experiment that declares `matrix = { KEY = [...] }`",
                )
            )
            return V(INVALID, span)
        if len(parts) != 2 or parts[1] not in scope.matrix:
            key = parts[1] if len(parts) > 1 else ""
            hint = did_you_mean(key, scope.matrix) or f"this experiment's matrix has: {', '.join(scope.matrix) or 'no keys'}"
            diags.append(Diagnostic.error(f"Unknown matrix key `{key}`", span, hint))
            return V(INVALID, span)
        return scope.matrix[parts[1]]
    if head == "track" and scope.tracks:
        if len(parts) != 2:
            diags.append(Diagnostic.error("A track reference is `track.NAME`", span))
            return V(INVALID, span)
        return V(BlockRef("track", parts[1]), span)
    if head not in REF_NAMESPACES:
        candidates = list(REF_NAMESPACES) + (["matrix"] if scope.matrix is not None else []) + (["track"] if scope.tracks else [])
        hint = did_you_mean(head, candidates) or "references start with " + ", ".join(f"`{c}.`" for c in candidates)
        diags.append(Diagnostic.error(f"Unknown reference `{ref.dotted}`", span, hint))
        return V(INVALID, span)
    kind = REF_NAMESPACES[head]
    if len(parts) != 2:
        diags.append(Diagnostic.error(f"A {kind} reference is `{head}.NAME`", span, f"`{ref.dotted}` has {len(parts)} parts"))
        return V(INVALID, span)
    name = parts[1]
    if kind == "variable":
        if name not in scope.variables:
            hint = _dash_hint(head, name, scope.variables) or did_you_mean(name, scope.variables) or "declare it with `variable \"" + name + "\" { default = ... }`"
            diags.append(Diagnostic.error(f"Unknown variable `{name}`", span, hint))
            return V(INVALID, span)
        value = scope.variables[name]
        return V(value.value, value.span if value.span is not None else span)
    if name not in scope.blocks.get(kind, {}):
        hint = _dash_hint(head, name, scope.blocks.get(kind, {})) or did_you_mean(name, scope.blocks.get(kind, {}))
        declared = sorted(scope.blocks.get(kind, {}))
        if not hint:
            hint = f"declared {kind}s: {', '.join(declared)}" if declared else f"no {kind} is declared"
        diags.append(Diagnostic.error(f"Unknown {kind} `{name}`", span, hint))
        return V(INVALID, span)
    return V(BlockRef(kind, name), span)


def _dash_hint(head: str, name: str, known) -> str:
    """`var.n-1` reads a name `n-1`: names may contain dashes."""
    for i, ch in enumerate(name):
        if ch == "-" and name[:i] in known:
            return f"`{name}` is one name (names may contain dashes); write `{head}.{name[:i]} - {name[i + 1:]}` with spaces to subtract"
    return ""
