"""What a Terraform user types: `-auto-approve`, `-no-color`,
`-input=false`, `-lock=false`, `fmt -recursive` read as specdsl's own
options (or accepted, with a note); an option a command does not take said
by that command, with its usage and the closest option; `state list
--json`; `state show` of a step with its content as a table, not one
escaped JSON string."""

from __future__ import annotations

import io
import json
import tomllib

import pytest

from specdsl.cli.main import build_parser, main, terraform_spellings
from specdsl.state import write_state

from plan_helpers import SPEC, applied_state, plan_for, resolve_text


@pytest.fixture
def recorded(tmp_path):
    cfg = resolve_text(tmp_path, SPEC)
    graph, _ = plan_for(cfg)
    state_dir = tmp_path / "state"
    write_state(state_dir, applied_state(graph))
    return tmp_path / "x.spec", state_dir


def run(capsys, *argv):
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def test_terraform_only_options_are_read_as_ours():
    parser = build_parser()
    notes: list[str] = []
    assert terraform_spellings(["apply", "x.spec", "-auto-approve", "-no-color", "-input=false", "-lock=false"], parser, notes) \
        == ["apply", "x.spec", "--yes", "--no-color", "--no-input"]
    assert len(notes) == 1 and notes[0].startswith("-lock=false is not needed") and "force-unlock" in notes[0]
    assert terraform_spellings(["apply", "x.spec", "--auto-approve", "-input=true", "-lock=true"], parser) == ["apply", "x.spec", "--yes"]
    assert terraform_spellings(["fmt", "-recursive"], parser) == ["fmt"]
    # a command without confirmation keeps -auto-approve, for its own error
    assert terraform_spellings(["plan", "x.spec", "-auto-approve"], parser) == ["plan", "x.spec", "-auto-approve"]
    assert terraform_spellings(["plan", "x.spec", "--", "-auto-approve"], parser) == ["plan", "x.spec", "--", "-auto-approve"]


def test_plan_takes_no_color_and_lock_false_with_a_note(recorded, capsys, monkeypatch):
    spec, state_dir = recorded
    monkeypatch.delenv("NO_COLOR", raising=False)
    code, out, err = run(capsys, "plan", str(spec), "--state", str(state_dir), "-no-color", "-lock=false", "-refresh=false")
    assert code == 0, err
    assert "Plan:" in out and "\x1b[" not in out
    assert "specdsl: note: -lock=false is not needed" in err
    import os

    assert "NO_COLOR" not in os.environ  # put back for the next in-process caller


def test_apply_with_input_false_refuses_to_ask(recorded, capsys, monkeypatch):
    spec, state_dir = recorded

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr("sys.stdin", Tty())  # a terminal, where apply would ask
    code, _out, err = run(capsys, "apply", str(spec), "--state", str(state_dir), "-input=false", "-refresh=false",
                          "--rerun")
    assert code == 1
    assert "error: apply changes things: confirm with --yes (-auto-approve) (-input=false: no question is asked)" in err


def test_an_unknown_option_is_said_by_its_command_with_the_closest_one(capsys):
    code, out, err = run(capsys, "plan", "x.spec", "--targt", "cand")
    assert code == 1 and out == ""
    assert err.startswith("usage: specdsl plan ")  # the command's usage, not the top level's
    assert err.splitlines()[-1] == "specdsl: error: plan: unrecognized arguments: --targt cand (--targt: did you mean `--target`?)"
    code, _out, err = run(capsys, "state", "list", "--jsno")
    assert code == 1 and err.startswith("usage: specdsl state list ")
    assert "did you mean `--json`?" in err
    code, _out, err = run(capsys, "apply", "x.spec", "--zzzz")
    assert code == 1 and err.splitlines()[-1] == "specdsl: error: apply: unrecognized arguments: --zzzz"


def test_fmt_recursive_formats_the_current_folder(tmp_path, capsys, monkeypatch):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "deep.spec").write_text('host "h" {   gpus=8 }\n')
    monkeypatch.chdir(tmp_path)
    code, _out, err = run(capsys, "fmt", "-recursive", "-check")
    assert code == 1 and err.splitlines() == ["a/deep.spec: would reformat"]
    assert run(capsys, "fmt", "-recursive")[0] == 0
    assert (tmp_path / "a" / "deep.spec").read_text() == 'host "h" { gpus = 8 }\n'


def test_state_list_json_and_a_structured_state_show(recorded, capsys):
    _spec, state_dir = recorded
    code, listed, _ = run(capsys, "state", "list", "--state", str(state_dir))
    code, out, err = run(capsys, "state", "list", "--state", str(state_dir), "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["format_version"] == 1
    assert [r["addr"] for r in doc["resources"]] == listed.splitlines()
    kinds = {r["addr"]: r["kind"] for r in doc["resources"]}
    launch = next(a for a in kinds if a.startswith("launch."))
    assert kinds[launch] == "launch" and any(k == "run" for k in kinds.values())

    code, out, err = run(capsys, "state", "show", launch, "--state", str(state_dir))
    assert code == 0, err
    shown = tomllib.loads(out)
    assert isinstance(shown["content"], dict) and shown["content"]  # a table, not an escaped JSON string
    assert '\\"' not in out
    code, out, _ = run(capsys, "state", "show", launch, "--state", str(state_dir), "--json")
    doc = json.loads(out)
    assert doc["addr"] == launch and doc["kind"] == "launch" and isinstance(doc["content"], dict)
    assert set(shown["content"]) <= set(doc["content"])  # the same table (JSON keeps what TOML cannot write, null)
