"""Text -> lark tree, with friendly, located syntax errors.

The LALR parser is built once from grammar/spec.lark (shipped in the wheel
as `specdsl.grammar`) and cached on disk by lark. Comments are collected by
the lexer so the formatter can keep them. Whatever the bytes, `parse_text`
returns a tree or diagnostics, never raises on bad input.
"""

from __future__ import annotations

import functools
import re
import threading
from pathlib import Path

import attrs
import lark
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from specdsl.diag import Diagnostic, Span

MAX_BYTES = 2 * 1024 * 1024
MAX_NESTING = 64
# LALR in pure Python costs some microseconds per token: bounding the tokens
# bounds the time any 2 MB file can take (a real spec has a few thousand).
MAX_TOKENS = 50_000
_TERMINALS = (
    "AND", "ASSERT", "COMMA", "COMP_OP", "DOT", "EQUAL", "EXTENDS", "FALSE", "IMPORT", "MINUS", "NAME", "NOT",
    "NUMBER", "OR", "PLUS", "SLASH", "STAR", "STRING", "TRUE",
)

_TOKEN_NAMES = {
    "NAME": "a name",
    "STRING": "a string",
    "NUMBER": "a number",
    "LBRACE": "`{`",
    "RBRACE": "`}`",
    "LSQB": "`[`",
    "RSQB": "`]`",
    "LPAR": "`(`",
    "RPAR": "`)`",
    "EQUAL": "`=`",
    "COMMA": "`,`",
    "DOT": "`.`",
    "COMP_OP": "a comparison",
    "PLUS": "`+`",
    "MINUS": "`-`",
    "STAR": "`*`",
    "SLASH": "`/`",
    "$END": "end of file",
}
_OPENERS = {"LPAR", "LSQB", "LBRACE"}
_CLOSERS = {"RPAR", "RSQB", "RBRACE"}


@attrs.frozen
class Comment:
    line: int
    col: int
    text: str


class _TooDeep(Exception):
    def __init__(self, token: lark.Token) -> None:
        self.token = token


class _TooMany(_TooDeep):
    pass


class _LexState(threading.local):
    def __init__(self) -> None:
        self.comments: list[Comment] = []
        self.open: list[lark.Token] = []  # brackets opened and not yet closed
        self.tokens = 0


_lex = _LexState()


def _on_token(tok: lark.Token) -> lark.Token:
    _lex.tokens += 1
    if _lex.tokens > MAX_TOKENS:
        raise _TooMany(tok)
    return tok


def _on_comment(tok: lark.Token) -> lark.Token:
    _on_token(tok)
    _lex.comments.append(Comment(tok.line, tok.column, str(tok).rstrip()))
    return tok


def _on_open(tok: lark.Token) -> lark.Token:
    _on_token(tok)
    _lex.open.append(tok)
    if len(_lex.open) > MAX_NESTING:
        raise _TooDeep(tok)
    return tok


def _on_close(tok: lark.Token) -> lark.Token:
    _on_token(tok)
    if _lex.open:
        _lex.open.pop()
    return tok


def grammar_text() -> str:
    # A plain path (not importlib.resources, whose import costs more than the
    # rest of validation): the wheel ships specdsl/grammar/spec.lark, and in a
    # checkout specdsl/grammar links to the top-level grammar/ folder.
    return (Path(__file__).resolve().parents[1] / "grammar" / "spec.lark").read_text()


@functools.cache
def get_parser() -> lark.Lark:
    callbacks = {name: _on_token for name in _TERMINALS}
    callbacks["COMMENT"] = _on_comment
    callbacks.update({name: _on_open for name in _OPENERS})
    callbacks.update({name: _on_close for name in _CLOSERS})
    parser = lark.Lark(
        grammar_text(),
        parser="lalr",
        propagate_positions=True,
        maybe_placeholders=False,
        keep_all_tokens=True,
        start=["start", "varfile"],
        lexer_callbacks=callbacks,
        cache=True,
    )
    # every terminal is counted (WS is skipped by the lexer before callbacks matter)
    assert {t.name for t in parser.terminals} <= set(callbacks) | {"WS"}, "grammar terminals changed: update _TERMINALS"
    return parser


def decode(data: bytes, filename: str) -> tuple[str | None, Diagnostic | None]:
    """Bytes -> text, or a located error for a file that is not UTF-8 or too big."""
    if len(data) > MAX_BYTES:
        return None, Diagnostic.error(
            "Spec file is too large",
            Span(filename, 1, 1),
            f"the file has {len(data):,} bytes; specdsl reads spec files of at most "
            f"{MAX_BYTES:,} bytes. Split it with `import`.",
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = data[: exc.start]
        line = before.count(b"\n") + 1
        col = len(before[before.rfind(b"\n") + 1 :].decode("utf-8", "replace")) + 1  # in characters
        return None, Diagnostic.error(
            "File is not valid UTF-8",
            Span(filename, line, col, line, col + 1),
            f"byte 0x{data[exc.start]:02x} at offset {exc.start} cannot be decoded; save the file as UTF-8.",
        )
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\x00" in text:
        pos = text.index("\x00")
        line = text.count("\n", 0, pos) + 1
        col = pos - (text.rfind("\n", 0, pos) + 1) + 1
        return None, Diagnostic.error(
            "File contains a NUL byte", Span(filename, line, col), "a spec is a text file; is this the right file?"
        )
    return text, None


def parse_text(text: str, filename: str, start: str = "start") -> tuple[lark.Tree | None, list[Comment], list[Diagnostic]]:
    """Parse text; returns (tree or None, comments, diagnostics)."""
    _lex.comments = []
    _lex.open = []
    _lex.tokens = 0
    try:
        tree = get_parser().parse(text, start=start)
    except _TooMany as exc:
        tok = exc.token
        return None, [], [
            Diagnostic.error(
                "Spec file has too many tokens",
                Span(filename, tok.line, tok.column, tok.line, tok.column + 1),
                f"specdsl reads at most {MAX_TOKENS:,} tokens (names, numbers, strings, punctuation) per file; "
                "split it with `import`.",
            )
        ]
    except _TooDeep as exc:
        tok = exc.token
        return None, [], [
            Diagnostic.error(
                "Brackets nested too deeply",
                Span(filename, tok.line, tok.column, tok.line, tok.column + 1),
                f"specdsl accepts at most {MAX_NESTING} levels of nested brackets; simplify the expression.",
            )
        ]
    except UnexpectedInput as exc:
        spaced = _spaced_unit(text, getattr(exc, "line", None) or len(text.splitlines()), filename)
        return None, [], [spaced or _syntax_error(exc, text, filename)]
    comments = list(_lex.comments)
    return tree, comments, []


_UNIT_NAMES = {"ms": "milliseconds", "s": "seconds", "m": "minutes", "h": "hours", "%": "percent"}
# a number, blanks, then a unit standing alone: `10 m`, `500 ms`, `3 %` (not `10 ms_x`, not in a string)
_SPACED = re.compile(r'(?<![\w.])(\d+(?:\.\d+)?)[ \t]+(ms|s|m|h|%)(?![\w.])')


def _code_part(line: str) -> str:
    """`line` up to a comment, its strings blanked (a unit inside a string is text)."""
    out, quoted, i = [], False, 0
    while i < len(line):
        c = line[i]
        if quoted:
            out.append(" ")
            if c == "\\":
                out.append(" ")
                i += 1
            elif c == '"':
                quoted = False
        elif c == '"':
            quoted = True
            out.append(" ")
        elif c == "#" or line.startswith("//", i):
            break
        else:
            out.append(c)
        i += 1
    return "".join(out)


def _spaced_unit(text: str, upto: int, filename: str) -> Diagnostic | None:
    """A syntax error caused by a number written apart from its unit
    (`ready_timeout = 10 m`), located at the value, or None. Lark reports
    such a value at the next token it cannot place (often a later line)."""
    found = None
    for n, line in enumerate(text.splitlines()[:max(upto, 1)], 1):
        for m in _SPACED.finditer(_code_part(line)):
            found = (n, m)
    if found is None:
        return None
    n, m = found
    number, unit = m.group(1), m.group(2)
    return Diagnostic.error(
        f"A number and its unit are written together: `{number}{unit}`",
        Span(filename, n, m.start() + 1, n, m.end() + 1),
        f"`{m.group(0)}` reads as the number {number} and then `{unit}`; write `{number}{unit}` ({number} {_UNIT_NAMES[unit]})",
    )


def _expected(names) -> str:
    words = sorted({_TOKEN_NAMES.get(n, f"`{n.lower()}`" if n.isupper() and len(n) < 8 else n) for n in names})
    words = [w for w in words if not w.startswith("`__")]
    if len(words) > 6:
        return ""
    return "expected " + (", ".join(words[:-1]) + " or " + words[-1] if len(words) > 1 else words[0])


def _syntax_error(exc: UnexpectedInput, text: str, filename: str) -> Diagnostic:
    line, col = getattr(exc, "line", 1) or 1, getattr(exc, "column", 1) or 1
    if isinstance(exc, UnexpectedCharacters):
        ch = text[exc.pos_in_stream] if exc.pos_in_stream < len(text) else ""
        if ch == '"':
            return Diagnostic.error(
                "Unterminated string",
                Span(filename, line, col, line, col + 1),
                "close the string with `\"` on the same line; write a newline inside a string as `\\n`.",
            )
        shown = repr(ch)[1:-1] if ch.isprintable() else f"\\x{ord(ch):02x}" if ord(ch) < 256 else repr(ch)
        return Diagnostic.error(
            f"Unexpected character `{shown}`",
            Span(filename, line, col, line, col + 1),
            _expected(exc.allowed or ()) or "this character has no meaning here",
        )
    if isinstance(exc, UnexpectedToken) and exc.token.type != "$END":
        tok = exc.token
        width = max(1, len(str(tok)))
        hint = _expected(exc.expected)
        if tok.type == "EQUAL" and "STRING" in exc.expected:
            hint = "a block is written `KIND \"name\" { ... }`; attributes go inside a block"
        elif tok.type == "COMP_OP":
            hint = "comparisons do not chain: write `a < b and b < c`"
        return Diagnostic.error(
            f"Unexpected {_describe(tok)}",
            Span(filename, tok.line, tok.column, tok.line, tok.column + width),
            hint,
        )
    # end of file
    lines = text.splitlines() or [""]
    last = len(lines)
    detail = _expected(getattr(exc, "expected", ()) or ())
    if _lex.open:  # the lexer saw every token: these brackets never closed
        tok = _lex.open[-1]
        closer = {"{": "}", "[": "]", "(": ")"}[str(tok)]
        detail = f"a `{closer}` is missing: the `{tok}` at line {tok.line}, column {tok.column} is never closed"
    return Diagnostic.error(
        "Unexpected end of file",
        Span(filename, last, len(lines[-1]) + 1),
        detail,
    )


def _describe(tok: lark.Token) -> str:
    value = str(tok)
    if tok.type in ("NAME", "NUMBER"):
        return f"{tok.type.lower()} `{value[:40]}`"  # "Unexpected name `in`", not "a name"
    if tok.type == "STRING":
        return f"string {value[:40]}"
    return f"`{value[:40]}`"

