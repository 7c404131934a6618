"""Packaging: every subpackage is listed in pyproject.toml, every data file
ships, and the wheel installed in a fresh venv outside the repo validates
the example spec with the `specdsl` entry point."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def on_disk_packages() -> set[str]:
    out = set()
    for init in (ROOT / "specdsl").rglob("__init__.py"):
        if "__pycache__" in init.parts:
            continue
        out.add(".".join(init.parent.relative_to(ROOT).parts))
    out.add("specdsl.grammar")  # a link to grammar/, a data-only package
    return out


def test_every_subpackage_is_listed():
    listed = set(PYPROJECT["tool"]["setuptools"]["packages"])
    missing = on_disk_packages() - listed
    assert not missing, f"add to [tool.setuptools] packages in pyproject.toml: {sorted(missing)}"


def test_grammar_link_points_at_the_grammar():
    assert (ROOT / "specdsl/grammar").resolve() == (ROOT / "grammar").resolve()
    assert (ROOT / "specdsl/grammar/spec.lark").exists()


def _pip_sources() -> list[str]:
    """pip's configured indexes and find-links, for uv (which does not read pip.conf)."""
    proc = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True)
    args: list[str] = []
    for line in proc.stdout.splitlines():
        key, _, value = line.partition("=")
        key, value = key.split(".")[-1], value.strip().strip("'\"")
        flag = {"index-url": "--index-url", "extra-index-url": "--extra-index-url", "find-links": "--find-links"}.get(key)
        if flag:
            for v in value.split():
                if [flag, v] != args[-2:]:
                    args += [flag, v]
    return args


def _copy_tree(dest: Path) -> Path:
    """The checkout without build outputs, so that building does not touch
    the shared working tree (others may build at the same time)."""
    ignore = shutil.ignore_patterns(".git", "build", "dist", "*.egg-info", "__pycache__", ".specdsl", ".pytest_cache", ".hypothesis", "plans")
    shutil.copytree(ROOT, dest, symlinks=True, ignore=ignore)
    return dest


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    if shutil.which("uv") is None:
        pytest.skip("uv is not installed")
    src = _copy_tree(tmp_path_factory.mktemp("src") / "specdsl")
    out = tmp_path_factory.mktemp("dist")
    proc = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(src)], capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    [whl] = out.glob("specdsl-*.whl")
    return whl


def test_wheel_ships_every_data_file(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "specdsl/grammar/spec.lark" in names
    for package in on_disk_packages():
        folder = ROOT / package.replace(".", "/")
        for path in folder.iterdir():
            if path.is_file() and path.suffix not in (".py", ".pyc") and not path.name.startswith("."):
                assert f"{package.replace('.', '/')}/{path.name}" in names, f"{path.relative_to(ROOT)} is not in the wheel"
    for package in on_disk_packages():
        assert f"{package.replace('.', '/')}/__init__.py" in names or package == "specdsl.grammar", package


def test_installed_wheel_validates_the_example_outside_the_repo(wheel, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run(["uv", "venv", "-q", str(venv), "--python", sys.executable], check=True, timeout=120)
    python = venv / "bin" / "python"
    proc = subprocess.run(
        ["uv", "pip", "install", "-q", "--python", str(python), str(wheel), *_pip_sources()],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    work = tmp_path / "elsewhere"
    work.mkdir()
    shutil.copy(ROOT / "examples/kimi-k25/upgrade.spec", work / "upgrade.spec")
    (work / "transformers.spec").write_text(
        'stack "s" {}\nserver "t" {\n  engine = "transformers"\n  model  = "m"\n  args   = { no-such-flag = 1 }\n}\n'
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    specdsl = str(venv / "bin" / "specdsl")
    proc = subprocess.run([specdsl, "validate", "upgrade.spec"], cwd=work, capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "upgrade.spec: valid (5 experiments)" in proc.stderr
    # the installed package is the one that ran, not the checkout
    where = subprocess.run([str(python), "-c", "import specdsl; print(specdsl.__file__)"], cwd=work, capture_output=True, text=True, env=env)
    assert str(venv) in where.stdout and str(ROOT) not in where.stdout
    # found: the transformers flag table (a .txt data file) was left out of the wheel
    proc = subprocess.run([specdsl, "validate", "transformers.spec"], cwd=work, capture_output=True, text=True, env=env, timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert re.search(r"transformers\.spec:5:\d+: error: Unknown transformers flag `no-such-flag`", proc.stderr), proc.stderr
