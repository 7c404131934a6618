"""`state list`, `state show` and `force-unlock` find the state as plan and
apply do: beside the spec named (FILE), in `--state DIR`, or with neither in
`./.specdsl`; with no state there they say where they looked and how to
point at it. The paths `state show` prints open from where the user is."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from specdsl.cli.main import main
from specdsl.state import LockError, RunRecord, ServerRecord, State, locked, run_folder, write_state


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A repository-like folder: proj/x.spec and the state an apply run from
    the root recorded in proj/.specdsl, with run folders on disk and a
    running server's log where the walker writes it. cwd: the root."""
    root = tmp_path / "repo"
    (root / "proj").mkdir(parents=True)
    (root / "proj" / "x.spec").write_text("// applied\n")
    state_dir = Path("proj/.specdsl")  # as apply, run from the root, names it
    monkeypatch.chdir(root)
    state = State.new()
    for run_id in ("20260301T100000Z-00000001", "20260301T100100Z-00000002"):
        run_folder(state_dir, run_id).mkdir(parents=True)
        state = state.with_run(RunRecord(
            id=run_id, step="benchmark.e", identity=f"bench-{run_id[-1]}", experiment="e", status="completed",
            started="t", folder=f"runs/{run_id}"))
    log = run_folder(state_dir, "20260301T100000Z-00000001") / "server.log"
    log.write_text("ready\n")
    state = state.with_server(ServerRecord(
        identity="launch-1", addr="launch.s", host="local", pid=1, pgid=1, port=8000,
        base_url="http://127.0.0.1:8000", log=str(log)))  # what apply records: a path from its cwd
    write_state(state_dir, state)
    return root


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def shown(capsys, *argv) -> dict:
    code, out, err = run(capsys, "state", "show", *argv)
    assert code == 0, err
    return tomllib.loads(out)


def test_from_the_root_without_arguments_says_where_it_looked(project, capsys):
    code, out, err = run(capsys, "state", "list")
    assert (code, out) == (1, "")
    assert err.startswith(f"{project / '.specdsl'}: error: No state found: no .specdsl folder in the current directory")
    assert "`specdsl state list SPEC`" in err and "`specdsl state list --state DIR`" in err
    code, _, err = run(capsys, "state", "show", "baseline.quickstart")
    assert code == 1 and "`specdsl state show baseline.quickstart SPEC`" in err


def test_the_spec_or_the_folder_finds_the_state(project, capsys):
    by_spec = run(capsys, "state", "list", "proj/x.spec")
    by_folder = run(capsys, "state", "list", "--state", "proj/.specdsl")
    assert by_spec == by_folder
    code, out, err = by_spec
    assert code == 0 and err == ""
    assert out.splitlines() == ["server.launch.s", "run.20260301T100000Z-00000001", "run.20260301T100100Z-00000002"]


def test_without_arguments_the_state_of_the_current_directory(project, capsys, monkeypatch):
    monkeypatch.chdir(project / "proj")
    code, out, _ = run(capsys, "state", "list")
    assert code == 0 and "server.launch.s" in out.splitlines()


@pytest.mark.parametrize("where", ["repo", "repo/proj", "elsewhere"])
def test_paths_shown_open_from_where_the_user_is(project, capsys, monkeypatch, where):
    cwd = project.parent / where
    cwd.mkdir(exist_ok=True)
    monkeypatch.chdir(cwd)
    spec = project / "proj" / "x.spec"
    point = [str(spec.relative_to(cwd))] if spec.is_relative_to(cwd) else ["--state", str(project / "proj" / ".specdsl")]
    folder = Path(shown(capsys, "run.20260301T100100Z-00000002", *point)["folder"])
    assert folder.is_dir() and folder.resolve() == (project / "proj/.specdsl/runs/20260301T100100Z-00000002").resolve()
    log = Path(shown(capsys, "server.launch.s", *point)["log"])
    assert log.read_text() == "ready\n"
    assert log.is_absolute() == (where == "elsewhere")  # relative below cwd, absolute outside it


def test_a_state_folder_relative_to_itself_is_read_the_same(project, capsys, monkeypatch):
    # the documented form, `runs/ID/...` relative to the state folder
    text = (project / "proj/.specdsl/state.toml").read_text()
    (project / "proj/.specdsl/state.toml").write_text(text.replace('log = "proj/.specdsl/runs/', 'log = "runs/'))
    monkeypatch.chdir(project / "proj")
    assert Path(shown(capsys, "server.launch.s")["log"]).read_text() == "ready\n"


def test_unknown_address_hint_lists_the_same_state(project, capsys):
    code, _, err = run(capsys, "state", "show", "zzz", "proj/x.spec")
    assert code == 1 and "run `specdsl state list proj/x.spec` to see every address" in err
    code, _, err = run(capsys, "state", "show", "zzz", "--state", "proj/.specdsl")
    assert code == 1 and "run `specdsl state list --state=proj/.specdsl`" in err


def test_no_state_where_pointed_is_an_error_naming_the_folder(project, capsys):
    (project / "other.spec").write_text("")
    code, out, err = run(capsys, "state", "list", "other.spec")
    assert (code, out) == (1, "")
    assert err.startswith(".specdsl: error: No state beside other.spec: there is no .specdsl folder there")
    assert "specdsl apply other.spec" in err
    code, _, err = run(capsys, "state", "list", "missing.spec")
    assert code == 1 and err.startswith("missing.spec: error: No such spec file")
    code, _, err = run(capsys, "state", "list", "proj/.specdsl")
    assert code == 1 and "Is a folder, not a spec file" in err and "`specdsl state list --state proj/.specdsl`" in err
    code, _, err = run(capsys, "state", "list", "--state", "nowhere")
    assert code == 1 and err.startswith("nowhere: error: No such state folder")
    assert "Traceback" not in err


def test_force_unlock_finds_the_lock_beside_the_spec(project, capsys):
    with locked(Path("proj/.specdsl"), "apply") as lock:
        code, out, err = run(capsys, "force-unlock", lock.id, "proj/x.spec")
        assert code == 0, err
        assert f"Removed the lock {lock.id}" in out


def test_a_lock_error_names_the_state_folder_to_unlock(project):
    with locked(Path("proj/.specdsl"), "apply") as lock:
        with pytest.raises(LockError) as err:
            with locked(Path("proj/.specdsl"), "apply"):
                pass
    assert f"`specdsl force-unlock {lock.id} --state proj/.specdsl`" in str(err.value)
