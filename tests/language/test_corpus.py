"""The golden corpus of invalid specs (tests/language/corpus/*.spec).

Each bad line carries a marker comment:

    runs = 0  # ERROR: `runs` must be >= 1

`# ERROR: TEXT` needs an error on that line whose summary contains TEXT,
`# WARNING: TEXT` a warning, and `# HINT: TEXT` a diagnostic on that line
whose detail (the "did you mean" part) contains TEXT. Every error and every
warning must be claimed by a marker on its line. Markers are read from
every file the spec loads (imports included), so files under corpus/lib/
carry the markers of the errors reported inside them.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from specdsl.cli.main import main
from specdsl.diag import Diagnostic
from specdsl.resolve.resolver import resolve_file

CORPUS = Path(__file__).parent / "corpus"
MARKER = re.compile(r"(?:#|//)\s*(ERROR|WARNING|HINT):\s*(.*?)\s*(?=(?:#|//)\s*(?:ERROR|WARNING|HINT):|$)")
FILES = sorted(CORPUS.glob("*.spec"))


def markers(text: str) -> list[tuple[int, str, str]]:
    """(line, kind, text) for every marker in a file."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        for m in MARKER.finditer(line):
            out.append((n, m.group(1), m.group(2)))
    return out


def check(diags: list[Diagnostic], texts: dict[str, str]) -> list[str]:
    """Problems: markers without a diagnostic, diagnostics without a marker."""
    wanted = []
    for name, text in texts.items():
        wanted.extend((Path(name).resolve(), *m) for m in markers(text))
    problems = []
    claimed: set[int] = set()
    for file, line, kind, text in wanted:
        here = [
            (i, d)
            for i, d in enumerate(diags)
            if d.span is not None and Path(d.span.file).resolve() == file and d.span.line == line
        ]
        if kind == "HINT":
            hit = [i for i, d in here if text in d.detail]
        else:
            hit = [i for i, d in here if d.severity == kind.lower() and text in d.summary]
        if not hit:
            got = "; ".join(f"{d.severity}: {d.summary} ({d.detail})" for _, d in here) or "nothing"
            problems.append(f"{file.name}:{line}: expected {kind} {text!r}, got {got}")
        elif kind != "HINT":
            claimed.add(hit[0])
    for i, d in enumerate(diags):
        if i not in claimed:
            where = f"{Path(d.span.file).name}:{d.span.line}:{d.span.col}" if d.span else "(no location)"
            problems.append(f"{where}: unmarked {d.severity}: {d.summary}")
    return problems


def test_corpus_is_not_empty():
    assert len(FILES) >= 15


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_corpus_file(path: Path, monkeypatch):
    monkeypatch.chdir(CORPUS)  # short display names, like a user in the folder
    resolved = resolve_file(Path(path.name))
    assert markers(path.read_text(errors="replace")), f"{path.name} has no markers"
    problems = check(resolved.diags, resolved.sources.texts)
    assert not problems, "\n".join(problems)
    if any(kind == "ERROR" for _, kind, _ in markers(path.read_text())):
        assert not resolved.ok


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_corpus_file_through_cli(path: Path, monkeypatch, capsys):
    """The command line shows each error located, with its source line."""
    monkeypatch.chdir(CORPUS)
    code = main(["validate", path.name])
    err = capsys.readouterr().err
    errors = [m for m in markers(path.read_text()) if m[1] == "ERROR"]
    assert code == (1 if errors else 0)
    assert "Traceback" not in err
    for line, _, text in errors:
        if Path(path.name).exists() and text:
            assert re.search(rf":{line}:\d+: error: [^\n]*{re.escape(text)}", err), (line, text, err)


def test_runner_reports_unmatched_markers_and_unmarked_errors():
    """The runner itself: a marker with no error and an error with no marker
    are both problems; a matching pair is not."""
    from specdsl.diag import Span

    text = 'a = 1 # ERROR: Bad thing\nb = 2\nc = 3 # ERROR: Missing one # HINT: try this\n'
    diags = [
        Diagnostic.error("A Bad thing here", Span("x.spec", 1, 5), "whatever"),
        Diagnostic.error("Surprise", Span("x.spec", 2, 1)),
    ]
    problems = check(diags, {"x.spec": text})
    assert problems == [
        "x.spec:3: expected ERROR 'Missing one', got nothing",
        "x.spec:3: expected HINT 'try this', got nothing",
        "x.spec:2:1: unmarked error: Surprise",
    ]
    assert markers(text) == [(1, "ERROR", "Bad thing"), (3, "ERROR", "Missing one"), (3, "HINT", "try this")]
