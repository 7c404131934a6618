"""Whatever bytes a file holds, `specdsl validate` and `specdsl fmt` answer
with success or a located error (`FILE:LINE:COL: error: ...`), never a
traceback and never a hang."""

from __future__ import annotations

import re
import subprocess
import sys
import time

import pytest

from specdsl.cli.main import main
from specdsl.resolve.resolver import resolve_file
from specdsl.syntax import parser

LOCATED = re.compile(r"^(?P<file>[^\n:]+):(?P<line>\d+):(?P<col>\d+): error: (?P<summary>.+)$", re.M)


def run_cli(capsys, *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    assert "Traceback" not in out.err + out.out
    return code, out.err


def first_error(err: str) -> re.Match:
    m = LOCATED.search(err)
    assert m, f"no located error in:\n{err}"
    return m


@pytest.fixture(params=["validate", "fmt"])
def command(request):
    return request.param


def test_invalid_utf8(tmp_path, capsys, command):
    path = tmp_path / "bad.spec"
    path.write_bytes('workload "w" {\n  dataset = "é\xff"\n}\n'.encode("utf-8").replace("\xff".encode(), b"\xff"))
    code, err = run_cli(capsys, command, str(path))
    m = first_error(err)
    assert code == 1
    assert (m["line"], m["col"], m["summary"]) == ("2", "15", "File is not valid UTF-8")  # column in characters
    assert '  dataset = "é' in err  # the line is shown, undecodable bytes replaced
    assert "byte 0xff" in err


def test_nul_byte(tmp_path, capsys, command):
    path = tmp_path / "nul.spec"
    path.write_bytes(b'workload "w" {\n  requests = 1\x00\n}\n')
    code, err = run_cli(capsys, command, str(path))
    m = first_error(err)
    assert code == 1 and (m["line"], m["col"], m["summary"]) == ("2", "15", "File contains a NUL byte")


def test_deeply_parenthesised_expression(tmp_path, capsys, command):
    path = tmp_path / "deep.spec"
    path.write_text('workload "w" {\n  requests = ' + "(" * 3000 + "1" + ")" * 3000 + "\n}\n")
    started = time.monotonic()
    code, err = run_cli(capsys, command, str(path))
    assert time.monotonic() - started < 10
    m = first_error(err)
    assert code == 1 and m["line"] == "2" and m["summary"] == "Brackets nested too deeply"
    assert int(m["col"]) == 14 + parser.MAX_NESTING - 1  # the first bracket over the limit


@pytest.mark.parametrize(
    "expr, summary",
    [
        ("not " * 3000 + "true", "Expression too long"),
        ("- " * 3000 + "1", "Expression too long"),
        (" + ".join(["1"] * 3000), "Expression too long"),
        (" < ".join(["1"] * 3000), "Unexpected `<`"),  # comparisons do not chain
        ("9" * 5000, "Number out of range"),
        ("1e999", "Number out of range"),
    ],
    ids=["not", "neg", "plus", "compare", "huge-int", "huge-float"],
)
def test_long_expressions(tmp_path, capsys, expr, summary):
    path = tmp_path / "long.spec"
    path.write_text('workload "w" {\n  requests = ' + expr + "\n}\n")
    code, err = run_cli(capsys, "validate", str(path))
    m = first_error(err)
    assert code == 1 and m["line"] == "2" and m["summary"] == summary


def test_ten_megabyte_file(tmp_path, capsys, command):
    path = tmp_path / "big.spec"
    line = b'workload "w" { requests = 1 }  # padding padding padding padding padding\n'
    path.write_bytes(line * (10 * 1024 * 1024 // len(line) + 1))
    started = time.monotonic()
    code, err = run_cli(capsys, command, str(path))
    assert time.monotonic() - started < 10
    m = first_error(err)
    assert code == 1 and (m["line"], m["col"], m["summary"]) == ("1", "1", "Spec file is too large")


def test_many_tokens_under_the_size_limit(tmp_path, capsys):
    """2 MB of `1,` would keep the pure-Python parser busy for minutes: the
    token limit stops it early, at the token where it ran over."""
    path = tmp_path / "list.spec"
    path.write_text('workload "w" {\n  requests = [' + "1," * 900_000 + "]\n}\n")
    assert path.stat().st_size < parser.MAX_BYTES
    started = time.monotonic()
    code, err = run_cli(capsys, "validate", str(path))
    assert time.monotonic() - started < 20
    m = first_error(err)
    assert code == 1 and m["line"] == "2" and m["summary"] == "Spec file has too many tokens"


def test_empty_file_is_valid(tmp_path, capsys):
    path = tmp_path / "empty.spec"
    path.write_bytes(b"")
    code, err = run_cli(capsys, "validate", str(path))
    assert code == 0 and "valid (0 experiments)" in err
    assert main(["fmt", "--check", str(path)]) == 0


def test_whitespace_and_comments_only(tmp_path, capsys):
    path = tmp_path / "c.spec"
    path.write_text("\n\n   # just a comment\n\t// another\n")
    code, _ = run_cli(capsys, "validate", str(path))
    assert code == 0


def test_byte_order_mark_is_skipped(tmp_path, capsys):
    path = tmp_path / "bom.spec"
    path.write_bytes(b'\xef\xbb\xbfworkload "w" { requests = 1 }\n')
    code, _ = run_cli(capsys, "validate", str(path))
    assert code == 0


def test_directory(tmp_path, capsys, command):
    (tmp_path / "dir.spec").mkdir()
    code, err = run_cli(capsys, command, str(tmp_path / "dir.spec"))
    if command == "fmt":  # fmt formats a folder's spec files (tests/test_cli_grammar.py): this one has none
        assert code == 1 and f"specdsl: error: no .spec file under the folder {tmp_path / 'dir.spec'}" in err
        return
    m = first_error(err)
    assert code == 1 and "is a directory, not a spec file" in m["summary"]


def test_missing_file(tmp_path, capsys, command):
    code, err = run_cli(capsys, command, str(tmp_path / "nope.spec"))
    m = first_error(err)
    assert code == 1 and m["summary"].startswith("File not found")
    assert m["file"].endswith("nope.spec")


def test_missing_var_file(tmp_path, capsys):
    spec = tmp_path / "a.spec"
    spec.write_text('variable "n" { default = 1 }\n')
    code, err = run_cli(capsys, "validate", str(spec), "--var-file", str(tmp_path / "vars.spec"))
    m = first_error(err)
    assert code == 1 and m["file"].endswith("vars.spec") and m["summary"].startswith("File not found")


def test_unreadable_file(tmp_path, capsys):
    import os

    if os.geteuid() == 0:
        pytest.skip("root reads everything")
    path = tmp_path / "secret.spec"
    path.write_text("")
    path.chmod(0)
    code, err = run_cli(capsys, "validate", str(path))
    assert code == 1 and "Cannot read" in first_error(err)["summary"]


def test_long_extends_chain_does_not_recurse(tmp_path):
    """Found: a 3,000-long `extends` chain declared child first raised
    RecursionError."""
    lines = [f'stack "s{i}" extends stack.s{i - 1} {{}}' for i in range(3000, 0, -1)]
    lines.append('stack "s0" { python = "3.12" }')
    path = tmp_path / "chain.spec"
    path.write_text("\n".join(lines) + "\n")
    resolved = resolve_file(path)
    assert resolved.ok, resolved.diags[:3]
    assert resolved.config.stacks[0].python == "3.12" and len(resolved.config.stacks) == 3001


def test_matrix_explosion_is_refused(tmp_path):
    """A 1 kB file can ask for a million cells: refused, not expanded."""
    values = "[" + ", ".join(str(i) for i in range(100)) + "]"
    path = tmp_path / "grid.spec"
    path.write_text(
        'stack "s" {}\nserver "m" {\n  engine = "sglang"\n  model  = "m"\n}\nworkload "w" {}\n'
        f"experiment \"e\" {{\n  matrix   = {{ a = {values}, b = {values}, c = {values} }}\n"
        "  stack    = stack.s\n  server   = server.m\n  workload = workload.w\n}\n"
    )
    started = time.monotonic()
    resolved = resolve_file(path)
    assert time.monotonic() - started < 5
    [diag] = resolved.diags
    assert diag.summary == "The matrix expands to 1,000,000 cells" and diag.span.line == 8


@pytest.mark.parametrize(
    "data",
    [b"\xff\xfe\x00\x00", b'host "h" {', b"\x00" * 100, b"{" * 100_000, b'"' * 10_000, b"\r\n}", "🦀".encode() * 100],
    ids=["utf32-bom", "unclosed", "nuls", "braces", "quotes", "crlf", "emoji"],
)
def test_odd_bytes_through_a_subprocess(tmp_path, data):
    """The installed entry point, as a user runs it: exit 1, a located
    error, no traceback."""
    path = tmp_path / "odd.spec"
    path.write_bytes(data)
    proc = subprocess.run(
        [sys.executable, "-m", "specdsl.cli.main", "validate", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert LOCATED.search(proc.stderr), proc.stderr


def test_form_feed_does_not_shift_the_shown_line(tmp_path, capsys):
    """Found: the renderer split lines with str.splitlines(), which also
    breaks at form feeds and other separators the parser does not count,
    so the line shown under an error was the wrong one."""
    path = tmp_path / "ff.spec"
    path.write_text('# page one\x0c page two\nworkload "w" {\n  requests = 0\n}\n')
    code, err = run_cli(capsys, "validate", str(path))
    assert code == 1 and first_error(err)["line"] == "3"
    assert "   3 |   requests = 0" in err


def test_an_experiment_naming_an_undeclared_server_without_a_stack(tmp_path, capsys):
    """The stack rule asks whether the experiment's server is one already
    running (`url`): of a server that is not declared (a typo, or an
    import that was not found) it raised KeyError, a traceback (found by
    test_properties' mutated specs)."""
    path = tmp_path / "m.spec"
    path.write_text('experiment "e" {\n  server   = server.qwen\n  workload = workload.w\n}\n')
    code, err = run_cli(capsys, "validate", str(path))
    assert code == 1
    assert f"{path}:2:14: error: Unknown server `qwen`" in err or ":2:14: error: Unknown server `qwen`" in err, err
    assert ":1:12: error: Experiment `e` needs a stack" in err, err
