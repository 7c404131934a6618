"""Smoke tests of the language pipeline end to end (the corpus and property
tests beside this file go deeper)."""

from pathlib import Path

from specdsl.cli.main import main
from specdsl.resolve.resolver import resolve_file

ROOT = Path(__file__).resolve().parents[2]


def test_design_example_validates_and_expands_matrix():
    resolved = resolve_file(ROOT / "examples/kimi-k25/upgrade.spec")
    assert resolved.ok, resolved.diags
    names = [e.name for e in resolved.config.experiments]
    assert names == [
        "baseline",
        "upgrade",
        "backends[backend=triton]",
        "backends[backend=flashinfer]",
        "backends[backend=fa3]",
    ]
    upgrade = resolved.config.experiment("upgrade")
    assert dict(upgrade.server.args)["attention-backend"] == "flashinfer"
    assert dict(upgrade.server.args)["tp-size"] == 8
    assert upgrade.stack.cuda == "13.0" and upgrade.stack.python == "3.12"  # inherited
    assert dict(upgrade.stack.env)["TRITON_PTXAS_PATH"].endswith("ptxas")
    assert upgrade.baseline.name == "baseline" and upgrade.promote == "kimi-prod"


def test_validate_exit_codes(tmp_path, capsys):
    assert main(["validate", str(ROOT / "examples/kimi-k25/upgrade.spec")]) == 0
    bad = tmp_path / "bad.spec"
    bad.write_text('workload "w" {\n  output_lenn = 5\n}\n')
    assert main(["validate", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "bad.spec:2:3: error: Unknown workload attribute `output_lenn`" in err
    assert "did you mean `output_len`?" in err
