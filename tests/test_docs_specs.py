"""The specs the docs show are specs: every fenced block of README.md and
docs/ tagged `spec` validates as a whole file, every block tagged
`spec fragment` (a piece shown out of its file, `...` for what is left out)
parses; an untagged block that starts a spec block is an error (tag it).
Every file in examples/ validates and is `fmt`-clean. docs/language.md's
table of block attributes names exactly the schema's attributes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from specdsl.model.build import parse
from specdsl.model.printer import format_file
from specdsl.resolve.resolver import resolve_file
from specdsl.validate import schema
from specdsl.validate.slurm import DOCS as SLURM_KEYS

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_FENCE = re.compile(r"^(\s*)```(.*)$")
_STARTS_BLOCK = re.compile(r'^\s*(import\s+"|(variable|host|stack|server|workload|experiment|track)\s+"[^"]*"\s*(extends\s+\S+\s*)?\{)')


def fenced_blocks(doc: Path):
    """(line of the opening fence, info string, text) of each fenced block."""
    lines = doc.read_text().splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, info = m.group(1), m.group(2).strip()
        j = i + 1
        while j < len(lines) and not re.match(r"^\s*```\s*$", lines[j]):
            j += 1
        body = [line[len(indent):] if line.startswith(indent) else line for line in lines[i + 1 : j]]
        yield i + 1, info, "\n".join(body) + "\n"
        i = j + 1


BLOCKS = [(doc, line, info, text) for doc in DOCS for line, info, text in fenced_blocks(doc)]


def _id(block) -> str:
    doc, line, info, _text = block
    return f"{doc.relative_to(ROOT)}:{line}"


SPECS = [b for b in BLOCKS if b[2] == "spec"]
FRAGMENTS = [b for b in BLOCKS if b[2] == "spec fragment"]
UNTAGGED = [b for b in BLOCKS if b[2] == ""]


def test_the_docs_show_specs():
    # the test below would pass on nothing if the tags were dropped
    assert len(SPECS) >= 2 and len(FRAGMENTS) >= 5


@pytest.mark.parametrize("block", SPECS, ids=_id)
def test_every_spec_in_the_docs_validates(block, tmp_path):
    doc, line, _info, text = block
    path = tmp_path / "doc.spec"
    path.write_text(text)
    resolved = resolve_file(path)
    errors = [d for d in resolved.diags if d.severity == "error"]
    assert resolved.ok and errors == [], f"{doc.name}:{line}: " + "; ".join(f"{d.span}: {d.summary}" for d in errors)


def _without_ellipses(text: str) -> str:
    return "\n".join(line.replace("...", "") for line in text.splitlines()) + "\n"


@pytest.mark.parametrize("block", FRAGMENTS, ids=_id)
def test_every_fragment_in_the_docs_parses(block):
    doc, line, _info, text = block
    text = _without_ellipses(text)
    file, diags = parse(text, f"{doc.name}:{line}")
    if diags:  # a body shown alone (assertions, attributes): inside an experiment
        file, diags = parse('experiment "x" {\n' + text + "}\n", f"{doc.name}:{line}")
    assert file is not None and [d.summary for d in diags] == []


@pytest.mark.parametrize("block", UNTAGGED, ids=_id)
def test_a_spec_in_the_docs_says_it_is_one(block):
    _doc, _line, _info, text = block
    first = next((ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith(("#", "//"))), "")
    assert not _STARTS_BLOCK.match(first), "a spec block: fence it as ```spec (a whole file) or ```spec fragment"


EXAMPLES = sorted((ROOT / "examples").rglob("*.spec"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_example_validates_and_is_formatted(path):
    resolved = resolve_file(path)
    errors = [d for d in resolved.diags if d.severity == "error"]
    assert resolved.ok and errors == [], [f"{d.span}: {d.summary}" for d in errors]
    text = path.read_text()
    file, diags = parse(text, path.name)
    assert file is not None and not diags
    assert format_file(file) == text, f"`specdsl fmt {path.relative_to(ROOT)}` would change it"


def _table_rows(text: str, heading: str) -> dict[str, str]:
    section = text[text.index(heading):]
    rows = {}
    for line in section.splitlines()[1:]:
        if line.startswith("#"):
            break
        m = re.match(r"^\| `(\w+)` \| (.*) \|$", line)
        if m:
            rows[m.group(1)] = m.group(2)
    return rows


def _outside_parentheses(text: str) -> str:
    out, depth = [], 0
    for ch in text:
        depth += ch == "("
        if depth == 0:
            out.append(ch)
        depth -= ch == ")" and depth > 0
    return "".join(out)


def _named(text: str) -> set[str]:
    return {m for m in re.findall(r"`([^`]+)`", text) if re.fullmatch(r"[a-z_]+", m)}


def test_language_md_block_table_matches_the_schema():
    rows = _table_rows((ROOT / "docs/language.md").read_text(), "### Block types")
    expected = {kind: set(fields) for kind, fields in schema.SCHEMAS.items() if kind != "metric"}
    expected["experiment"] = set(schema.EXPERIMENT_ATTRS)
    assert set(rows) == set(expected)
    for kind, row in rows.items():
        documented = _named(_outside_parentheses(row)) - {"assert", "metric"}
        assert documented == expected[kind], f"{kind}: documented but not in the schema {documented - expected[kind]}, " \
                                             f"in the schema but not documented {expected[kind] - documented}"
    slurm = re.search(r"`slurm` \(a map: (.*?);", rows["host"]).group(1)
    assert _named(slurm) == set(SLURM_KEYS)
