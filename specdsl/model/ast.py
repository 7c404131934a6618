"""The syntax model: a `.spec` file as written, before any resolution.

Frozen attrs nodes. Every node carries its source `span` with `eq=False`, and
layout hints (`multiline`, `blank_before`, comments) are also left out of
equality, so `parse(fmt(m)) == m` compares meaning, not layout.

Expressions: Number, Quantity, String, Bool, ListExpr, MapExpr, Ref,
Override, Call, BinOp, Not, Neg. Statements: Attribute, Assert, Block, Import.
"""

from __future__ import annotations

from typing import Union

import attrs

from specdsl.diag import Span

_span = lambda: attrs.field(default=None, eq=False, repr=False)  # noqa: E731
_layout = lambda default: attrs.field(default=default, eq=False, repr=False)  # noqa: E731

DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
UNITS = (*DURATION_UNITS, "%")


@attrs.frozen
class Comments:
    """Comments attached to a node by the parser, kept by the formatter."""

    leading: tuple[str, ...] = ()
    trailing: str | None = None


NO_COMMENTS = Comments()


@attrs.frozen
class Number:
    value: int | float
    span: Span | None = _span()


@attrs.frozen
class Quantity:
    """A number with a unit: a duration (`ms s m h`) or a percentage."""

    value: int | float
    unit: str
    span: Span | None = _span()

    def seconds(self) -> float:
        return self.value * DURATION_UNITS[self.unit]

    def fraction(self) -> float:
        return self.value / 100.0


@attrs.frozen
class String:
    value: str
    span: Span | None = _span()


@attrs.frozen
class Bool:
    value: bool
    span: Span | None = _span()


@attrs.frozen
class ListExpr:
    items: tuple["Expr", ...]
    span: Span | None = _span()
    multiline: bool = _layout(False)
    comments: tuple[Comments, ...] = _layout(())  # one per item, when any


@attrs.frozen
class MapItem:
    key: str
    value: "Expr"
    quoted: bool = _layout(False)  # key written as a string
    span: Span | None = _span()
    comments: Comments = _layout(NO_COMMENTS)


@attrs.frozen
class MapExpr:
    items: tuple[MapItem, ...]
    span: Span | None = _span()
    multiline: bool = _layout(False)
    end_comments: tuple[str, ...] = _layout(())

    def get(self, key: str) -> MapItem | None:
        for item in self.items:
            if item.key == key:
                return item
        return None


@attrs.frozen
class Ref:
    """A dotted reference: `stack.cu128`, `var.model`, `baseline.itl`."""

    parts: tuple[str, ...]
    span: Span | None = _span()

    @property
    def dotted(self) -> str:
        return ".".join(self.parts)


@attrs.frozen
class Override:
    """`server.kimi { args = { ... } }`: a block reference with changes."""

    ref: Ref
    body: tuple["BodyItem", ...]
    span: Span | None = _span()
    end_comments: tuple[str, ...] = _layout(())


@attrs.frozen
class Call:
    func: str
    args: tuple["Expr", ...]
    span: Span | None = _span()


@attrs.frozen
class BinOp:
    """Arithmetic (`+ - * /`), comparison (`== != < <= > >=`), `and`, `or`."""

    op: str
    left: "Expr"
    right: "Expr"
    span: Span | None = _span()


@attrs.frozen
class Not:
    operand: "Expr"
    span: Span | None = _span()


@attrs.frozen
class Neg:
    operand: "Expr"
    span: Span | None = _span()


Expr = Union[Number, Quantity, String, Bool, ListExpr, MapExpr, Ref, Override, Call, BinOp, Not, Neg]


@attrs.frozen
class Attribute:
    name: str
    value: Expr
    span: Span | None = _span()
    name_span: Span | None = _span()
    comments: Comments = _layout(NO_COMMENTS)
    blank_before: bool = _layout(False)


@attrs.frozen
class Assert:
    name: str
    expr: Expr
    span: Span | None = _span()
    comments: Comments = _layout(NO_COMMENTS)
    blank_before: bool = _layout(False)


@attrs.frozen
class Block:
    """`KIND "label" extends REF { body }` (label and extends optional)."""

    kind: str
    label: str | None
    extends: Ref | None
    body: tuple["BodyItem", ...]
    span: Span | None = _span()
    kind_span: Span | None = _span()
    label_span: Span | None = _span()
    comments: Comments = _layout(NO_COMMENTS)
    end_comments: tuple[str, ...] = _layout(())
    blank_before: bool = _layout(False)

    def attr(self, name: str) -> Attribute | None:
        for item in self.body:
            if isinstance(item, Attribute) and item.name == name:
                return item
        return None


@attrs.frozen
class Import:
    path: str
    span: Span | None = _span()
    path_span: Span | None = _span()  # the path's string: where a diagnostic about the imported file points
    comments: Comments = _layout(NO_COMMENTS)
    blank_before: bool = _layout(False)


BodyItem = Union[Attribute, Assert, Block]
Statement = Union[Block, Import]


@attrs.frozen
class File:
    statements: tuple[Statement, ...]
    filename: str = attrs.field(default="", eq=False)
    end_comments: tuple[str, ...] = _layout(())
