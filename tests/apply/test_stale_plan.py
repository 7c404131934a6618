"""`specdsl apply PLANFILE` refuses a stale saved plan (exit 6) before
anything runs, and its hint is the plan command that makes the plan anew."""

from __future__ import annotations

import shlex

from specdsl.cli.main import main
from specdsl.plan.planfile import read_plan

SPEC = '''variable "n" { default = 2 }

stack "s" {
  python = "system"
}

server "srv" {
  engine  = "command"
  model   = "m"
  command = ["python", "-m", "http.server", "{port}"]
}

workload "w" {
  requests = var.n
}

experiment "grid" {
  matrix   = { c = [1, 2] }
  stack    = stack.s
  server   = server.srv
  workload = workload.w { concurrency = matrix.c }
}
'''


def _hint_command(stderr: str) -> list[str]:
    assert "stale plan:" in stderr, stderr
    return shlex.split(stderr.split("make a new plan with `", 1)[1].split("`", 1)[0])


def test_stale_hint_names_the_plan_file_and_the_options_it_was_made_with(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.spec").write_text(SPEC)
    made = ["plan", "--no-refresh", "x.spec", "-var", "n=3", "--target", "grid[c=2]", "--state", "st",
            "-o", "plans/p.plan.toml"]
    assert main(made) == 0
    old = read_plan(tmp_path / "plans/p.plan.toml")
    (tmp_path / "x.spec").write_text(SPEC.replace("requests = var.n", "requests = var.n * 2"))
    capsys.readouterr()

    assert main(["apply", "plans/p.plan.toml", "--state", "st"]) == 6
    err = capsys.readouterr().err
    again = _hint_command(err)
    assert again == ["specdsl", "plan", "x.spec", "-var=n=3", "--target=grid[c=2]", "--state=st", "-o", "plans/p.plan.toml"]
    assert "'--target=grid[c=2]'" in err  # quoted for the shell

    # the hint, run as printed, makes the plan anew with the same settings
    assert main(again[1:] + ["--no-refresh"]) == 0
    new = read_plan(tmp_path / "plans/p.plan.toml")
    assert (new.variables, new.targets, new.rerun) == (old.variables, old.targets, old.rerun)
    assert new.spec_digest != old.spec_digest


def test_stale_hint_of_a_plain_plan(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.spec").write_text(SPEC)
    assert main(["plan", "--no-refresh", "x.spec", "-o", "p.plan.toml"]) == 0
    (tmp_path / "x.spec").write_text(SPEC.replace("c = [1, 2]", "c = [1, 3]"))
    capsys.readouterr()
    assert main(["apply", "p.plan.toml"]) == 6
    assert _hint_command(capsys.readouterr().err) == ["specdsl", "plan", "x.spec", "-o", "p.plan.toml"]


def test_a_change_of_a_file_imported_by_absolute_path_outside_the_spec_folder_makes_the_plan_stale(tmp_path, monkeypatch,
                                                                                                   capsys):
    (tmp_path / "shared").mkdir()
    (tmp_path / "proj").mkdir()
    shared = tmp_path / "shared" / "servers.spec"
    shared.write_text(SPEC[SPEC.index('server "srv"'):SPEC.index('workload "w"')])
    root = SPEC.replace(SPEC[SPEC.index('server "srv"'):SPEC.index('workload "w"')], "")
    (tmp_path / "proj" / "x.spec").write_text(f'import "{shared}"\n\n' + root)
    monkeypatch.chdir(tmp_path / "proj")
    assert main(["plan", "--no-refresh", "x.spec", "--state", "st", "-o", "p.plan.toml"]) == 0
    shared.write_text(shared.read_text().replace('"http.server"', '"http.server", "--bind", "127.0.0.1"'))
    capsys.readouterr()
    assert main(["apply", "p.plan.toml", "--state", "st"]) == 6
    assert "stale plan: x.spec (or a file it imports, or a variable) changed" in capsys.readouterr().err
