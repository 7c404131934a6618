"""Input an adversarial user writes: every one gets a located diagnostic from
the real command line, never a traceback (symbolic link loops, operator
chains at and past the limits, NUL characters that would only fail at
launch, an import of a file that is not a spec and may hold a secret)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

LOCATED = re.compile(r"^(?P<file>[^\n:]+):(?P<line>\d+):(?P<col>\d+): error: (?P<summary>.+)$", re.M)
SERVER = 'server "s" {\n  engine  = "command"\n  model   = "m"\n  command = ["python", "-c", "1", "{port}"]\n}\n'
REST = 'stack "st" {\n  python = "system"\n}\n\nworkload "w" {}\n'


def cli(*args, cwd: Path) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "specdsl.cli.main", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=120)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    return proc


def located(proc) -> list[tuple[str, int, int, str]]:
    return [(m["file"], int(m["line"]), int(m["col"]), m["summary"]) for m in LOCATED.finditer(proc.stderr)]


def experiment(asserts: str) -> str:
    return SERVER + REST + ('experiment "e" {\n  stack    = stack.st\n  server   = server.s\n  workload = workload.w\n'
                            f'  assert "a" {{ {asserts} }}\n}}\n')


# -- symbolic links that loop ---------------------------------------------------


def test_import_of_a_link_to_itself(tmp_path):
    os.symlink("self.spec", tmp_path / "self.spec")
    (tmp_path / "main.spec").write_text('import "self.spec"\n')
    for args in (["validate"], ["plan", "--no-refresh"]):
        proc = cli(*args, "main.spec", cwd=tmp_path)
        assert proc.returncode == 1
        assert ("main.spec", 1, 8, "`self.spec` is a symbolic link that loops") in located(proc), proc.stderr


def test_links_that_loop_through_each_other_and_a_root_that_loops(tmp_path):
    os.symlink("b.spec", tmp_path / "a.spec")
    os.symlink("a.spec", tmp_path / "b.spec")
    (tmp_path / "main.spec").write_text('# two links\nimport "a.spec"\n')
    proc = cli("validate", "main.spec", cwd=tmp_path)
    assert proc.returncode == 1 and ("main.spec", 2, 8, "`a.spec` is a symbolic link that loops") in located(proc)
    for command in ("validate", "fmt"):
        proc = cli(command, "a.spec", cwd=tmp_path)
        assert proc.returncode == 1 and located(proc)[0][3] == "`a.spec` is a symbolic link that loops", proc.stderr


# -- long chains ----------------------------------------------------------------


def chain(n: int, op: str = "-") -> str:
    return f" {op} ".join(["1"] * n)


def test_fmt_and_validate_of_a_499_operand_chain(tmp_path):
    spec = tmp_path / "c.spec"
    spec.write_text(experiment(f"output_throughput >= {chain(499)}"))
    assert cli("validate", spec, cwd=tmp_path).returncode == 0
    assert cli("fmt", "--check", spec, cwd=tmp_path).returncode == 1  # printed (without recursing): would change
    assert cli("fmt", spec, cwd=tmp_path).returncode == 0
    assert cli("fmt", "--check", spec, cwd=tmp_path).returncode == 0
    assert chain(499) in spec.read_text()
    messy = tmp_path / "messy.spec"
    messy.write_text(spec.read_text().replace(" - ", "-  ").replace("-  ", " -   "))
    assert cli("fmt", messy, cwd=tmp_path).returncode == 0
    assert messy.read_text() == spec.read_text()
    plan = cli("plan", "--no-refresh", spec, cwd=tmp_path)
    assert plan.returncode == 0 and "1 to check" in plan.stdout, plan.stderr


def test_unary_chains_at_the_limit_print_and_plan(tmp_path):
    spec = tmp_path / "u.spec"
    spec.write_text(experiment("not " * 500 + "output_throughput >= " + "- " * 499 + "1"))
    assert cli("validate", spec, cwd=tmp_path).returncode == 0
    assert cli("fmt", spec, cwd=tmp_path).returncode == 0
    assert cli("fmt", "--check", spec, cwd=tmp_path).returncode == 0  # idempotent
    assert cli("validate", spec, cwd=tmp_path).returncode == 0  # and the formatted text means the same
    assert cli("plan", "--no-refresh", spec, cwd=tmp_path).returncode == 0


@pytest.mark.parametrize("command", ["validate", "fmt"])
def test_5000_operands_are_a_located_error(tmp_path, command):
    spec = tmp_path / "long.spec"
    spec.write_text(f'workload "w" {{\n  requests = {chain(5000)}\n}}\n')
    proc = cli(command, "long.spec", cwd=tmp_path)
    assert proc.returncode == 1
    assert located(proc) == [("long.spec", 2, 14, "Expression too long")]


@pytest.mark.parametrize("command", ["validate", "fmt", "plan"])
def test_chains_nested_in_brackets_past_the_depth_limit(tmp_path, command):
    expr = "1"
    for _ in range(30):  # 30 x 480 levels: each chain is allowed, all of them are not
        expr = f"({expr} - {chain(480)})"
    spec = tmp_path / "deep.spec"
    spec.write_text(experiment(f"output_throughput >= {expr}"))
    proc = cli(command, spec, *(["--no-refresh"] if command == "plan" else []), cwd=tmp_path)
    assert proc.returncode == 1
    assert [d[3] for d in located(proc)] == ["Expression nested too deeply"], proc.stderr


# -- NUL characters -------------------------------------------------------------


@pytest.mark.parametrize(
    "where, text, line, col, summary",
    [
        ("model", '  model = "tiny\\0llama"\n', 3, 11, "String contains a NUL character"),
        ("model-u", '  model = "tiny\\u0000llama"\n', 3, 11, "String contains a NUL character"),
        ("env-value", '  model = "m"\n  env = { HF_HOME = "/tmp/\\0" }\n', 4, 21, "String contains a NUL character"),
        ("env-key", '  model = "m"\n  env = { "A\\0B" = "1" }\n', 4, 11, "Map key contains a NUL character"),
        ("argv", '  model = "m"\n  args = { served-model-name = "x\\0" }\n', 4, 32, "String contains a NUL character"),
    ],
    ids=["model", "model-u0000", "env-value", "env-key", "argv"],
)
def test_nul_in_what_reaches_argv_or_env_is_refused_by_validate(tmp_path, where, text, line, col, summary):
    spec = tmp_path / "nul.spec"
    spec.write_text('server "s" {\n  engine = "vllm"\n' + text + "}\n")
    proc = cli("validate", "nul.spec", cwd=tmp_path)
    assert proc.returncode == 1
    assert ("nul.spec", line, col, summary) in located(proc), proc.stderr


def test_nul_in_names_imports_and_variables(tmp_path):
    (tmp_path / "vars.spec").write_text('model = "a\\0b"\n')
    spec = tmp_path / "n.spec"
    spec.write_text('import "x\\0.spec"\n\nvariable "model" { default = "m" }\n\n'
                    'server "s\\0" {\n  engine  = "command"\n  model   = var.model\n  command = ["{port}"]\n}\n')
    proc = cli("validate", spec, "--var-file", "vars.spec", cwd=tmp_path)
    assert proc.returncode == 1
    found = {(d[1], d[3]) for d in located(proc)}
    assert (1, "An import path contains a NUL character") in found
    assert (5, "The name of a server block contains a NUL character") in found
    assert (1, "String contains a NUL character") in found  # in vars.spec
    proc = cli("plan", "--no-refresh", spec, "--var-file", "vars.spec", cwd=tmp_path)
    assert proc.returncode == 1 and "embedded null" not in proc.stderr


# -- importing something that is not a spec -------------------------------------


def test_import_of_a_dotenv_file_names_it_and_does_not_echo_it(tmp_path):
    secret = "hf_" + "Q" * 34
    (tmp_path / ".env").write_text(f"HF_TOKEN={secret}\nOTHER=1\n")
    (tmp_path / "main.spec").write_text('import ".env"\n' + SERVER)
    proc = cli("validate", "main.spec", cwd=tmp_path)
    assert proc.returncode == 1
    assert located(proc) == [("main.spec", 1, 8, "`.env` is not a spec file")]
    # refused by its name, before it is read: nothing of it (not its size, not its lines) is said
    assert "this one was not read" in proc.stderr and "line" not in proc.stderr.split("hint:")[1]
    assert secret not in proc.stdout + proc.stderr and "HF_TOKEN" not in proc.stderr
    proc = cli("validate", "--json", "main.spec", cwd=tmp_path)
    assert secret not in proc.stdout + proc.stderr


def test_import_of_a_binary_file_says_what_it_is(tmp_path):
    (tmp_path / "key.spec").write_bytes(b"\x89secret\xff\xfe\x00token")
    (tmp_path / "main.spec").write_text('import "key.spec"\n')
    proc = cli("validate", "main.spec", cwd=tmp_path)
    assert located(proc) == [("main.spec", 1, 8, "`key.spec` is not a spec file")]
    assert "binary file" in proc.stderr and "secret" not in proc.stderr.replace("may hold a secret", "")
    assert "byte" not in proc.stderr  # never its size


def test_a_spec_with_a_mistake_is_still_shown_at_its_line(tmp_path):
    (tmp_path / "typo.spec").write_text('stack "a" { python = }\n')
    (tmp_path / "main.spec").write_text('import "typo.spec"\n')
    proc = cli("validate", "main.spec", cwd=tmp_path)
    assert located(proc) == [("typo.spec", 1, 22, "Unexpected `}`")]
    assert 'stack "a" { python = }' in proc.stderr


def test_an_absolute_import_outside_the_folder_is_reported_at_its_path(tmp_path):
    """The position is the path's (the caret's), not the statement's start."""
    outside = tmp_path / "elsewhere" / "notes.txt"
    outside.parent.mkdir()
    outside.write_text("not a spec\n")
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "a.spec").write_text(f'import "{outside}"\n')
    proc = cli("validate", "a.spec", cwd=tmp_path / "proj")
    [(name, line, col, summary)] = located(proc)
    assert (name, line, col) == ("a.spec", 1, 8) and summary.endswith("is not a spec file")
    caret = proc.stderr.splitlines()[2]
    assert caret.index("^") - caret.index("|") - 2 == 7, proc.stderr  # under the path's opening quote
