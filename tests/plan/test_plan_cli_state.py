"""`specdsl plan` and `state list|show` through the CLI against recorded
state: a truncated, hand-edited or newer-format state file is a clear error
naming the file (exit 1, nothing on stdout, the file untouched); planning
never writes into the state folder; `-o` never overwrites a file that is not
a saved plan; an unknown `--target` names the spec and a suggestion."""

import hashlib
import json
import re
from pathlib import Path

import pytest

from specdsl.cli.main import main
from specdsl.state import write_state

from plan_helpers import SPEC, applied_state, plan_for, resolve_text


def snapshot(folder: Path) -> dict[str, str]:
    """Relative path -> sha256 of every file under `folder`."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def recorded(tmp_path):
    """(spec path, state folder) where the state is what a full apply of SPEC records."""
    cfg = resolve_text(tmp_path, SPEC)
    graph, _ = plan_for(cfg)
    state_dir = tmp_path / "state"
    write_state(state_dir, applied_state(graph))
    return tmp_path / "x.spec", state_dir


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


BROKEN = {
    "truncated": (lambda text: text[: len(text) // 3], "not valid TOML"),
    "newer format": (lambda text: re.sub(r"(?m)^format_version = \d+", "format_version = 99", text), "newer specdsl"),
    "hand-edited serial": (lambda text: re.sub(r"(?m)^serial = \d+", 'serial = "two"', text), "serial"),
    "not utf-8": (lambda text: text.replace("lineage", "line\udcffage"), "UTF-8"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
@pytest.mark.parametrize("extra", [[], ["--json"], ["--detailed-exitcode"]], ids=["text", "json", "detailed"])
def test_broken_state_is_a_clear_error_and_left_untouched(recorded, capsys, case, extra):
    spec, state_dir = recorded
    state_file = state_dir / "state.toml"
    edit, expected = BROKEN[case]
    state_file.write_bytes(edit(state_file.read_text()).encode("utf-8", "surrogateescape"))
    before = snapshot(state_dir)
    code, out, err = run(capsys, "plan", "--no-refresh", str(spec), "--state", str(state_dir), *extra)
    assert code == 1
    if extra == ["--json"]:  # no partial plan: the error, as JSON (docs/language.md)
        (diag,) = json.loads(out)["diagnostics"]
        assert diag["file"] == str(state_file) and expected in diag["summary"] + diag.get("detail", "")
    else:
        assert out == ""  # no partial plan
    assert expected in err
    assert str(state_file) in err  # names the file
    assert "hint:" in err  # and says what to do
    assert "Traceback" not in err
    assert err.count("error:") == 1, err  # one prefix, not `specdsl: error: PATH: error:`
    assert snapshot(state_dir) == before


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_state_list_on_broken_state_is_a_clear_error(recorded, capsys, case):
    _, state_dir = recorded
    state_file = state_dir / "state.toml"
    edit, expected = BROKEN[case]
    state_file.write_bytes(edit(state_file.read_text()).encode("utf-8", "surrogateescape"))
    before = snapshot(state_dir)
    for argv in (["state", "list"], ["state", "show", "run.r1"]):
        code, out, err = run(capsys, *argv, "--state", str(state_dir))
        assert code == 1 and out == ""
        assert expected in err and str(state_file) in err
    assert snapshot(state_dir) == before


def test_state_folder_in_the_way_is_a_clear_error(tmp_path, capsys):
    resolve_text(tmp_path, SPEC)
    blocker = tmp_path / "file"
    blocker.write_text("keep me\n")
    code, out, err = run(capsys, "plan", "--no-refresh", str(tmp_path / "x.spec"), "--state", str(blocker))
    assert code == 1 and out == ""
    assert str(blocker) in err and "not a folder" in err
    assert blocker.read_text() == "keep me\n"


def test_plan_never_writes_into_the_state_folder(recorded, capsys, tmp_path):
    spec, state_dir = recorded
    before = snapshot(state_dir)
    code, out, _ = run(capsys, "plan", "--no-refresh", str(spec), "--state", str(state_dir), "-o", str(tmp_path / "p.plan.toml"))
    assert code == 0 and "against state" in out
    assert snapshot(state_dir) == before
    empty = tmp_path / "never-created"
    assert run(capsys, "plan", "--no-refresh", str(spec), "--state", str(empty))[0] == 0
    assert not empty.exists()


def test_same_inputs_same_bytes_through_the_cli(recorded, capsys):
    spec, state_dir = recorded
    for extra in ([], ["--json"]):
        first = run(capsys, "plan", "--no-refresh", str(spec), "--state", str(state_dir), *extra)
        second = run(capsys, "plan", "--no-refresh", str(spec), "--state", str(state_dir), *extra)
        assert first == second
        assert first[1]


def test_detailed_exitcode_against_recorded_state(recorded, capsys):
    spec, state_dir = recorded
    # recorded results, but nothing promoted yet: the promote is the one change
    code, out, _ = run(capsys, "plan", "--no-refresh", str(spec), "--state", str(state_dir), "--detailed-exitcode", "--json")
    doc = json.loads(out)
    assert code == 2 and doc["has_changes"] is True
    assert [c["addr"] for c in doc["changes"] if c["action"] not in ("=", "?")] == ["promote.cand"]
    assert doc["summary"] == {"create": 0, "replace": 0, "reuse": 6, "run": 0, "check": 2, "promote": 1, "destroy": 0}
    # only the baseline experiment: checks and promote are not in it, no changes
    code, out, _ = run(capsys, "plan", "--no-refresh", str(spec), "--state", str(state_dir), "--detailed-exitcode", "--target", "base")
    assert code == 0, out
    assert "No changes." in out


def test_unknown_target_names_spec_and_suggests(recorded, capsys):
    spec, state_dir = recorded
    code, out, err = run(capsys, "plan", "--no-refresh", str(spec), "--state", str(state_dir), "--target", "bse", "--detailed-exitcode")
    assert code == 1 and out == ""
    assert "--target bse: no experiment of that name" in err and str(spec) in err
    assert "did you mean `base`?" in err
    code, out, err = run(capsys, "plan", "--no-refresh", str(spec), "--state", str(state_dir), "--target", "zzzzzz")
    assert code == 1 and out == ""
    assert "experiments: base, cand" in err


def test_state_list_and_show_through_the_cli(recorded, capsys):
    _, state_dir = recorded
    code, out, err = run(capsys, "state", "list", "--state", str(state_dir))
    assert code == 0 and err == ""
    addrs = out.splitlines()
    assert "run.r1" in addrs and "run.r2" in addrs
    assert any(a.startswith("environment.") for a in addrs)
    code, out, _ = run(capsys, "state", "show", "run.r1", "--state", str(state_dir))
    assert code == 0
    assert out.startswith("# run.r1\n") and 'step = "benchmark.base"' in out
    code, out, err = run(capsys, "state", "show", "run.r9", "--state", str(state_dir))
    assert code == 1 and out == ""
    assert str(state_dir / "state.toml") in err and "No resource `run.r9`" in err
    # an empty folder: no state found there, said as an error naming the folder
    empty = state_dir.parent / "empty"
    empty.mkdir()
    code, out, err = run(capsys, "state", "list", "--state", str(empty))
    assert (code, out) == (1, "")
    assert err.startswith(f"{empty}: error: No state recorded in this folder (no state.toml)")


def test_out_never_overwrites_a_file_that_is_not_a_plan(recorded, capsys):
    spec, state_dir = recorded
    spec_text = spec.read_text()
    for victim in (spec, state_dir / "state.toml"):
        before = victim.read_bytes()
        code, out, err = run(capsys, "plan", "--no-refresh", str(spec), "--state", str(state_dir), "-o", str(victim))
        assert code == 1 and out == ""
        assert str(victim) in err and "not a specdsl plan file" in err
        assert victim.read_bytes() == before
        assert not victim.with_name(victim.name + ".tmp").exists()
    assert spec.read_text() == spec_text
    # a folder is refused too; an earlier saved plan is replaced
    code, _, err = run(capsys, "plan", "--no-refresh", str(spec), "--state", str(state_dir), "-o", str(state_dir))
    assert code == 1 and "is a folder" in err
    saved = spec.parent / "plans" / "x.plan.toml"
    assert run(capsys, "plan", "--no-refresh", str(spec), "--state", str(state_dir), "-o", str(saved))[0] == 0
    first = saved.read_text()
    assert run(capsys, "plan", "--no-refresh", str(spec), "--state", str(state_dir), "-o", str(saved), "--rerun")[0] == 0
    assert saved.read_text() != first and "rerun = true" in saved.read_text()
