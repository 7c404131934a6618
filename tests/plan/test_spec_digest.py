"""The spec digest a saved plan records covers what the spec means, not how
it is written: comments, layout and `specdsl fmt` keep a saved plan fresh;
a value, a value in an imported file, a variable file or a `-var` make it
stale, and `apply PLANFILE` refuses it with exit 6."""

from __future__ import annotations

import argparse

import pytest

from specdsl.cli.common import load_spec
from specdsl.cli.main import main
from specdsl.graph.build import build_graph
from specdsl.state import write_state

from plan_helpers import applied_state

COMMON = '''// shared by the experiments
stack "s" {
  python   = "3.11"
  packages = ["torch==2.13.0"]
}
'''

SPEC = '''import "common.spec"

variable "n" { default = 16 }

server "srv" {
  engine = "sglang"
  model  = "m"
  args   = { attention-backend = "triton" }
}

workload "w" {
  requests    = var.n
  concurrency = 4
}

experiment "grid" {
  matrix   = { c = [1, 4] }
  stack    = stack.s
  server   = server.srv
  workload = workload.w { concurrency = matrix.c }
}
'''

# edits that change how the spec is written, not what it says
LAYOUT_EDITS = {
    "comment added": lambda spec, common: ("# the sweep of this folder\n" + spec.replace(
        'engine = "sglang"', 'engine = "sglang"   // the engine'), common),
    "blank lines and indentation": lambda spec, common: (spec.replace("\n\n", "\n\n\n").replace(
        "  requests    = var.n", "    requests = var.n"), common),
    "one line instead of three": lambda spec, common: (spec.replace(
        'variable "n" { default = 16 }', 'variable "n" {\n  default = 16\n}'), common),
    "comment in the imported file": lambda spec, common: (spec, common.replace("// shared by", "// used by")),
}

# edits that change what the spec says
VALUE_EDITS = {
    "a server argument": lambda spec, common: (spec.replace('"triton"', '"fa3"'), common),
    "a matrix value": lambda spec, common: (spec.replace("c = [1, 4]", "c = [1, 8]"), common),
    "a variable's default": lambda spec, common: (spec.replace("default = 16", "default = 32"), common),
    "a value in the imported file": lambda spec, common: (spec, common.replace("torch==2.13.0", "torch==2.12.0")),
}


def write(folder, spec=SPEC, common=COMMON):
    (folder / "x.spec").write_text(spec)
    (folder / "common.spec").write_text(common)
    return folder / "x.spec"


def digest(path, *, vars=(), var_files=()):
    loaded = load_spec(argparse.Namespace(file=str(path), vars=list(vars), var_files=list(var_files)))
    assert loaded is not None
    return loaded.digest


@pytest.mark.parametrize("edit", sorted(LAYOUT_EDITS))
def test_layout_and_comments_keep_the_digest(tmp_path, edit):
    before = digest(write(tmp_path))
    write(tmp_path, *LAYOUT_EDITS[edit](SPEC, COMMON))
    assert (tmp_path / "x.spec").read_text() + (tmp_path / "common.spec").read_text() != SPEC + COMMON
    assert digest(tmp_path / "x.spec") == before


@pytest.mark.parametrize("edit", sorted(VALUE_EDITS))
def test_a_changed_value_changes_the_digest(tmp_path, edit):
    before = digest(write(tmp_path))
    write(tmp_path, *VALUE_EDITS[edit](SPEC, COMMON))
    assert digest(tmp_path / "x.spec") != before


def test_variables_from_the_command_line_and_files_change_the_digest(tmp_path):
    spec = write(tmp_path)
    plain = digest(spec)
    (tmp_path / "a.vars").write_text("n = 16\n")
    (tmp_path / "b.vars").write_text("n = 8\n")
    assert digest(spec, vars=["n=8"]) != plain
    assert digest(spec, vars=["n=8"]) == digest(spec, vars=["n=8"])
    assert digest(spec, var_files=[tmp_path / "b.vars"]) != digest(spec, var_files=[tmp_path / "a.vars"])


def test_fmt_keeps_the_digest(tmp_path):
    spec = write(tmp_path, SPEC.replace("  args   = {", "  args = {"))
    before = digest(spec)
    assert main(["fmt", str(spec)]) == 0
    assert "  args   = {" in spec.read_text()  # fmt did rewrite the file
    assert digest(spec) == before


@pytest.fixture
def applied(tmp_path, monkeypatch):
    """A spec whose state records a complete apply (so applying a fresh
    plan of it starts nothing), and a saved plan of it."""
    monkeypatch.chdir(tmp_path)
    spec = write(tmp_path)
    loaded = load_spec(argparse.Namespace(file=str(spec), vars=[], var_files=[]))
    write_state(tmp_path / ".specdsl", applied_state(build_graph(loaded.resolved.config)))
    monkeypatch.setenv("SPECDSL_ENV_ROOT", str(tmp_path / "envs"))

    def save() -> None:
        assert main(["plan", "--no-refresh", "x.spec", "-o", "p.plan.toml"]) == 0

    return save


def test_apply_of_a_saved_plan_after_a_comment_edit_goes_ahead(applied, tmp_path, capsys):
    applied()
    write(tmp_path, *LAYOUT_EDITS["comment added"](SPEC, COMMON))
    capsys.readouterr()
    assert main(["apply", "p.plan.toml"]) == 0
    out, err = capsys.readouterr()
    assert "stale plan" not in err
    assert "0 server launches" in out


def test_apply_of_a_saved_plan_after_a_value_edit_is_refused(applied, tmp_path, capsys):
    applied()
    write(tmp_path, *VALUE_EDITS["a value in the imported file"](SPEC, COMMON))
    capsys.readouterr()
    assert main(["apply", "p.plan.toml"]) == 6
    err = capsys.readouterr().err
    assert "stale plan: x.spec (or a file it imports, or a variable) changed since the plan was made" in err
