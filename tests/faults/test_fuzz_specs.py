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
