"""Every third-party module specdsl imports is a declared dependency
(pyproject.toml's [project] dependencies): an install from the wheel alone
has all it needs. An import guarded by `except ImportError` is optional (the
code says what is missing instead) and need not be declared.

Import names map to distributions through the installed metadata
(importlib.metadata.packages_distributions: `tomli_w` is `tomli-w`, ...)."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "specdsl"


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared() -> set[str]:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    return {_normal(re.match(r"[A-Za-z0-9._-]+", d).group(0)) for d in deps}


def _optional(tree: ast.AST) -> set[int]:
    """ids of the import nodes inside a `try:` that catches ImportError."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try):
            caught = {ast.unparse(h.type) for h in node.handlers if h.type is not None}
            if caught & {"ImportError", "ModuleNotFoundError", "(ImportError, ModuleNotFoundError)"}:
                out |= {id(n) for stmt in node.body for n in ast.walk(stmt) if isinstance(n, (ast.Import, ast.ImportFrom))}
    return out


def third_party_imports(root: Path) -> dict[str, list[str]]:
    """Top-level third-party module -> where it is imported (file:line), optional imports left out."""
    found: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        optional = _optional(tree)
        for node in ast.walk(tree):
            if id(node) in optional:
                continue
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top != root.name:
                    found.setdefault(top, []).append(f"{path.relative_to(root.parent)}:{node.lineno}")
    return found


def undeclared(root: Path, wanted: set[str]) -> list[str]:
    dists = packages_distributions()
    out = []
    for module, where in sorted(third_party_imports(root).items()):
        names = {_normal(d) for d in dists.get(module, [module])}
        if not names & wanted:
            out.append(f"{module} (imported at {', '.join(where[:3])}) is not in pyproject.toml's dependencies")
    return out


def test_every_third_party_import_is_declared():
    assert undeclared(PACKAGE, declared()) == []


def test_the_check_finds_an_undeclared_import_and_lets_an_optional_one_be(tmp_path):
    root = tmp_path / "specdsl"
    root.mkdir()
    (root / "a.py").write_text("import json\nimport attrs\nfrom specdsl import b\n"
                               "try:\n    import transformers\nexcept ImportError:\n    transformers = None\n")
    assert undeclared(root, {"attrs"}) == []
    assert undeclared(root, set()) == ["attrs (imported at specdsl/a.py:2) is not in pyproject.toml's dependencies"]
    (root / "b.py").write_text("def f():\n    import numpy\n")
    assert undeclared(root, {"attrs"}) == ["numpy (imported at specdsl/b.py:2) is not in pyproject.toml's dependencies"]
