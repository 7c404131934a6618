"""The suite's own guards: a test that hangs fails (pytest-timeout, with the
per-test limit of pyproject.toml), it does not stall CI."""

from __future__ import annotations

import subprocess
import sys


def test_every_test_has_a_time_limit(request):
    assert float(request.config.getini("timeout")) == 600, "pyproject.toml [tool.pytest.ini_options] timeout"


def test_a_test_past_its_limit_fails_with_its_stack(tmp_path):
    (tmp_path / "test_hang.py").write_text("import time\n\n\ndef test_hang():\n    time.sleep(60)\n")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "timeout=1",
                           str(tmp_path / "test_hang.py")], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Timeout" in proc.stdout and "time.sleep(60)" in proc.stdout, proc.stdout
