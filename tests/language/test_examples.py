"""The examples: examples/kimi-k25/upgrade.spec (the README's spec in full)
validates unchanged; the sweep example imports, uses a variable and expands
a two-key matrix."""

from __future__ import annotations

from pathlib import Path

import pytest

from specdsl.cli.main import main
from specdsl.model.build import parse
from specdsl.model.printer import format_file
from specdsl.resolve.resolver import resolve_file

ROOT = Path(__file__).resolve().parents[2]


def test_kimi_example_validates_unchanged(capsys):
    assert main(["validate", str(ROOT / "examples/kimi-k25/upgrade.spec")]) == 0
    assert "valid (5 experiments)" in capsys.readouterr().err


def test_sweep_example(capsys):
    resolved = resolve_file(ROOT / "examples/sweep/sweep.spec")
    assert resolved.ok, resolved.diags
    assert [d for d in resolved.diags] == []
    cells = resolved.config.experiments
    assert len(cells) == 12 and len(resolved.sources.files) == 2  # the import was read
    cell = resolved.config.experiment("sweep[backend=flashinfer,concurrency=16]")
    assert dict(cell.server.args) == {"tp-size": 1, "mem-fraction-static": 0.85, "attention-backend": "flashinfer"}
    assert cell.workload.concurrency == 16 and cell.workload.requests == 128 and cell.workload.input_len == 1024
    assert cell.server.model == "Qwen/Qwen2.5-7B-Instruct"
    resolved = resolve_file(ROOT / "examples/sweep/sweep.spec", {"model": "x/y", "requests_per_stream": "2"})
    cell = resolved.config.experiment("sweep[backend=fa3,concurrency=64]")
    assert cell.server.model == "x/y" and cell.workload.requests == 128


@pytest.mark.parametrize("path", sorted(ROOT.glob("examples/sweep/*.spec")), ids=lambda p: p.name)
def test_sweep_files_are_formatted(path):
    text = path.read_text()
    file, diags = parse(text, path.name)
    assert file is not None and not diags
    assert format_file(file) == text
