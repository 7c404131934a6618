"""The README and docs/ stand on their own: every relative link points at a
file of the repository, and none sends the reader to a document that is not
in it (a design note kept outside the repository)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_point_at_repository_files(doc):
    text = doc.read_text()
    links = [m.group(1) for m in re.finditer(r"\]\(([^)#\s]+)", text) if "://" not in m.group(1)]
    missing = [link for link in links if not (doc.parent / link).exists()]
    assert missing == [], f"{doc.name} links to files that are not in the repository"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_reference_to_documents_outside_the_repository(doc):
    text = doc.read_text()
    outside = ("DESIGN" + ".md", "../" + "shared")  # spelled apart so this test is not itself such a reference
    assert not any(name in text for name in outside)


def test_the_exit_code_table_is_the_enum():
    """docs/apply.md's "Exit codes" table lists `specdsl.exits.Exit`, row for row."""
    from specdsl.exits import Exit

    text = (ROOT / "docs" / "apply.md").read_text()
    section = text.split("## Exit codes\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| (\d+) \| `(\w+)` \| (.+) \|$", section, flags=re.M)
    assert rows == [(str(e.value), e.name, e.meaning) for e in Exit]
