"""A stack over an existing interpreter that is itself a virtual environment
(a GPU host's preinstalled torch venv) sees that venv's packages."""

import subprocess
import sys

from specdsl.hosts import LocalHost
from specdsl.model.config import Stack
from specdsl.provision import provision


def test_env_over_a_venv_interpreter_sees_its_packages(tmp_path):
    base = tmp_path / "preinstalled"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(base)], check=True, timeout=120)
    site = next(base.glob("lib/python*/site-packages"))
    (site / "only_in_preinstalled.py").write_text("VALUE = 42\n")
    record = provision(Stack(name="sys", python=str(base / "bin" / "python")), LocalHost(env_root=tmp_path / "envs"), "ident", tmp_path / "log")
    out = subprocess.run([record.python, "-c", "import only_in_preinstalled as m; print(m.VALUE)"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "42"
    assert record.python != str(base / "bin" / "python")  # a new environment, not the interpreter itself
