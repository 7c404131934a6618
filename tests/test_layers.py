"""The layering of specdsl (pyproject.toml, [tool.importlinter]) holds.

import-linter reads the contracts and the imports of this tree (the
repository root goes first on the path, so an installed specdsl is never
the one checked); a broken contract fails with import-linter's report,
which names the contract and the import chain that breaks it. Every
package also says in its docstring what it does and what it must not
import.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

pytest.importorskip("importlinter")

ROOT = Path(__file__).resolve().parents[1]
_RUN = "from importlinter.cli import lint_imports_command; lint_imports_command()"


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run(
        [sys.executable, "-c", _RUN, str(root / "pyproject.toml"), "--no-cache", "--no-logo"],
        cwd=root, env=env, capture_output=True, text=True, timeout=120,
    )


def test_import_contracts_are_kept():
    proc = lint_imports(ROOT)
    report = proc.stdout + proc.stderr
    assert proc.returncode == 0, "a layering contract is broken (pyproject.toml [tool.importlinter]):\n" + report
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    for contract in contracts:
        assert f"{contract['name']} KEPT" in report, report


def test_a_wrong_way_import_breaks_its_contract(tmp_path):
    """The check is not vacuous: re-creating the old validate -> resolve
    import in a copy of the tree breaks the planning layers, and the report
    names the contract and the import."""
    copy = tmp_path / "repo"
    copy.mkdir()
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    shutil.copytree(ROOT / "specdsl", copy / "specdsl", symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    schema = copy / "specdsl" / "validate" / "schema.py"
    schema.write_text(schema.read_text() + "\nfrom specdsl.resolve.values import Scope  # noqa: E402\n")
    proc = lint_imports(copy)
    report = proc.stdout + proc.stderr
    assert proc.returncode != 0, report
    assert "Language and planning: each layer imports only layers below it BROKEN" in report, report
    assert "specdsl.validate.schema -> specdsl.resolve.values" in report, report


def _packages() -> list[Path]:
    return sorted(p.parent for p in (ROOT / "specdsl").glob("*/__init__.py"))


@pytest.mark.parametrize("package", _packages(), ids=lambda p: p.name)
def test_every_package_says_what_it_does_and_what_it_must_not_import(package):
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""
    assert len(doc.split()) >= 15, f"specdsl/{package.name}/__init__.py: say what the layer does"
    assert "import" in doc.lower(), f"specdsl/{package.name}/__init__.py: say what the layer must not import"


def _prints(source: str) -> list[int]:
    """The lines of `source` that print: a call of print, or sys.stdout/sys.stderr."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
            lines.append(node.lineno)
        elif (isinstance(node, ast.Attribute) and node.attr in ("stdout", "stderr")
              and isinstance(node.value, ast.Name) and node.value.id == "sys"):
            lines.append(node.lineno)
    return lines


def test_operations_print_nothing():
    """cli is the only layer that prints: an operation returns what it found
    (a Planned with its Problems, an ApplyResult) and the command says it."""
    assert _prints("import sys\nprint('x')\nsys.stderr.write('y')\n") == [2, 3]  # the check sees what it forbids
    for path in sorted((ROOT / "specdsl" / "operations").glob("*.py")):
        assert not _prints(path.read_text()), f"specdsl/operations/{path.name}: prints (lines {_prints(path.read_text())})"
