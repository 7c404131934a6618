"""Syntax model -> canonical text (what `specdsl fmt` writes).

Layout rules (deterministic from the model, so `fmt(fmt(x)) == fmt(x)`):
- two-space indent; one blank line between top-level blocks; blank lines
  inside a body kept (at most one);
- `=` aligned across a run of consecutive one-line attributes (a run ends at
  a blank line, a comment line, a nested block or a multi-line value);
- a list or map written over several lines stays multi-line (one item a line,
  trailing comma); one written on one line stays there while it fits in 100
  columns and carries no comments;
- a block whose body is a single short attribute prints on one line;
- map keys are bare names when they can be, otherwise quoted strings;
- numbers print so that they read back as the same value; operators get
  parentheses only where precedence needs them.
Comments are kept: leading comments above their item, trailing ones after it.
"""

from __future__ import annotations

import re

from specdsl.model import ast

WIDTH = 100
INDENT = "  "
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(-[A-Za-z0-9_]+)*\Z")
KEYWORDS = frozenset({"import", "extends", "assert", "and", "or", "not", "true", "false"})

_PREC = {"or": 1, "and": 2, "==": 4, "!=": 4, "<": 4, "<=": 4, ">": 4, ">=": 4, "+": 5, "-": 5, "*": 6, "/": 6}


def format_file(file: ast.File) -> str:
    out: list[str] = []
    prev = None
    for stmt in file.statements:
        if prev is not None and not (isinstance(prev, ast.Import) and isinstance(stmt, ast.Import) and not stmt.blank_before):
            out.append("")
        if isinstance(stmt, ast.Import):
            _leading(out, stmt.comments, "")
            out.append(_trail(f"import {quote(stmt.path)}", stmt.comments))
        elif isinstance(stmt, ast.Block):
            _block(out, stmt, "")
        else:  # a variables file: attributes at top level
            _leading(out, stmt.comments, "")
            out.extend(_attr_lines(stmt, "", 0))
        prev = stmt
    if file.end_comments:
        if out:
            out.append("")
        out.extend(file.end_comments)
    return "\n".join(out) + "\n" if out else ""


def quote(text: str) -> str:
    out = ['"']
    for ch in text:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F or ch in "\u2028\u2029\x85":
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def key_text(key: str) -> str:
    return key if _NAME.match(key) and key not in KEYWORDS else quote(key)


def number_text(value: int | float) -> str:
    if isinstance(value, bool):
        raise TypeError("a bool is not a number")
    if isinstance(value, int):
        return str(value)
    text = repr(float(value))
    return text


# ---- blocks and bodies


def _leading(out: list[str], comments: ast.Comments, indent: str) -> None:
    out.extend(indent + c if c else "" for c in comments.leading)


def _trail(line: str, comments: ast.Comments) -> str:
    return f"{line}  {comments.trailing}" if comments.trailing else line


def _block(out: list[str], block: ast.Block, indent: str) -> None:
    _leading(out, block.comments, indent)
    head = block.kind
    if block.label is not None:
        head += " " + quote(block.label)
    if block.extends is not None:
        head += " extends " + block.extends.dotted
    one = _one_line_body(block.body, block.end_comments, len(indent) + len(head) + 1)
    if one is not None:
        out.append(_trail(f"{indent}{head} {one}", block.comments))
        return
    out.append(f"{indent}{head} {{")
    _body(out, block.body, indent + INDENT)
    out.extend(indent + INDENT + c if c else "" for c in block.end_comments)
    out.append(_trail(f"{indent}}}", block.comments))


def _one_line_body(body: tuple, end_comments: tuple, used: int) -> str | None:
    """`{ name = value }` when the body is one short, comment-free attribute."""
    if end_comments or len(body) > 1:
        return None
    if not body:
        return "{}"
    item = body[0]
    if not isinstance(item, ast.Attribute) or item.comments != ast.NO_COMMENTS:
        return None
    value = inline(item.value)
    if value is None:
        return None
    text = f"{{ {item.name} = {value} }}"
    return text if used + len(text) <= WIDTH else None


def _body(out: list[str], items: tuple, indent: str) -> None:
    # Group consecutive one-line attributes to align their `=`.
    rendered: list[tuple[object, list[str] | None]] = []
    for item in items:
        if isinstance(item, ast.Attribute):
            value = inline(item.value)
            if value is not None and len(indent) + len(item.name) + 3 + len(value) <= WIDTH:
                rendered.append((item, None))
                continue
        rendered.append((item, []))
    run: list[ast.Attribute] = []

    def flush() -> None:
        width = max((len(a.name) for a in run), default=0)
        for a in run:
            _leading(out, a.comments, indent)
            out.append(_trail(f"{indent}{a.name.ljust(width)} = {inline(a.value)}", a.comments))
        run.clear()

    for i, (item, lines) in enumerate(rendered):
        starts_group = item.blank_before or bool(item.comments.leading)
        if run and (lines is not None or starts_group):
            flush()
        if item.blank_before and i > 0:
            out.append("")
        if lines is None:
            run.append(item)
            continue
        if isinstance(item, ast.Block):
            _block(out, item, indent)
        elif isinstance(item, ast.Assert):
            _leading(out, item.comments, indent)
            out.append(_trail(f"{indent}assert {quote(item.name)} {{ {expr_text(item.expr)} }}", item.comments))
        else:
            _leading(out, item.comments, indent)
            out.extend(_attr_lines(item, indent, 0))
    flush()


def _attr_lines(item: ast.Attribute, indent: str, align: int) -> list[str]:
    head = f"{indent}{item.name.ljust(align)} = "
    lines = _value_lines(item.value, indent, len(head))
    lines[0] = head + lines[0]
    lines[-1] = _trail(lines[-1], item.comments)
    return lines


def _value_lines(value: ast.Expr, indent: str, used: int) -> list[str]:
    """A value as lines; the first line continues the current one."""
    text = inline(value)
    if text is not None and used + len(text) <= WIDTH:
        return [text]
    inner = indent + INDENT
    if isinstance(value, ast.ListExpr):
        lines = ["["]
        for n, elem in enumerate(value.items):
            comments = value.comments[n] if value.comments else ast.NO_COMMENTS
            _leading(lines, comments, inner)
            sub = _value_lines(elem, inner, len(inner))
            sub[0] = inner + sub[0]
            sub[-1] = _trail(sub[-1] + ",", comments)
            lines.extend(sub)
        lines.append(indent + "]")
        return lines
    if isinstance(value, ast.MapExpr):
        lines = ["{"]
        width = max((len(key_text(i.key)) for i in value.items), default=0)
        for item in value.items:
            _leading(lines, item.comments, inner)
            head = f"{inner}{key_text(item.key).ljust(width)} = "
            sub = _value_lines(item.value, inner, len(head))
            sub[0] = head + sub[0]
            sub[-1] = _trail(sub[-1] + ",", item.comments)
            lines.extend(sub)
        lines.extend(inner + c if c else "" for c in value.end_comments)
        lines.append(indent + "}")
        return lines
    if isinstance(value, ast.Override):
        lines = [value.ref.dotted + " {"]
        _body(lines, value.body, inner)
        lines.extend(inner + c if c else "" for c in value.end_comments)
        lines.append(indent + "}")
        return lines
    return [expr_text(value)]


# ---- expressions


def inline(value: ast.Expr) -> str | None:
    """The value on one line, or None when it must span lines (a multi-line
    list or map, comments inside, an override with several attributes)."""
    if isinstance(value, ast.ListExpr):
        if value.multiline and value.items or value.comments:
            return None
        parts = [inline(v) for v in value.items]
        return None if None in parts else "[" + ", ".join(parts) + "]"
    if isinstance(value, ast.MapExpr):
        if not value.items:
            return "{}" if not value.end_comments else None
        if value.multiline or value.end_comments or any(i.comments != ast.NO_COMMENTS for i in value.items):
            return None
        parts = []
        for item in value.items:
            v = inline(item.value)
            if v is None:
                return None
            parts.append(f"{key_text(item.key)} = {v}")
        return "{ " + ", ".join(parts) + " }"
    if isinstance(value, ast.Override):
        body = _one_line_body(value.body, value.end_comments, 0)
        return None if body is None else f"{value.ref.dotted} {body}"
    return expr_text(value)


def _prec(e: ast.Expr) -> int:
    if isinstance(e, ast.BinOp):
        return _PREC[e.op]
    if isinstance(e, ast.Not):
        return 3
    if isinstance(e, ast.Neg):
        return 7
    if isinstance(e, (ast.Number, ast.Quantity)) and str(e.value).startswith("-"):
        return 7  # a negative literal reads like a unary minus
    return 8


def expr_text(e: ast.Expr) -> str:
    if isinstance(e, ast.Number):
        return number_text(e.value)
    if isinstance(e, ast.Quantity):
        return number_text(e.value) + e.unit
    if isinstance(e, ast.String):
        return quote(e.value)
    if isinstance(e, ast.Bool):
        return "true" if e.value else "false"
    if isinstance(e, ast.Ref):
        return e.dotted
    if isinstance(e, ast.Call):
        return f"{e.func}(" + ", ".join(expr_text(a) for a in e.args) + ")"
    if isinstance(e, (ast.Not, ast.Neg)):
        return _unary_text(e)
    if isinstance(e, ast.BinOp):
        return _binop_text(e)
    text = inline(e)
    if text is None:  # a multi-line structure inside an expression: force one line
        return _force_inline(e)
    return text


# Chains are printed without recursion along them: the builder accepts 500
# operands in one chain (`1 - 1 - ... - 1` is 499 BinOps deep on the left)
# and as many unary operators, more than Python's recursion limit allows
# one or two frames each. What is left recursive (a parenthesized operand, a
# right operand of lower precedence) is bounded by the 64 levels of brackets.


def _left_parens(op: ast.BinOp) -> bool:
    p = _PREC[op.op]
    return _prec(op.left) <= 4 if p == 4 else _prec(op.left) < p  # comparisons do not chain


def _right_parens(op: ast.BinOp) -> bool:
    p = _PREC[op.op]
    return _prec(op.right) <= 4 if p == 4 else _prec(op.right) <= p


def _binop_text(e: ast.BinOp) -> str:
    spine = [e]  # the left spine printed without parentheses, outermost first
    while isinstance(spine[-1].left, ast.BinOp) and not _left_parens(spine[-1]):
        spine.append(spine[-1].left)
    innermost = spine[-1]
    parts = [_paren(innermost.left, _left_parens(innermost))]
    for op in reversed(spine):
        parts.append(f" {op.op} {_paren(op.right, _right_parens(op))}")
    return "".join(parts)


def _unary_text(e: ast.Expr) -> str:
    ops = [e]  # `not not x`, `- -x`: the operators, outermost first
    operand = e.operand
    while isinstance(operand, (ast.Not, ast.Neg)) and not _unary_parens(ops[-1]):
        ops.append(operand)
        operand = operand.operand
    text = _paren(operand, _unary_parens(ops[-1]))
    for op in reversed(ops):
        if isinstance(op, ast.Not):
            text = "not " + text
        else:
            text = "- " + text if text.startswith("-") else "-" + text
    return text


def _unary_parens(op: ast.Expr) -> bool:
    return _prec(op.operand) < (3 if isinstance(op, ast.Not) else 7)


def _force_inline(e: ast.Expr) -> str:
    if isinstance(e, ast.ListExpr):
        return "[" + ", ".join(expr_text(v) for v in e.items) + "]"
    if isinstance(e, ast.MapExpr):
        if not e.items:
            return "{}"
        return "{ " + ", ".join(f"{key_text(i.key)} = {expr_text(i.value)}" for i in e.items) + " }"
    if isinstance(e, ast.Override):
        return e.ref.dotted + " { " + " ".join(_force_item(i) for i in e.body) + " }"
    raise TypeError(f"cannot print {type(e).__name__}")


def _force_item(item) -> str:
    if isinstance(item, ast.Attribute):
        return f"{item.name} = {expr_text(item.value)}"
    if isinstance(item, ast.Assert):
        return f"assert {quote(item.name)} {{ {expr_text(item.expr)} }}"
    head = item.kind + (" " + quote(item.label) if item.label is not None else "")
    return head + " { " + " ".join(_force_item(i) for i in item.body) + " }"


def _paren(e: ast.Expr, needed: bool) -> str:
    text = expr_text(e)
    return f"({text})" if needed else text


def canonical_expr_text(tree) -> str:
    """An expression's text from its canonical form (`config.canonical`, as
    a check step's content records its assertion)."""
    import json

    def build(node):
        if isinstance(node, list):
            return tuple(build(v) for v in node)
        if not isinstance(node, dict) or "__kind__" not in node:
            return node
        cls = getattr(ast, node["__kind__"])
        return cls(**{k: build(v) for k, v in node.items() if k != "__kind__"})

    try:
        return expr_text(build(tree))
    except (AttributeError, TypeError, ValueError):
        return json.dumps(tree, sort_keys=True)
