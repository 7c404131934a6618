"""One CLI grammar: Terraform's single-dash spellings (`-out=`, `-json`,
`-var-file=`, `-refresh=false`), `fmt` on folders, JSON on stdout for a
`--json` command on invalid input, an empty history as empty JSON, one run
address spelling (`run.ID` or the bare ID) in `state show` and `diff`,
`state show` of a check with its verdict and evidence, the name-then-spec
order of `calibrate` (the old order kept, with a warning), one error
prefix, colour only on a terminal and never with NO_COLOR."""

from __future__ import annotations

import io
import json
import math

import pytest

from specdsl.cli.main import build_parser, main, terraform_spellings
from specdsl.cli.views import coloured_plan
from specdsl.state import write_state
from specdsl.state.model import RunRecord
from specdsl.verdict import Decision, Status, Verdict

from plan_helpers import SPEC, applied_state, plan_for, resolve_text


@pytest.fixture
def recorded(tmp_path):
    """(spec path, state folder): what a full apply of SPEC records, plus a
    verdict of check.cand.faster."""
    cfg = resolve_text(tmp_path, SPEC)
    graph, _ = plan_for(cfg)
    state = applied_state(graph)
    check = graph.steps["check.cand.faster"]
    state = state.with_run(RunRecord(
        id="v1", step=check.addr, identity=check.identity, experiment="cand", status="completed", started="t0", finished="t1",
        verdict=Verdict("faster", Status.PASS, "ratio 1.041 [1.012, inf) >= 1.03, n=6 pairs: PASS (paired t on log ratios, one-sided, 95%)",
                        gating=True, decision=Decision(Status.PASS, 1.041, 1.012, math.inf, 0.95, 6, 1.03, ">=", None,
                                                       "paired t on log ratios, one-sided, 95%", "", statistic="ratio", unit="pairs")),
    ))
    state_dir = tmp_path / "state"
    write_state(state_dir, state)
    return tmp_path / "x.spec", state_dir


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_terraform_single_dash_spellings_read_as_ours():
    parser = build_parser()
    assert terraform_spellings(["plan", "x.spec", "-out=x.plan", "-json", "-var-file=v.vars", "-target=cand"], parser) == \
        ["plan", "x.spec", "--out=x.plan", "--json", "--var-file=v.vars", "--target=cand"]
    assert terraform_spellings(["plan", "x.spec", "-refresh=false"], parser) == ["plan", "x.spec", "--no-refresh"]
    assert terraform_spellings(["plan", "x.spec", "-refresh=true"], parser) == ["plan", "x.spec"]
    # ours with one dash stay; short options stay; after `--` nothing is touched
    assert terraform_spellings(["plan", "x.spec", "-var", "a=1", "-var=b=2", "-o", "p", "--", "-json"], parser) == \
        ["plan", "x.spec", "-var", "a=1", "-var=b=2", "-o", "p", "--", "-json"]


def test_out_with_one_dash_writes_the_plan_named(recorded, capsys, tmp_path, monkeypatch):
    spec, state_dir = recorded
    monkeypatch.chdir(tmp_path)
    code, _out, err = run(capsys, "plan", str(spec), f"-state={state_dir}", "-out=x.plan", "-refresh=false")
    assert code == 0, err
    assert (tmp_path / "x.plan").is_file() and not (tmp_path / "ut=x.plan").exists()
    code, out, _err = run(capsys, "plan", str(spec), f"--state={state_dir}", "-json", "-refresh=false")
    assert code == 0 and json.loads(out)["format_version"] == 1


def test_fmt_takes_folders_recursively(tmp_path, capsys):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / ".specdsl").mkdir()
    messy = 'host "h" {   gpus=8 }\n'
    for path in (tmp_path / "top.spec", tmp_path / "a" / "b" / "deep.spec", tmp_path / ".specdsl" / "hidden.spec"):
        path.write_text(messy)
    code, _out, err = run(capsys, "fmt", "--check", str(tmp_path))
    assert code == 1
    assert err.splitlines() == [f"{tmp_path / 'a' / 'b' / 'deep.spec'}: would reformat", f"{tmp_path / 'top.spec'}: would reformat"]
    code, _out, _err = run(capsys, "fmt", str(tmp_path))
    assert code == 0
    assert (tmp_path / "a" / "b" / "deep.spec").read_text() == 'host "h" { gpus = 8 }\n'
    assert (tmp_path / ".specdsl" / "hidden.spec").read_text() == messy  # hidden folders are not specs of the project
    assert run(capsys, "fmt", "--check", str(tmp_path))[0] == 0


@pytest.mark.parametrize("command", [["plan", "--json"], ["apply", "--json"], ["validate", "--json"]])
def test_json_commands_put_diagnostics_on_stdout_for_an_invalid_spec(tmp_path, capsys, command):
    spec = tmp_path / "bad.spec"
    spec.write_text('workload "w" {\n  output_lenn = 3\n}\n')
    code, out, _err = run(capsys, command[0], str(spec), *command[1:])
    assert code == 1
    doc = json.loads(out)
    (diag,) = doc["files"][0]["diagnostics"]
    assert doc["valid"] is False and diag["summary"] == "Unknown workload attribute `output_lenn`"
    assert (diag["range"]["line"], diag["range"]["col"]) == (2, 3)


def test_json_commands_put_an_error_on_stdout_for_a_missing_state(tmp_path, capsys):
    code, out, err = run(capsys, "history", "prod", "--state", str(tmp_path / "nowhere"), "--json")
    assert code == 1 and "error:" in err
    doc = json.loads(out)
    assert doc["valid"] is False and doc["diagnostics"][0]["severity"] == "error"
    code, out, _err = run(capsys, "show", str(tmp_path / "missing.plan"), "--json")
    assert code == 1 and json.loads(out)["diagnostics"][0]["summary"]


def test_history_of_a_track_without_promotions_is_empty_json(recorded, capsys):
    _spec, state_dir = recorded
    code, out, err = run(capsys, "history", "prod", "--state", str(state_dir), "--json")
    assert code == 0 and json.loads(out)["promotions"] == [] and json.loads(out)["track"] == "prod"
    assert "warning: No promotions of track `prod` recorded" in err
    code, out, err = run(capsys, "history", "prod", "--state", str(state_dir))
    assert (code, out) == (1, "") and "error: No promotions of track `prod` recorded" in err


def test_one_run_address_spelling(recorded, capsys):
    _spec, state_dir = recorded
    code, listed, _ = run(capsys, "state", "list", "--state", str(state_dir))
    assert "run.r1" in listed.splitlines()
    _, by_addr, _ = run(capsys, "state", "show", "run.r1", "--state", str(state_dir))
    code, by_id, _ = run(capsys, "state", "show", "r1", "--state", str(state_dir))
    assert code == 0 and by_id == by_addr and by_id.startswith("# run.r1\n")


def test_diff_takes_a_run_address(recorded):
    from specdsl.diagnose.locate import side_of
    from specdsl.state import load_state

    _spec, state_dir = recorded
    state = load_state(state_dir)
    assert side_of(state, state_dir, None, None, "run.r1")[0].id == "r1"
    assert side_of(state, state_dir, None, None, "r1")[0].id == "r1"


def test_state_show_of_a_check_shows_its_verdict_and_evidence(recorded, capsys):
    _spec, state_dir = recorded
    code, out, _ = run(capsys, "state", "show", "check.cand.faster", "--state", str(state_dir))
    assert code == 0
    assert 'assertion = "output_throughput >= baseline.output_throughput * 1.03"' in out
    assert 'verdict = "pass"' in out
    assert 'evidence = "ratio 1.041 [1.012, inf) >= 1.03, n=6 pairs: PASS' in out
    assert "estimate = 1.041" in out and "n = 6\n" in out and "unit = \"pairs\"" in out and 'verdict_run = "v1"' in out
    assert "__kind__" not in out  # not the syntax tree


def test_calibrate_takes_the_name_then_the_spec_and_the_old_order_still_works(recorded, capsys):
    spec, state_dir = recorded
    code, _out, err = run(capsys, "calibrate", "nope", str(spec), "--state", str(state_dir), "--yes")
    assert code == 1 and "warning" not in err and "nope" in err
    code, _out, old = run(capsys, "calibrate", str(spec), "nope", "--state", str(state_dir), "--yes")
    assert code == 1
    assert f"specdsl: warning: `specdsl calibrate FILE EXPERIMENT` is the old order; write `specdsl calibrate nope {spec}`" in old
    assert old.split("\n", 1)[1] == err  # then the same answer


def test_one_error_prefix_for_usage_errors(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["plan"])
    out, err = capsys.readouterr()
    assert exc.value.code == 1 and out == ""
    assert err.splitlines()[-1] == "specdsl: error: plan: the following arguments are required: FILE"


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_colour_on_a_terminal_only_and_never_with_no_color(monkeypatch):
    text = "Plan for x\n\n  + provision.s  (new)\n-/+ launch.m  (changed)\n  > benchmark.e  (run)\n"
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert coloured_plan(text, io.StringIO()) == text  # not a terminal: the same bytes
    shown = coloured_plan(text, _Tty())
    assert "  \x1b[32m+\x1b[0m provision.s" in shown and "\x1b[33m-/+\x1b[0m launch.m" in shown
    assert "\x1b[36m>\x1b[0m benchmark.e" in shown and "Plan for x" in shown
    monkeypatch.setenv("NO_COLOR", "1")
    assert coloured_plan(text, _Tty()) == text
