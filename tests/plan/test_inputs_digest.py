"""A saved plan's digest covers every file the spec reads, wherever it is
(issue 34): an import outside the spec's folder, a variable file, a dataset
named by path. Layout and comments still keep it (test_spec_digest.py).
An import that is not a spec is refused by its name, before it is read."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

from specdsl.cli.common import load_spec
from specdsl.cli.main import main

SPEC = '''import "../../outside.spec"

variable "n" { default = 4 }

stack "s" { python = "system" }
server "m" {
  engine  = "command"
  model   = "m"
  command = ["true", "{port}"]
}
workload "data" {
  dataset  = "prompts.jsonl"
  requests = var.n
}
experiment "e" {
  stack    = stack.s
  server   = server.m
  workload = workload.w
}
experiment "d" {
  stack    = stack.s
  server   = server.m
  workload = workload.data
}
'''
OUTSIDE = '''// shared, two folders up
workload "w" { requests = 2 }
workload "unused" { requests = 5 }
'''


def _tree(tmp_path):
    here = tmp_path / "a" / "b"
    here.mkdir(parents=True)
    (here / "x.spec").write_text(SPEC)
    (tmp_path / "outside.spec").write_text(OUTSIDE)
    (here / "prompts.jsonl").write_text('{"prompt": "hello there"}\n')
    (here / "vars.spec").write_text("n = 4\n")
    return here


def _digest(here, var_files=()) -> str:
    loaded = load_spec(argparse.Namespace(file=str(here / "x.spec"), vars=[], var_files=[str(here / f) for f in var_files]))
    assert loaded is not None
    return loaded.digest


def test_every_file_read_is_in_the_digest(tmp_path):
    here = _tree(tmp_path)
    first = _digest(here)
    outside = tmp_path / "outside.spec"
    outside.write_text(OUTSIDE.replace("// shared, two folders up", "// a comment, edited"))
    assert _digest(here) == first  # a comment: the same meaning
    outside.write_text(OUTSIDE.replace("requests = 5", "requests = 6"))  # a block no experiment uses
    assert _digest(here) != first
    outside.write_text(OUTSIDE)
    assert _digest(here) == first
    (here / "prompts.jsonl").write_text('{"prompt": "hello there, again"}\n')  # the dataset's bytes
    changed = _digest(here)
    assert changed != first
    with_vars = _digest(here, ["vars.spec"])
    (here / "vars.spec").write_text("// the same value\nn = 4\n")
    assert _digest(here, ["vars.spec"]) == with_vars
    (here / "vars.spec").write_text("n = 5\n")
    assert _digest(here, ["vars.spec"]) != with_vars


def test_apply_of_a_saved_plan_after_an_outside_import_changed_is_refused(tmp_path, monkeypatch, capsys):
    here = _tree(tmp_path)
    monkeypatch.chdir(here)
    monkeypatch.setenv("SPECDSL_ENV_ROOT", str(tmp_path / "envs"))
    assert main(["plan", "--no-refresh", "x.spec", "-o", "p.plan.toml"]) == 0
    (tmp_path / "outside.spec").write_text(OUTSIDE.replace("requests = 5", "requests = 7"))
    capsys.readouterr()
    assert main(["apply", "p.plan.toml"]) == 6
    assert "stale plan: x.spec (or a file it imports, or a variable) changed since the plan was made" in capsys.readouterr().err


def test_an_import_that_is_not_a_spec_is_not_read(tmp_path):
    # a FIFO: reading it would block until a writer came. Refused by its name, it returns at once.
    fifo = tmp_path / "passwd"
    os.mkfifo(fifo)
    (tmp_path / "main.spec").write_text(f'import "{fifo}"\n')
    proc = subprocess.run([sys.executable, "-m", "specdsl.cli.main", "validate", "main.spec"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"main.spec:1:8: error: `{os.path.relpath(fifo, tmp_path)}` is not a spec file"), proc.stderr
    assert "this one was not read" in proc.stderr and "byte" not in proc.stderr and "line" not in proc.stderr.split("hint:")[1]
