"""A few hundred inputs of benchmarks/fuzz_specs.py (the full run is 100,000;
docs/reliability.md has its figures): no traceback, no command over 2 s."""

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "fuzz_specs.py"


def load():
    spec = importlib.util.spec_from_file_location("fuzz_specs", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_few_hundred_fuzzed_specs(tmp_path):
    fuzz = load()
    figures = fuzz.worker((0, 150, 20261201, 2.0, str(tmp_path / "failures")))
    assert figures["inputs"] == 150 and all(n == 50 for n in figures["by_kind"].values())
    assert figures["tracebacks"] == [], figures["tracebacks"]
    assert figures["slow"] == [], figures["slow"]
    assert figures["valid"] > 0 and figures["planned"] > 0, "some inputs must reach plan"


def test_the_fuzzer_catches_a_traceback(tmp_path, monkeypatch):
    """The harness itself: a command that raises is counted and kept."""
    fuzz = load()
    import specdsl.cli.main as cli

    def boom(argv):
        raise RuntimeError("a bug")

    monkeypatch.setattr(cli, "main", boom)
    tally = fuzz.Tally()
    fuzz.check(b'stack "s" {}\n', "mutate", tally, tmp_path, tmp_path / "keep", 2.0, "t")
    assert len(tally.tracebacks) == 1 and (tmp_path / "keep" / "t-validate.out").read_text().count("RuntimeError: a bug")


def test_a_stopped_run_goes_on_from_its_checkpoint(tmp_path, monkeypatch):
    """Killed after two of three tasks, the run given its checkpoint again does
    the third alone and ends with the figures of a run never stopped."""
    import json

    import pytest

    fuzz = load()
    args = ["--count", "9", "--chunk", "3", "--workers", "1", "--seed", "7", "--keep", str(tmp_path / "keep")]
    assert fuzz.main(args + ["--json", str(tmp_path / "whole.json")]) == 0
    whole = json.loads((tmp_path / "whole.json").read_text())

    real, calls = fuzz.worker, []

    def stopped_at_the_third(task):
        calls.append(task[0])
        if len(calls) == 3:
            raise KeyboardInterrupt  # as Ctrl-C or a kill mid-task
        return real(task)

    checkpoint = tmp_path / "ck.json"
    monkeypatch.setattr(fuzz, "worker", stopped_at_the_third)
    with pytest.raises(KeyboardInterrupt):
        fuzz.main(args + ["--checkpoint", str(checkpoint)])
    assert json.loads(checkpoint.read_text())["done"] == [0, 1]
    done_again = []
    monkeypatch.setattr(fuzz, "worker", lambda task: done_again.append(task[0]) or real(task))
    assert fuzz.main(args + ["--checkpoint", str(checkpoint), "--json", str(tmp_path / "resumed.json")]) == 0
    resumed = json.loads((tmp_path / "resumed.json").read_text())
    assert done_again == [2] and resumed["tasks_from_checkpoint"] == 2
    for key in ("inputs", "by_kind", "commands", "valid", "planned", "exit_codes", "tracebacks"):
        assert resumed[key] == whole[key], key
    fuzz.main(args + ["--from-task", "2", "--json", str(tmp_path / "last.json")])
    last = json.loads((tmp_path / "last.json").read_text())
    assert last["inputs"] == 3 and last["from_task"] == 2, "only the third task's inputs"
    with pytest.raises(SystemExit, match="a checkpoint of another run"):
        fuzz.main(["--count", "12", "--chunk", "3", "--workers", "1", "--checkpoint", str(checkpoint)])
