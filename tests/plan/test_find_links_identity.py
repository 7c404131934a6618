"""A stack's identity holds what its local find-links folders hold: a wheel
rebuilt under its old file name is a new stack; URLs and stacks without
local find-links are not read; a matrix hashes each file once."""

from __future__ import annotations

import hashlib

import pytest

from specdsl.graph import find_links as fl
from specdsl.graph.build import build_graph
from specdsl.graph.content import stack_content
from specdsl.model.config import Stack
from specdsl.plan.model import Action

from plan_helpers import applied_state, plan_for, resolve_text

SPEC = """
stack "s" {
  python     = "3.11"
  find_links = [FIND_LINKS]
  packages   = ["mypkg==0.1"]
}
server "srv" {
  engine = "sglang"
  model  = "m"
}
workload "w" { requests = 1 }
experiment "e" {
  stack    = STACK
  server   = server.srv
  workload = workload.w
  MATRIX
}
"""


def spec(find_links: str, stack: str = "stack.s", matrix: str = "") -> str:
    return SPEC.replace("FIND_LINKS", find_links).replace("STACK", stack).replace("MATRIX", matrix)


def provision_identity(cfg) -> str:
    graph = build_graph(cfg)
    return next(s.identity for s in graph.steps.values() if s.kind == "provision")


@pytest.fixture
def hashes(monkeypatch):
    """The files read to be hashed, in order (memo hits read nothing)."""
    seen: list[str] = []
    monkeypatch.setattr(fl, "_memo", {})

    def spy_open(path, mode="r", *args, **kw):
        seen.append(str(path))
        return open(path, mode, *args, **kw)

    monkeypatch.setattr(fl, "open", spy_open, raising=False)
    return seen


def test_rebuilt_wheel_under_the_same_name_changes_the_identity_and_plans_a_replace(tmp_path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    wheel = wheels / "mypkg-0.1-py3-none-any.whl"
    wheel.write_bytes(b"first build")
    text = spec(f'"{wheels}"')
    cfg = resolve_text(tmp_path, text)
    graph, _ = plan_for(cfg)
    before = graph.steps["provision.s"].identity
    state = applied_state(graph)
    wheel.write_bytes(b"other build")  # the same size and name: only the bytes differ
    changed = resolve_text(tmp_path, text)
    assert provision_identity(changed) != before
    _, plan = plan_for(changed, state)
    prov = plan.change("provision.s")
    assert prov.action is Action.REPLACE
    assert prov.reason.startswith(f"find_links_digest.{wheels}:"), prov.reason
    # only distribution files count
    (wheels / "README.txt").write_text("notes")
    assert provision_identity(resolve_text(tmp_path, text)) == provision_identity(changed)


def test_digest_is_names_and_sha256_of_each_distribution_sorted(tmp_path):
    (tmp_path / "b-0.1.tar.gz").write_bytes(b"B")
    (tmp_path / "a-0.1-py3-none-any.whl").write_bytes(b"A")
    (tmp_path / "notes.txt").write_bytes(b"ignored")
    expected = hashlib.sha256()
    for name, data in (("a-0.1-py3-none-any.whl", b"A"), ("b-0.1.tar.gz", b"B")):
        expected.update(f"{name}\0{hashlib.sha256(data).hexdigest()}\n".encode())
    assert fl.folder_digest(tmp_path) == expected.hexdigest()
    assert fl.find_links_digests([str(tmp_path), tmp_path.as_uri()]) == {str(tmp_path): expected.hexdigest(), tmp_path.as_uri(): expected.hexdigest()}


def test_urls_and_stacks_without_local_find_links_are_not_read(tmp_path, hashes):
    url = Stack(name="u", find_links=("https://download.pytorch.org/whl/cpu",))
    content = stack_content(url)
    assert content["find_links"] == ["https://download.pytorch.org/whl/cpu"] and "find_links_digest" not in content
    assert "find_links_digest" not in stack_content(Stack(name="n"))
    # a folder that does not exist here (a host's own path) stays text
    assert "find_links_digest" not in stack_content(Stack(name="m", find_links=(str(tmp_path / "not-here"),)))
    assert hashes == []


def test_a_thousand_cells_hash_each_wheel_once(tmp_path, hashes, monkeypatch):
    monkeypatch.setattr(fl, "QUIET_NS", 0)  # the files were just written: remember them anyway
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    for name in ("mypkg-0.1-py3-none-any.whl", "dep-1.0-py3-none-any.whl"):
        (wheels / name).write_bytes(name.encode())
    # each cell its own stack (env differs), all over one folder
    text = spec(f'"{wheels}"', stack="stack.s { env = { CELL = matrix.n } }", matrix="matrix = { n = [NS] }")
    text = text.replace("NS", ", ".join(str(i) for i in range(1000)))
    graph = build_graph(resolve_text(tmp_path, text))
    assert len({s.identity for s in graph.steps.values() if s.kind == "provision"}) == 1000
    assert sorted(hashes) == sorted(str(wheels / n) for n in ("mypkg-0.1-py3-none-any.whl", "dep-1.0-py3-none-any.whl"))


def test_a_file_rewritten_right_after_it_was_hashed_is_hashed_again(tmp_path, hashes):
    wheel = tmp_path / "mypkg-0.1-py3-none-any.whl"
    wheel.write_bytes(b"one")
    first = fl.file_sha256(wheel)
    wheel.write_bytes(b"two")  # same size, likely the same timestamp tick
    assert fl.file_sha256(wheel) != first
    assert len(hashes) == 2
