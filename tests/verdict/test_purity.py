"""The verdict package is pure and cheap to import: nothing but the
standard library, attrs, specdsl.stats/diag and (on first use) scipy and
numpy; importing it loads neither scipy nor numpy, so `validate` and
`plan` never pay for them."""

from __future__ import annotations

import ast
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "specdsl" / "verdict"
# no files, clock, processes, network, environment or unseeded randomness
# (the look schedule's paths come from numpy's generator with a fixed seed)
IMPURE = {"os", "io", "pathlib", "shutil", "tempfile", "time", "datetime", "random", "subprocess", "socket",
          "threading", "multiprocessing", "urllib", "http", "logging"}
ALLOWED = {"attrs", "scipy", "numpy", "specdsl.stats", "specdsl.diag", "specdsl.verdict", "__future__"}


def _imports(path: Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            yield node.module


def test_the_package_imports_only_what_it_may():
    stdlib = set(sys.stdlib_module_names)
    for path in sorted(PACKAGE.glob("*.py")):
        for name in _imports(path):
            top = name.split(".")[0]
            ok = top in stdlib or any(name == a or name.startswith(a + ".") for a in ALLOWED)
            if name == "specdsl":  # `from specdsl import stats`
                ok = True
            assert ok, f"{path.name} imports {name}"
            assert top not in IMPURE, f"{path.name} imports {name}: the verdicts are pure"
        assert "open(" not in path.read_text(), f"{path.name} opens a file"


def test_importing_the_package_loads_no_scipy_or_numpy():
    code = "import sys, specdsl.verdict; print(sorted(m for m in ('scipy', 'numpy') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(ROOT), "PATH": sysconfig.get_path("scripts")})
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
