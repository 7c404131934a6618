"""Property tests (hypothesis): the printer and the parser agree, the
formatter is idempotent and keeps every comment, and mutated specs end in
success or a located error, never a traceback or a hang."""

from __future__ import annotations

import contextlib
import io
import random
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from specdsl.cli.main import main
from specdsl.model import ast
from specdsl.model.build import parse
from specdsl.model.printer import KEYWORDS, format_file

ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path(__file__).parent / "corpus"

# ---- generated syntax models

_name_re = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}(-[A-Za-z0-9_]{1,4}){0,2}", fullmatch=True)
names = _name_re.filter(lambda n: n not in KEYWORDS)
texts = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
comment_text = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), max_size=15)
comments_st = st.builds(lambda mark, t: (mark + " " + t).rstrip(), st.sampled_from(["#", "//"]), comment_text)
layout_comments = st.builds(
    ast.Comments, st.lists(comments_st, max_size=2).map(tuple), st.none() | comments_st
) | st.just(ast.NO_COMMENTS)

numbers = st.integers(min_value=-(10**12), max_value=10**12) | st.floats(allow_nan=False, allow_infinity=False, width=64)
literals = st.one_of(
    st.builds(ast.Number, numbers),
    st.builds(ast.Quantity, st.integers(0, 10**6) | st.floats(0, 1e6, allow_nan=False), st.sampled_from(ast.UNITS)),
    st.builds(ast.String, texts),
    st.builds(ast.Bool, st.booleans()),
)
refs = st.builds(ast.Ref, st.lists(names, min_size=1, max_size=3).map(tuple))


def _exprs(children):
    ops = st.sampled_from(["or", "and", "==", "!=", "<", "<=", ">", ">=", "+", "-", "*", "/"])
    return st.one_of(
        st.builds(ast.BinOp, ops, children, children),
        st.builds(ast.Not, children),
        st.builds(ast.Neg, refs | st.builds(ast.Call, names, st.lists(children, max_size=2).map(tuple))),
        st.builds(ast.Call, names, st.lists(children, max_size=3).map(tuple)),
        st.builds(ast.ListExpr, st.lists(children, max_size=3).map(tuple), multiline=st.booleans()),
        st.builds(
            ast.MapExpr,
            st.lists(st.builds(ast.MapItem, texts | names, children, quoted=st.booleans()), max_size=3, unique_by=lambda i: i.key).map(tuple),
            multiline=st.booleans(),
        ),
    )


exprs = st.recursive(literals | refs, _exprs, max_leaves=12)


overrides = st.builds(ast.Override, refs, st.lists(st.builds(ast.Attribute, names, exprs), max_size=3).map(tuple))
attr_values = exprs | overrides
attributes = st.builds(ast.Attribute, names, attr_values, comments=layout_comments, blank_before=st.booleans())
asserts = st.builds(ast.Assert, texts, exprs, comments=layout_comments, blank_before=st.booleans())


def _block(body):
    return st.builds(
        ast.Block,
        names,
        st.none() | texts,
        st.none() | refs,
        body,
        comments=layout_comments,
        end_comments=st.lists(comments_st, max_size=2).map(tuple),
        blank_before=st.booleans(),
    )


inner_blocks = _block(st.lists(attributes | asserts, max_size=3).map(tuple))
blocks = _block(st.lists(attributes | asserts | inner_blocks, max_size=4).map(tuple))
imports = st.builds(ast.Import, texts, comments=layout_comments, blank_before=st.booleans())
files = st.builds(
    ast.File,
    st.lists(imports, max_size=2).flatmap(lambda i: st.lists(blocks, max_size=3).map(lambda b: tuple(i) + tuple(b))),
    end_comments=st.lists(comments_st, max_size=2).map(tuple),
)


def comments_in(node) -> Counter:
    """Every comment a model carries."""
    out: Counter = Counter()
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Comments):
            out.update(c for c in n.leading if c)  # "" marks a blank line between comments
            if n.trailing:
                out[n.trailing] += 1
        elif isinstance(n, (tuple, list)):
            stack.extend(n)
        elif hasattr(n, "__attrs_attrs__"):
            for a in n.__attrs_attrs__:
                value = getattr(n, a.name)
                if a.name == "end_comments":
                    out.update(c for c in value if c)
                elif not isinstance(value, (str, int, float, bool)) and value is not None:
                    stack.append(value)
    return out


def reparse(text: str) -> ast.File:
    file, diags = parse(text, "gen.spec")
    assert file is not None and not [d for d in diags if d.severity == "error"], (diags, text)
    return file


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(files)
@example(ast.File((ast.Block("b", None, None, (ast.Attribute("v", ast.Neg(ast.Ref(("x",)))),)),)))
@example(ast.File((ast.Block("b", None, None, (ast.Attribute("v", ast.BinOp("-", ast.Number(1), ast.Number(-1))),)),)))
@example(ast.File((ast.Block("b", None, None, (ast.Attribute("v", ast.Number(1e16)),)),)))
@example(ast.File((ast.Block("b", None, None, (ast.Attribute("v", ast.MapExpr((ast.MapItem("not", ast.Bool(True)),))),)),)))
def test_print_then_parse_gives_the_same_model(file):
    text = format_file(file)
    again = reparse(text)
    assert again == file, text
    assert format_file(again) == text  # idempotent
    assert comments_in(again) == comments_in(file), text  # every comment kept, none invented


REAL_FILES = sorted(ROOT.glob("examples/**/*.spec")) + sorted(CORPUS.glob("**/*.spec"))


@pytest.mark.parametrize("path", REAL_FILES, ids=[str(p.relative_to(ROOT)) for p in REAL_FILES])
def test_fmt_of_real_files_is_idempotent_and_keeps_comments(path):
    text = path.read_text()
    file, diags = parse(text, path.name)
    if file is None or any(d.severity == "error" for d in diags):
        assert path.parent.name == "corpus"  # fmt refuses these: a syntax error, a bad unit, a bad escape
        return
    once = format_file(file)
    again = reparse(once)
    assert again == file
    assert format_file(again) == once
    expected = Counter(t.rstrip() for t in TOKEN.findall(text) if t.startswith(("#", "//")))
    assert comments_in(again) == expected


# ---- mutations of valid specs

SEEDS = [ROOT / "examples/kimi-k25/upgrade.spec"] + sorted(ROOT.glob("examples/sweep/*.spec"))
SEED_TEXTS = [p.read_text() for p in SEEDS if p.exists()]
TOKEN = re.compile(r'"(?:[^"\\\n]|\\.)*"|(?:#|//)[^\n]*|[A-Za-z0-9_.%-]+|\s+|.', re.S)
LOCATED = re.compile(r"^[^\n]+:\d+:\d+: error: ", re.M)


def mutate(text: str, rnd: random.Random) -> bytes:
    tokens = TOKEN.findall(text)
    for _ in range(rnd.randint(1, 4)):
        kind = rnd.choice(["delete", "duplicate", "swap", "bytes", "truncate", "replace"])
        i = rnd.randrange(len(tokens)) if tokens else 0
        if kind == "delete" and tokens:
            del tokens[i]
        elif kind == "duplicate" and tokens:
            tokens.insert(i, tokens[i])
        elif kind == "swap" and len(tokens) > 1:
            j = rnd.randrange(len(tokens))
            tokens[i], tokens[j] = tokens[j], tokens[i]
        elif kind == "replace" and tokens:
            tokens[i] = rnd.choice(['"', "{", "}", "[", "]", "(", ")", "=", ",", ".", "-", "1e999", "not", "assert", "x-", "5mb", "matrix.q"])
        elif kind == "truncate":
            tokens = tokens[:i]
        elif kind == "bytes":
            raw = bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 4)))
            tokens.insert(i, raw.decode("latin-1"))
    out = "".join(tokens)
    # inserted "bytes" become raw bytes again (invalid UTF-8 included)
    return out.encode("utf-8") if rnd.random() < 0.5 else out.encode("latin-1", "replace")


def run_inprocess(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    out = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        code = main(argv)
    return code, err.getvalue() + out.getvalue()


def check_answer(code: int, output: str, data: bytes) -> None:
    assert "Traceback" not in output
    assert code in (0, 1), (code, output, data)
    if code == 1:
        assert LOCATED.search(output) or "would reformat" in output, (output, data)
    for line in output.splitlines():
        if " error: " in line and not line.startswith(" "):
            assert LOCATED.match(line), (line, data)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(range(len(SEED_TEXTS))), st.randoms(use_true_random=False))
def test_mutated_specs_end_in_success_or_a_located_error(tmp_path_factory, seed, rnd):
    data = mutate(SEED_TEXTS[seed], rnd)
    path = tmp_path_factory.mktemp("mut") / "m.spec"
    path.write_bytes(data)
    started = time.monotonic()
    code, output = run_inprocess(["validate", str(path)])
    check_answer(code, output, data)
    code, output = run_inprocess(["fmt", "--check", str(path)])
    check_answer(code, output, data)
    assert time.monotonic() - started < 10, "too slow: a hang in the making"
    # whatever parses formats to text that parses back to the same model
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return
    file, diags = parse(text, "m.spec")
    if file is not None and not any(d.severity == "error" for d in diags):
        once = format_file(file)
        again = reparse(once)
        assert again == file and format_file(again) == once


def test_mutated_specs_through_a_subprocess(tmp_path):
    rnd = random.Random(20260301)
    for n in range(3):
        data = mutate(SEED_TEXTS[n % len(SEED_TEXTS)], rnd)
        path = tmp_path / f"m{n}.spec"
        path.write_bytes(data)
        proc = subprocess.run(
            [sys.executable, "-m", "specdsl.cli.main", "validate", str(path)], capture_output=True, text=True, timeout=60
        )
        check_answer(proc.returncode, proc.stderr + proc.stdout, data)
