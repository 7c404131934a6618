"""The examples: DESIGN.md's spec, as written, is examples/kimi-k25/upgrade.spec
and validates unchanged; the sweep example imports, uses a variable and
expands a two-key matrix."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from specdsl.cli.main import main
from specdsl.model.build import parse
from specdsl.model.printer import format_file
from specdsl.resolve.resolver import resolve_file

ROOT = Path(__file__).resolve().parents[2]
DESIGN_CANDIDATES = [ROOT / "DESIGN.md", ROOT / "docs/DESIGN.md", ROOT / "shared/DESIGN.md", ROOT.parent / "shared/DESIGN.md"]


def design_spec() -> str:
    design = next((p for p in DESIGN_CANDIDATES if p.exists()), None)
    if design is None:
        pytest.skip("DESIGN.md is not beside this checkout")
    text = design.read_text()
    section = text[text.index("## The language") :]
    block = re.search(r"```\n(.*?)```", section, re.S)
    assert block, "no spec block in DESIGN.md's language section"
    return block.group(1)


def _norm(text: str) -> list[str]:
    return [line.rstrip() for line in text.strip("\n").splitlines()]


def test_design_spec_is_the_example_as_written():
    example = (ROOT / "examples/kimi-k25/upgrade.spec").read_text()
    assert _norm(design_spec()) == _norm(example)


def test_design_spec_validates_unchanged(tmp_path, capsys):
    path = tmp_path / "design.spec"
    path.write_text(design_spec())
    assert main(["validate", str(path)]) == 0
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
