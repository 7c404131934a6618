"""installer = "prebuilt": a carried site tree (on env.PYTHONPATH) over the
host's interpreter, nothing installed or resolved; the pins are checked
against what the new environment sees and everything found is recorded (the
real SGLang 0.5.17 tree of examples/gpu/sglang.spec, in small)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from specdsl.hosts import LocalHost
from specdsl.model.config import Stack, pairs
from specdsl.provision import ProvisionError, provision


def site_tree(root, name: str, version: str):
    """A prebuilt site folder holding one distribution (its dist-info and module)."""
    root.mkdir(parents=True, exist_ok=True)
    dist = root / f"{name.replace('-', '_')}-{version}.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (root / f"{name.replace('-', '_')}.py").write_text(f"VERSION = {version!r}\n")
    return root


def test_prebuilt_tree_is_recorded_without_installing(tmp_path):
    site = site_tree(tmp_path / "site", "specdsl-engine", "0.5.17")
    stack = Stack(name="pre", python="system", installer="prebuilt", packages=("specdsl-engine==0.5.17",),
                  env=pairs({"PYTHONPATH": str(site)}))
    log = tmp_path / "log"
    record = provision(stack, LocalHost(env_root=tmp_path / "envs"), "pre", log)
    assert record.packages["specdsl-engine"] == "0.5.17"  # what the tree holds is recorded
    assert record.installer == "prebuilt"
    commands = [line for line in log.read_text().splitlines() if line.startswith("$ ")]
    assert not any(" install " in line or "uv" in line.split()[1] for line in commands), commands  # nothing installed, no resolver


def test_prebuilt_packages_get_their_console_scripts(tmp_path):
    """A tree installed with `pip --target` has no usable console scripts
    (their shebangs name the build machine; the carry drops bin/): the
    environment gets the pinned packages' own, so an adapter's `vllm serve`
    or `transformers serve` runs from it. On the H200 the first version of
    these scripts had no `__main__` guard, and vLLM 0.26.0's engine core,
    started with spawn, ran `vllm serve` again and died (docs/gpu-run.md)."""
    site = site_tree(tmp_path / "site", "specdsl-engine", "0.5.17")
    dist = site / "specdsl_engine-0.5.17.dist-info"
    (dist / "entry_points.txt").write_text("[console_scripts]\nspecdsl-engine = specdsl_engine:cli.main\n")
    # like vLLM's engine core: a worker started with multiprocessing's spawn,
    # which imports the script again in the child (it must not run main twice)
    (site / "specdsl_engine.py").write_text(
        "import multiprocessing, sys\n"
        "def work():\n    pass\n"
        "class cli:\n    @staticmethod\n    def main():\n"
        "        child = multiprocessing.get_context('spawn').Process(target=work)\n"
        "        child.start(); child.join()\n"
        "        print('engine', sys.argv[1:], child.exitcode)\n        return 3\n")
    stack = Stack(name="pre", python="system", installer="prebuilt", packages=("specdsl-engine==0.5.17",),
                  env=pairs({"PYTHONPATH": str(site)}))
    record = provision(stack, LocalHost(env_root=tmp_path / "envs"), "pre", tmp_path / "log")
    script = Path(record.path) / "bin" / "specdsl-engine"
    done = subprocess.run([str(script), "serve", "m"], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(site)})
    assert (done.returncode, done.stdout) == (3, "engine ['serve', 'm'] 0\n"), done.stderr  # ran once, its worker too, exit status kept


def test_a_pin_the_tree_does_not_meet_fails_naming_it(tmp_path):
    site = site_tree(tmp_path / "site", "specdsl-engine", "0.5.9")
    stack = Stack(name="pre", python="system", installer="prebuilt",
                  packages=("specdsl-engine==0.5.17", "specdsl-kernel==0.4.5"), env=pairs({"PYTHONPATH": str(site)}))
    with pytest.raises(ProvisionError) as err:
        provision(stack, LocalHost(env_root=tmp_path / "envs"), "pre", tmp_path / "log")
    text = str(err.value)
    assert "specdsl-engine==0.5.17: the environment has specdsl-engine 0.5.9" in text
    assert "specdsl-kernel==0.4.5: not in the environment" in text


def test_prebuilt_needs_an_existing_interpreter(tmp_path):
    stack = Stack(name="pre", python="3.11", installer="prebuilt", packages=("x==1",))
    with pytest.raises(ProvisionError, match='installer "prebuilt" installs nothing, so it needs an existing interpreter'):
        provision(stack, LocalHost(env_root=tmp_path / "envs"), "pre", tmp_path / "log")
