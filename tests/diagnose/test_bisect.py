"""bisect, fast: ddmin's shapes on pure answers, and the whole command
against a stdlib server double whose speed depends on its flags and
environment (real processes, real state, apply_plan), in seconds."""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

import pytest

from specdsl.cli.main import main
from specdsl.diagnose.ddmin import FAIL, PASS, UNRESOLVED, bound_for_one_cause, experiments_asked, minimize
from specdsl.state import load_state

HERE = Path(__file__).parent
DOUBLE = str(HERE / "bisect_double.py")
PROBE = str(HERE.parent / "apply" / "walk_probe.py")


@pytest.mark.parametrize("n", range(1, 17))
def test_one_cause_is_found_within_the_bound(n):
    items = tuple(f"d{i}" for i in range(n))
    for cause in items:
        search = minimize(items, lambda s: FAIL if cause in s else PASS)
        assert search.culprit == (cause,) and search.minimal and search.reproduced
        assert experiments_asked(search) <= bound_for_one_cause(n)


@pytest.mark.parametrize("n", [2, 3, 5, 8])
def test_two_interacting_causes_are_found_together(n):
    items = tuple(f"d{i}" for i in range(n))
    for a, b in itertools.combinations(items, 2):
        search = minimize(items, lambda s: FAIL if a in s and b in s else PASS)
        assert set(search.culprit) == {a, b}


def test_no_cause():
    items = ("a", "b", "c", "d")
    search = minimize(items, lambda s: PASS)
    assert not search.reproduced and search.culprit == () and len(search.tests) == 1 and search.decided


def test_an_undecided_half_is_not_taken_for_a_pass():
    # the first half is undecided: the other half is asked, not inferred to hold the cause
    items = ("a", "b", "c", "d")
    search = minimize(items, lambda s: FAIL if "c" in s else (UNRESOLVED if "a" in s else PASS))
    assert search.culprit == ("c",)
    assert search.tests[1:3] == [(("a", "b"), UNRESOLVED), (("c", "d"), FAIL)]
    # {a, b} might have reproduced too (another cause): the answer rests on it, and says so
    assert search.undecided == [("a", "b")] and not search.decided and search.minimal


def test_an_undecided_superset_of_the_answer_does_not_matter():
    items = ("a", "b", "c", "d")
    search = minimize(items, lambda s: UNRESOLVED if s == ("a", "b") else (FAIL if "a" in s else PASS))
    # (a, b) undecided, (c, d) passes: neither half known to reproduce, ddmin proper finds a;
    # (a, b) holds a, so whatever it would have said, a alone reproduces and is the smallest
    assert search.culprit == ("a",) and search.decided and search.tests[1] == (("a", "b"), UNRESOLVED)
    assert (("c", "d"), PASS) in search.tests


@pytest.mark.parametrize("n", range(2, 9))
def test_one_cause_with_an_undecided_difference(n):
    items = tuple(f"d{i}" for i in range(n))
    for cause, poison in itertools.permutations(items, 2):
        search = minimize(items, lambda s: FAIL if cause in s else (UNRESOLVED if poison in s else PASS))
        assert search.culprit == (cause,) and search.minimal
        undecided = [s for s, a in search.tests if a == UNRESOLVED]
        assert all(poison in s for s in undecided)
        assert search.undecided == [s for s in undecided if cause not in s]
        assert search.decided == (not search.undecided)


def test_two_interacting_causes_with_an_undecided_part():
    items = ("a", "b", "c", "d")
    search = minimize(items, lambda s: FAIL if {"a", "b"} <= set(s) else (UNRESOLVED if s == ("a",) else PASS))
    assert search.culprit == ("a", "b")
    # had {a} alone reproduced, the answer would be smaller: only as minimal as the decided tests allow
    assert search.undecided == [("a",)] and not search.decided


def test_nothing_decided_leaves_the_whole_set():
    items = ("a", "b", "c")
    search = minimize(items, lambda s: FAIL if len(s) == 3 else UNRESOLVED)
    assert search.reproduced and search.culprit == items and not search.decided
    assert {frozenset(s) for s in search.undecided} == {frozenset(s) for s, a in search.tests[1:]}


def test_the_budget_ends_the_search_with_the_smallest_set_so_far():
    items = tuple(f"d{i}" for i in range(8))
    search = minimize(items, lambda s: FAIL if "d6" in s else PASS, budget=1)
    assert experiments_asked(search) == 1 and not search.minimal
    assert search.culprit == items  # the first half did not reproduce; nothing smaller is known yet


def _spec(base_args: dict, cand_args: dict, cand_env: dict, causes, noise: float = 0.005, vague=()) -> str:
    def server(name, args, env):
        argv = [sys.executable, DOUBLE, "{port}", "--causes", json.dumps(causes), "--vague", json.dumps(list(vague)),
                "--noise", str(noise), "--seed", "3"]
        items = ", ".join(json.dumps(a) for a in argv)
        args_text = ", ".join(f"{k} = {json.dumps(v)}" for k, v in args.items())
        env_text = ", ".join(f"{k} = {json.dumps(v)}" for k, v in env.items())
        return (f'server "{name}" {{\n  engine = "command"\n  model = "m"\n  command = [{items}]\n'
                f'  args = {{ {args_text} }}\n  env = {{ {env_text} }}\n  ready_timeout = 30s\n}}\n')

    probe = ", ".join(json.dumps(a) for a in [sys.executable, PROBE, "{base_url}"])
    return ('host "a" {}\nstack "sys" {\n  python = "system"\n}\n' + server("b", base_args, {})
            + server("c", cand_args, cand_env)
            + f'workload "w" {{\n  command = [{probe}]\n  runs = 2\n  max_runs = 2\n  timeout = 60s\n'
            '  metric "tps" { regex = "tps: ([0-9.]+)" }\n}\n'
            + '''
experiment "base" {
  host     = host.a
  stack    = stack.sys
  server   = server.b
  workload = workload.w
}
experiment "cand" {
  host     = host.a
  stack    = stack.sys
  server   = server.c
  workload = workload.w
  baseline = experiment.base
  assert "not slower" { tps >= baseline.tps * 0.9 }
}
''')


@pytest.fixture
def env_root(system_env_root):
    """The session's environment root (conftest.py): the stack is built once, reused after."""
    return system_env_root


@pytest.fixture
def folder(tmp_path, monkeypatch, env_root):
    monkeypatch.setenv("SPECDSL_ENV_ROOT", str(env_root))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _apply(folder: Path, text: str) -> int:
    (folder / "b.spec").write_text(text)
    return main(["apply", "b.spec", "--yes"])


def test_bisect_names_the_one_cause_and_a_rerun_reuses_everything(folder, capsys):
    cand_args = {"alpha": "1", "beta": "2", "gamma": "3"}
    text = _spec({}, cand_args, {"BD_NOTE": "x"}, [["beta=2"]])
    assert _apply(folder, text) == 3  # the candidate failed its check
    out = capsys.readouterr().out
    assert "server_args.beta: (unset) -> 2" in out  # the short diagnosis under the FAIL
    # a bisect stopped by its budget (or interrupted) keeps what it measured ...
    assert main(["bisect", "cand", "b.spec", "--yes", "--max-experiments", "1"]) == 4
    out = capsys.readouterr().out
    assert "Bisect of cand: 1 experiments run" in out and "not proven minimal" in out
    assert "server_args.alpha: (unset) -> 1" in out.split("not proven minimal")[1]  # [alpha, beta] reproduced
    # ... and the next one resumes from it: that experiment is reused, not run again
    assert main(["bisect", "cand", "b.spec", "--yes"]) == 0
    out = capsys.readouterr().out
    assert "4 differences" in out and "one cause needs at most 3 experiments" in out
    assert out.count("results recorded, reused") >= 2  # the candidate's own, and the budgeted run's
    assert "Reproduces the regression: the cause:\n  server_args.beta: (unset) -> 2" in out
    ran = int(out.split("Bisect of cand: ")[1].split(" experiments run")[0])
    assert 1 <= ran <= 2  # within the bound of 3, one of them already run
    assert "Plan for b.spec" in out  # each experiment shown as a plan
    assert "evidence: cand~bisect-" in out and "FAIL" in out
    state = load_state(folder / ".specdsl")
    assert any(r.experiment.startswith("cand~bisect-") for r in state.runs)  # recorded like any other
    # run again (as after an interruption): every experiment's result is reused, none runs
    assert main(["bisect", "cand", "b.spec", "--yes"]) == 0
    out = capsys.readouterr().out
    assert "Bisect of cand: 0 experiments run" in out and "server_args.beta: (unset) -> 2" in out


def test_an_undecided_experiment_is_reported_and_the_answer_is_inconclusive(folder, capsys):
    # (how the search goes on past an undecided subset is the pure tests' above: here, the command)
    # two differences, server_args.alpha first: alpha alone runs right at the threshold, INCONCLUSIVE
    text = _spec({}, {"alpha": "1", "gamma": "3"}, {}, [["gamma=3"]], vague=[["alpha=1"]])
    assert _apply(folder, text) == 3
    capsys.readouterr()
    assert main(["bisect", "cand", "b.spec", "--yes"]) == 4
    out = capsys.readouterr().out
    assert "cand~bisect-" in out and "not slower  INCONCLUSIVE" in out.split("Bisect of cand:")[0]
    assert "Bisect of cand: 2 experiments run" in out  # alpha (undecided), then gamma: asked, not inferred
    assert "Reproduces the regression: the smallest set the decided experiments allow (1 undecided" in out
    assert "\n  server_args.gamma: (unset) -> 3  (" in out
    undecided = out.split("Undecided (")[1]
    assert "\n  {server_args.alpha}: cand~bisect-" in undecided and "not slower INCONCLUSIVE" in undecided
    assert out.rstrip().endswith("INCONCLUSIVE: the answer rests on experiments that were not run or not decided.")


def test_bisect_finds_two_causes_that_act_together(folder, capsys):
    # (the shapes of ddmin with more differences are the pure tests above: here, the real pipeline)
    text = _spec({}, {"alpha": "1"}, {"BD_MODE": "fast"}, [["alpha=1", "env:BD_MODE=fast"]])
    assert _apply(folder, text) == 3
    capsys.readouterr()
    assert main(["bisect", "cand", "b.spec", "--yes"]) == 0
    out = capsys.readouterr().out
    assert "the 2 differences that cause it together" in out
    found = out.split("cause it together:")[1]
    assert "env.BD_MODE: (unset) -> fast" in found and "server_args.alpha: (unset) -> 1" in found
    assert "Bisect of cand: 2 experiments run" in out  # each alone, neither reproduces


def test_bisect_of_a_candidate_that_did_not_fail_runs_nothing(folder, capsys):
    text = _spec({}, {"alpha": "1"}, {}, [])
    assert _apply(folder, text) == 0
    runs = len(load_state(folder / ".specdsl").runs)
    capsys.readouterr()
    assert main(["bisect", "cand", "b.spec", "--yes"]) == 0
    assert "cand did not fail" in capsys.readouterr().out
    assert len(load_state(folder / ".specdsl").runs) == runs


def test_bisect_before_apply_says_what_to_run(folder, capsys):
    (folder / "b.spec").write_text(_spec({}, {"alpha": "1"}, {}, []))
    assert main(["bisect", "cand", "b.spec", "--yes"]) == 1
    err = capsys.readouterr().err
    assert "no recorded results" in err and "specdsl apply b.spec --target cand" in err


def _wheel(folder: Path, name: str, version: str, requires: tuple[str, ...] = ()) -> None:
    """A minimal pure-Python wheel (what `pip wheel` makes for an empty package)."""
    import zipfile

    mod, dist = name.replace("-", "_"), f"{name.replace('-', '_')}-{version}.dist-info"
    files = {
        f"{mod}/__init__.py": f"VERSION = {version!r}\n",
        f"{dist}/METADATA": "Metadata-Version: 2.1\n" + f"Name: {name}\nVersion: {version}\n"
        + "".join(f"Requires-Dist: {r}\n" for r in requires),
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    files[f"{dist}/RECORD"] = "".join(f"{p},,\n" for p in files) + f"{dist}/RECORD,,\n"
    with zipfile.ZipFile(folder / f"{mod}-{version}-py3-none-any.whl", "w") as z:
        for path, text in files.items():
            z.writestr(path, text)


def test_a_difference_that_cannot_be_applied_alone_is_reported(folder, capsys):
    # the candidate moves bdpin-a to 2.0 and adds bdpin-b 2.0, which pins bdpin-a 2.0:
    # bdpin-b alone (beside the baseline's bdpin-a 1.0) cannot be installed
    wheels = folder / "wheels"
    wheels.mkdir()
    _wheel(wheels, "bdpin-a", "1.0")
    _wheel(wheels, "bdpin-a", "2.0")
    _wheel(wheels, "bdpin-b", "2.0", ("bdpin-a==2.0",))
    text = _spec({}, {"alpha": "1"}, {"BD_SLOW": "yes"}, [["env:BD_SLOW=yes"]])
    stacks = (f'stack "old" {{\n  python = "system"\n  find_links = [{json.dumps(str(wheels))}]\n'
              '  packages = ["bdpin-a==1.0"]\n}\n'
              f'stack "new" {{\n  python = "system"\n  find_links = [{json.dumps(str(wheels))}]\n'
              '  packages = ["bdpin-a==2.0", "bdpin-b==2.0"]\n}\n')
    text = text.replace('experiment "base" {\n  host     = host.a\n  stack    = stack.sys',
                        'experiment "base" {\n  host     = host.a\n  stack    = stack.old')
    text = text.replace('experiment "cand" {\n  host     = host.a\n  stack    = stack.sys',
                        'experiment "cand" {\n  host     = host.a\n  stack    = stack.new') + stacks
    assert _apply(folder, text) == 3
    capsys.readouterr()
    assert main(["bisect", "cand", "b.spec", "--yes"]) == 0
    out = capsys.readouterr().out
    assert "cannot be applied alone: stack.packages.bdpin-b" in out
    assert "Reproduces the regression: the cause:\n  env.BD_SLOW: (unset) -> yes" in out
