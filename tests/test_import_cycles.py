"""No import circle inside specdsl but the ones listed here, each with the
issue that breaks it.

grimp (the graph import-linter builds) reads every import of the tree, the
ones inside functions too: an import deferred into a function still ties two
modules into one, it only hides the circle from the interpreter. Imports under
`if TYPE_CHECKING:` are left out (type-only: never run). A circle is a
strongly connected set of modules, so a circle that is broken shows as a set
that is gone or smaller.

`ALLOWED` is the list of circles still present. The check fails both ways:
a circle not in it (a new one: break it, don't list it), and a listed one
that no longer exists (it was broken: take it off the list, so the list only
shrinks).
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import networkx as nx
import pytest

grimp = pytest.importorskip("grimp")

ROOT = Path(__file__).resolve().parents[1]

# Each circle still present, as its set of modules, and the issue that breaks
# it. None is left (issue 26): a new circle fails this test.
ALLOWED: dict[frozenset[str], str] = {}


def import_graph(package: str) -> nx.DiGraph:
    """Module -> module it imports, inside `package`, type-only imports left out."""
    graph = grimp.build_graph(package, cache_dir=None, exclude_type_checking_imports=True)
    out = nx.DiGraph()
    for module in graph.modules:
        out.add_node(module)
        for imported in graph.find_modules_directly_imported_by(module):
            out.add_edge(module, imported, lines=graph.get_import_details(importer=module, imported=imported))
    return out


def circles(graph: nx.DiGraph) -> set[frozenset[str]]:
    return {frozenset(c) for c in nx.strongly_connected_components(graph) if len(c) > 1}


def describe(graph: nx.DiGraph, circle: frozenset[str]) -> str:
    """One cycle through the circle, with each import's line."""
    lines = []
    for a, b in nx.find_cycle(graph.subgraph(circle)):
        detail = (graph.edges[a, b]["lines"] or [{}])[0]
        lines.append(f"  {a}:{detail.get('line_number', '?')} {detail.get('line_contents', '')}  (-> {b})")
    return "\n".join(lines)


def test_no_import_circle_but_the_listed_ones():
    import specdsl

    assert Path(specdsl.__file__).resolve().parent == ROOT / "specdsl", f"checking another tree: {specdsl.__file__}"
    graph = import_graph("specdsl")
    found = circles(graph)
    new = [c for c in found if c not in ALLOWED]
    gone = [c for c in ALLOWED if c not in found]
    report = [f"a new import circle (break it; a type-only import goes under `if TYPE_CHECKING:`):\n{describe(graph, c)}"
              for c in new]
    report += [f"{sorted(c)} ({ALLOWED[c]}) is no longer a circle (or changed): update ALLOWED in {Path(__file__).name}"
               for c in gone]
    assert not report, "\n".join(report)


def _package(root: Path, name: str, files: dict[str, str]) -> None:
    (root / name).mkdir()
    for file, text in {"__init__.py": "", **files}.items():
        (root / name / file).write_text(textwrap.dedent(text))


def test_a_circle_is_found_even_deferred_and_a_type_only_one_is_not(tmp_path, monkeypatch):
    """The check is not vacuous: a top-level circle and one closed by an
    import inside a function are circles; one closed under TYPE_CHECKING is not."""
    _package(tmp_path, "circlepkg", {
        "a.py": "from circlepkg import b\n",
        "b.py": "def f():\n    from circlepkg import a\n    return a\n",
        "c.py": "from circlepkg import d\n",
        "d.py": """\
            from typing import TYPE_CHECKING
            if TYPE_CHECKING:
                from circlepkg import c
            """,
    })
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        graph = import_graph("circlepkg")
        assert circles(graph) == {frozenset({"circlepkg.a", "circlepkg.b"})}
        assert "circlepkg.b:2 from circlepkg import a" in describe(graph, frozenset({"circlepkg.a", "circlepkg.b"}))
    finally:
        for name in [m for m in sys.modules if m == "circlepkg" or m.startswith("circlepkg.")]:
            del sys.modules[name]
