"""Lark tree -> syntax model (`specdsl.model.ast`), with comments attached.

`parse(text, filename)` is the entry point for one file: it returns the
`ast.File` (or None) and the diagnostics. The builder only reshapes the
tree; it reports the few things only it can see (bad string escapes,
unknown units, over-long operator chains) as diagnostics, never raises.
"""

from __future__ import annotations

import bisect
import math
import re

from lark import Token, Tree

from specdsl.diag import Diagnostic, Span
from specdsl.model import ast
from specdsl.syntax.parser import Comment, decode, parse_text

MAX_CHAIN = 500  # operands in one chain of binary operators
# Levels of one expression in all (operators, brackets, lists, maps): every
# later layer walks expressions recursively (hashing, evaluation, checks),
# and the CLI raises Python's recursion limit to fit this bound
# (specdsl.cli.main), so no expression the builder accepts can exhaust it.
MAX_DEPTH = 1000

_BINOPS = {"or_": "or", "and_": "and", "add": "+", "sub": "-", "mul": "*", "div": "/"}
_ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t", "r": "\r", "/": "/", "0": "\0"}
_NUMBER = re.compile(r"(\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)(.*)")


class _TooLong(Exception):
    def __init__(self, span: Span, deep: bool = False) -> None:
        self.span = span
        self.deep = deep


def depth(expr: ast.Expr) -> int:
    """How many levels an expression nests (a literal is 1), counted without recursion."""
    deepest, todo = 0, [(expr, 1)]
    while todo:
        node, level = todo.pop()
        deepest = max(deepest, level)
        if isinstance(node, ast.BinOp):
            children = (node.left, node.right)
        elif isinstance(node, (ast.Not, ast.Neg)):
            children = (node.operand,)
        elif isinstance(node, (ast.ListExpr, ast.Call)):
            children = node.items if isinstance(node, ast.ListExpr) else node.args
        elif isinstance(node, ast.MapExpr):
            children = tuple(item.value for item in node.items)
        elif isinstance(node, ast.Override):
            children = tuple(item.value for item in node.body if isinstance(item, ast.Attribute))
        else:
            continue
        todo.extend((child, level + 1) for child in children)
    return deepest


def parse_bytes(data: bytes, filename: str, start: str = "start") -> tuple[ast.File | None, list[Diagnostic], str | None]:
    """Decode and parse; returns (file, diagnostics, text)."""
    text, diag = decode(data, filename)
    if text is None:
        return None, [diag], None
    file, diags = parse(text, filename, start)
    return file, diags, text


def parse(text: str, filename: str, start: str = "start") -> tuple[ast.File | None, list[Diagnostic]]:
    tree, comments, diags = parse_text(text, filename, start)
    if tree is None:
        return None, diags
    builder = _Builder(filename, comments)
    try:
        file = builder.file(tree)
    except _TooLong as exc:
        if exc.deep:
            return None, [
                Diagnostic.error(
                    "Expression nested too deeply",
                    exc.span,
                    f"an expression may nest at most {MAX_DEPTH} levels (operators, brackets, lists, maps) in all; "
                    "split it up.",
                )
            ]
        return None, [
            Diagnostic.error(
                "Expression too long",
                exc.span,
                f"one chain of operators may hold at most {MAX_CHAIN} operands; split it up.",
            )
        ]
    return file, builder.diags


def _pos(node) -> tuple[int, int]:
    if isinstance(node, Token):
        return node.line, node.column
    return node.meta.line, node.meta.column


def _end(node) -> tuple[int, int]:
    if isinstance(node, Token):
        return node.end_line, node.end_column
    return node.meta.end_line, node.meta.end_column


class _Comments:
    """Assigns each comment to an anchor: trailing (same line, after the end
    of an item) or leading (before the next item or closing bracket)."""

    def __init__(self, comments: list[Comment], anchors: list[tuple[int, int, int, int, tuple]]) -> None:
        self.leading: dict[tuple, list[Comment]] = {}
        self.trailing: dict[tuple, str] = {}
        if not comments:
            return
        anchors.sort(key=lambda a: (a[0], a[1], -a[2], -a[3]))
        starts = [(a[0], a[1]) for a in anchors]
        ends_on_line: dict[int, list[tuple]] = {}
        for a in anchors:
            ends_on_line.setdefault(a[2], []).append(a)
        for c in comments:
            owner = None
            for a in ends_on_line.get(c.line, ()):
                if a[3] <= c.col and a[4][0] != "end" and (owner is None or (a[0], a[1]) < (owner[0], owner[1])):
                    owner = a
            if owner is not None and owner[4] not in self.trailing:
                self.trailing[owner[4]] = c.text
                continue
            i = bisect.bisect_right(starts, (c.line, c.col))
            key = anchors[i][4] if i < len(anchors) else ("eof",)
            self.leading.setdefault(key, []).append(c)

    def of(self, key: tuple) -> ast.Comments:
        lead, trail = self.leading.get(key), self.trailing.get(key)
        if lead is None and trail is None:
            return ast.NO_COMMENTS
        return ast.Comments(_with_gaps(lead or ()), trail)

    def at_end(self, key: tuple) -> tuple[str, ...]:
        return _with_gaps(self.leading.get(key, ()))


def _with_gaps(comments) -> tuple[str, ...]:
    """Comment texts, with "" where blank lines separated two of them (the
    printer writes it back as one blank line)."""
    out: list[str] = []
    prev = None
    for c in comments:
        if prev is not None and c.line > prev.line + 1:
            out.append("")
        out.append(c.text)
        prev = c
    return tuple(out)


def _anchors(tree: Tree) -> list[tuple[int, int, int, int, tuple]]:
    """Every place a comment can attach: items of bodies, lists and maps, and
    the closing bracket of each."""
    out = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if not isinstance(node, Tree):
            continue
        if node.data in ("start", "varfile", "body", "list", "map"):
            for child in node.children:
                if isinstance(child, Tree) or (isinstance(child, Token) and child.type not in _PUNCT):
                    out.append((*_pos(child), *_end(child), ("item", *_pos(child))))
            if node.data in ("body", "list", "map") and node.children:
                close = node.children[-1]
                out.append((*_pos(close), *_end(close), ("end", *_pos(close))))
        stack.extend(node.children)
    return out


_PUNCT = {"LBRACE", "RBRACE", "LSQB", "RSQB", "COMMA", "LPAR", "RPAR", "EQUAL", "DOT"}


class _Builder:
    def __init__(self, filename: str, comments: list[Comment]) -> None:
        self.filename = filename
        self.diags: list[Diagnostic] = []
        self.raw_comments = comments
        self.comments: _Comments | None = None

    # ---- helpers
    def span(self, node) -> Span:
        (l1, c1), (l2, c2) = _pos(node), _end(node)
        return Span(self.filename, l1, c1, l2, c2)

    def span2(self, first, last) -> Span:
        (l1, c1), (l2, c2) = _pos(first), _end(last)
        return Span(self.filename, l1, c1, l2, c2)

    def item_comments(self, node) -> ast.Comments:
        return self.comments.of(("item", *_pos(node)))

    def end_comments(self, close: Token) -> tuple[str, ...]:
        return self.comments.at_end(("end", *_pos(close)))

    def blank_before(self, node, prev_end_line: int | None) -> bool:
        """A blank line between the previous sibling and this item (or its
        first leading comment)."""
        if prev_end_line is None:
            return False
        lead = self.comments.leading.get(("item", *_pos(node)))
        line = lead[0].line if lead else _pos(node)[0]
        return line > prev_end_line + 1

    # ---- file and statements
    def file(self, tree: Tree) -> ast.File:
        self.comments = _Comments(self.raw_comments, _anchors(tree))
        statements, prev_end = [], None
        for child in tree.children:
            blank = self.blank_before(child, prev_end)
            if child.data == "import_stmt":
                statements.append(
                    ast.Import(
                        self.string(child.children[1]),
                        self.span(child),
                        path_span=self.span(child.children[1]),
                        comments=self.item_comments(child),
                        blank_before=blank,
                    )
                )
            elif child.data == "block":
                statements.append(self.block(child, blank))
            else:  # varfile: attributes
                statements.append(self.body_item(child, blank))
            prev_end = _end(child)[0]
        return ast.File(tuple(statements), self.filename, end_comments=self.comments.at_end(("eof",)))

    def block(self, node: Tree, blank: bool = False) -> ast.Block:
        kind_tok = node.children[0]
        label = label_span = extends = None
        body = None
        for child in node.children[1:]:
            if isinstance(child, Token) and child.type == "STRING":
                label, label_span = self.string(child), self.span(child)
            elif isinstance(child, Tree) and child.data == "extends":
                extends = self.ref(child.children[1])
            elif isinstance(child, Tree) and child.data == "body":
                body = child
        items, close = self.body(body)
        return ast.Block(
            str(kind_tok),
            label,
            extends,
            items,
            span=self.span(node),
            kind_span=self.span(kind_tok),
            label_span=label_span,
            comments=self.item_comments(node),
            end_comments=self.end_comments(close),
            blank_before=blank,
        )

    def body(self, node: Tree) -> tuple[tuple, Token]:
        items, prev_end = [], None
        for child in node.children[1:-1]:
            items.append(self.body_item(child, self.blank_before(child, prev_end)))
            prev_end = _end(child)[0]
        return tuple(items), node.children[-1]

    def body_item(self, node: Tree, blank: bool):
        if node.data == "attribute":
            name = node.children[0]
            return ast.Attribute(
                str(name),
                self.checked_depth(self.expr(node.children[2])),
                span=self.span(node),
                name_span=self.span(name),
                comments=self.item_comments(node),
                blank_before=blank,
            )
        if node.data == "assert_block":
            return ast.Assert(
                self.string(node.children[1]),
                self.checked_depth(self.expr(node.children[3])),
                span=self.span(node),
                comments=self.item_comments(node),
                blank_before=blank,
            )
        return self.block(node, blank)

    # ---- expressions
    def checked_depth(self, expr: ast.Expr) -> ast.Expr:
        if depth(expr) > MAX_DEPTH:
            raise _TooLong(expr.span, deep=True)
        return expr

    def expr(self, node) -> ast.Expr:
        data = node.data
        if data in _BINOPS or data == "compare":
            return self.chain(node)
        if data == "number":
            return self.number(node.children[0])
        if data == "string":
            return ast.String(self.string(node.children[0]), self.span(node))
        if data in ("true", "false"):
            return ast.Bool(data == "true", self.span(node))
        if data == "ref":
            return self.ref(node)
        if data == "override":
            items, close = self.body(node.children[1])
            return ast.Override(self.ref(node.children[0]), items, self.span(node), end_comments=self.end_comments(close))
        if data == "call":
            args = tuple(self.expr(c) for c in node.children[2:-1] if isinstance(c, Tree))
            return ast.Call(str(node.children[0]), args, self.span(node))
        if data == "list":
            elems = [c for c in node.children[1:-1] if isinstance(c, Tree)]
            comments = tuple(self.item_comments(c) for c in elems)
            if all(c is ast.NO_COMMENTS for c in comments):
                comments = ()
            return ast.ListExpr(
                tuple(self.expr(c) for c in elems),
                self.span(node),
                multiline=_pos(node)[0] != _end(node)[0],
                comments=comments,
            )
        if data == "map":
            items = []
            for c in node.children[1:-1]:
                if isinstance(c, Tree):
                    key = c.children[0]
                    quoted = key.type == "STRING"
                    items.append(
                        ast.MapItem(
                            self.string(key) if quoted else str(key),
                            self.expr(c.children[2]),
                            quoted=quoted,
                            span=self.span(c),
                            comments=self.item_comments(c),
                        )
                    )
            return ast.MapExpr(
                tuple(items),
                self.span(node),
                multiline=_pos(node)[0] != _end(node)[0],
                end_comments=self.end_comments(node.children[-1]),
            )
        if data == "paren":
            return self.expr(node.children[1])
        if data in ("not_", "neg"):
            return self.unary(node)
        raise AssertionError(f"unknown tree node {data}")  # a grammar/builder mismatch: a bug

    def unary(self, node: Tree) -> ast.Expr:
        # `not not ... x` and `- - ... x` are built without recursion.
        ops = []
        while isinstance(node, Tree) and node.data in ("not_", "neg"):
            ops.append(node)
            node = node.children[1]
            if len(ops) > MAX_CHAIN:
                raise _TooLong(self.span(ops[0]))
        result = self.expr(node)
        for op in reversed(ops):
            span = self.span2(op.children[0], op)
            if op.data == "neg":
                if isinstance(result, ast.Number) and not _is_negative(result.value):
                    result = ast.Number(-result.value, span)
                elif isinstance(result, ast.Quantity) and not _is_negative(result.value):
                    result = ast.Quantity(-result.value, result.unit, span)
                else:
                    result = ast.Neg(result, span)
            else:
                result = ast.Not(result, span)
        return result

    def chain(self, node: Tree) -> ast.Expr:
        # Left-associative chains are built without recursion on the left spine.
        spine = []
        while isinstance(node, Tree) and (node.data in _BINOPS or node.data == "compare"):
            spine.append(node)
            node = node.children[0]
            if len(spine) > MAX_CHAIN:
                raise _TooLong(self.span(spine[0]))
        result = self.expr(node)
        for op in reversed(spine):
            symbol = str(op.children[1]) if op.data == "compare" else _BINOPS[op.data]
            result = ast.BinOp(symbol, result, self.expr(op.children[2]), self.span(op))
        return result

    def ref(self, node: Tree) -> ast.Ref:
        parts = tuple(str(c) for c in node.children if c.type == "NAME")
        return ast.Ref(parts, self.span(node))

    def number(self, tok: Token) -> ast.Expr:
        digits, unit = _NUMBER.match(str(tok)).groups()
        is_float = "." in digits or "e" in digits.lower()
        try:
            value = float(digits) if is_float else int(digits)
        except ValueError:  # an integer longer than Python converts (4,300 digits)
            value = math.inf
        span = self.span(tok)
        if value == math.inf:  # kept as inf: evaluation treats it as invalid, so one error
            self.diags.append(Diagnostic.error("Number out of range", span, "write a smaller number"))
        if not unit:
            return ast.Number(value, span)
        if unit not in ast.UNITS:  # reported here; evaluation treats it as invalid
            self.diags.append(
                Diagnostic.error(
                    f"Unknown unit `{unit}`",
                    span,
                    "units are ms, s, m, h (durations) and % (percentages), written right after the number: `20m`, `3%`",
                )
            )
        return ast.Quantity(value, unit, span)

    def string(self, tok: Token) -> str:
        raw = str(tok)[1:-1]
        if "\\" not in raw:
            return raw
        out, i = [], 0
        while i < len(raw):
            ch = raw[i]
            if ch != "\\":
                out.append(ch)
                i += 1
                continue
            nxt = raw[i + 1]
            if nxt in _ESCAPES:
                out.append(_ESCAPES[nxt])
                i += 2
            elif nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", raw[i + 2 : i + 6]):
                out.append(chr(int(raw[i + 2 : i + 6], 16)))
                i += 6
            else:
                col = tok.column + 1 + i
                self.diags.append(
                    Diagnostic.error(
                        f"Unknown escape `\\{nxt}` in string",
                        Span(self.filename, tok.line, col, tok.line, col + 2),
                        'escapes are \\" \\\\ \\n \\t \\r \\/ \\0 and \\uXXXX; write a backslash as \\\\',
                    )
                )
                out.append(nxt)
                i += 2
        return "".join(out)


def _is_negative(value: float) -> bool:
    return value < 0 or (value == 0 and str(value).startswith("-"))
