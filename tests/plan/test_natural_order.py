"""Matrix cells are ordered by their values, numbers as numbers: the cells
of `c = [16, 1, 64, 4]` come out 1, 4, 16, 64 in the plan (text and JSON),
in what each step serves, in the DOT graph and in `state list`."""

from __future__ import annotations

import json
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from specdsl import names
from specdsl.cli.main import main
from specdsl.graph.build import build_graph
from specdsl.names import natural_key, natural_sorted
from specdsl.state import write_state

from plan_helpers import applied_state, resolve_text

SPEC = '''stack "s" {
  python = "3.11"
}
server "srv" {
  engine = "sglang"
  model  = "m"
}
workload "w" {
  requests = 4
}
experiment "grid" {
  matrix   = { c = [16, 1, 64, 4] }
  stack    = stack.s
  server   = server.srv
  workload = workload.w { concurrency = matrix.c }
  assert "ok" { failed == 0 }
}
'''
CELLS = ["grid[c=1]", "grid[c=4]", "grid[c=16]", "grid[c=64]"]


def test_numbers_in_names_compare_by_value():
    expect = ["x[c=-2]", "x[c=-1]", "x[c=0.5]", "x[c=1]", "x[c=4]", "x[c=16]", "x[c=64]", "x[c=1e+20]"]
    shuffled = expect[:]
    random.Random(7).shuffle(shuffled)
    assert natural_sorted(shuffled) == expect
    assert natural_sorted(["x[m=0.9]", "x[m=0.85]", "x[m=0.8]"]) == ["x[m=0.8]", "x[m=0.85]", "x[m=0.9]"]
    # text still orders text; a hyphen between letters and digits is not a sign
    assert natural_sorted(["s-060", "s-059", "r10", "r9", "b[k=fa3]", "b[k=triton]"]) == [
        "b[k=fa3]", "b[k=triton]", "r9", "r10", "s-059", "s-060"]
    assert natural_sorted(["x[a=2,b=10]", "x[a=10,b=1]", "x[a=2,b=9]"]) == ["x[a=2,b=9]", "x[a=2,b=10]", "x[a=10,b=1]"]


def test_the_order_is_total_where_numbers_are_equal():
    # the same value written two ways: still one fixed order, whatever came first
    assert natural_sorted(["x[c=1.0]", "x[c=1]"]) == natural_sorted(["x[c=1]", "x[c=1.0]"])
    assert natural_key("x[c=1]") != natural_key("x[c=1.0]")


def _one_split(name: str) -> tuple:
    """The key as one split of the whole name (what natural_key computes piece by piece)."""
    parts = names._NUMBER.split(name)
    parts[1::2] = map(names._number, parts[1::2])
    return tuple(parts), name


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(["x", "[", "]", ",", "=", "-", ".", "e", "+", "0", "1", "9", "07", "grid", "c"]),
                max_size=24).map("".join))
def test_key_in_pieces_is_the_key_of_the_whole(name):
    # split at each `,` first: the seams never cut a number nor move an `=`
    assert natural_key(name) == _one_split(name)


def test_key_in_pieces_on_cells():
    for name in ["g[a=1,b=-2,c=1e+20]", "benchmark.g[a=1.5,b=2]", ",", ",,1,", "a,=1", "x=,-1", "1,2.5,e-3"]:
        assert natural_key(name) == _one_split(name)


def _plan_json(tmp_path, capsys):
    spec = tmp_path / "x.spec"
    spec.write_text(SPEC)
    assert main(["plan", "--no-refresh", str(spec), "--state", str(tmp_path / "s"), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_plan_lists_cells_in_value_order(tmp_path, capsys):
    doc = _plan_json(tmp_path, capsys)
    addrs = [c["addr"] for c in doc["changes"]]
    assert [a for a in addrs if a.startswith("benchmark.")] == [f"benchmark.{c}" for c in CELLS]
    assert [a for a in addrs if a.startswith("check.")] == [f"check.{c}.ok" for c in CELLS]
    by_addr = {c["addr"]: c for c in doc["changes"]}
    assert by_addr["launch.srv"]["experiments"] == CELLS
    assert by_addr["teardown.srv"]["after"] == [f"benchmark.{c}" for c in CELLS]
    spec = tmp_path / "x.spec"
    assert main(["plan", "--no-refresh", str(spec), "--state", str(tmp_path / "s")]) == 0
    text = capsys.readouterr().out
    printed = [line.split()[1] for line in text.splitlines() if line.strip().startswith(">") and "benchmark." in line]
    assert printed == [f"benchmark.{c}" for c in CELLS]


def test_dot_graph_edges_in_value_order(tmp_path, capsys):
    spec = tmp_path / "x.spec"
    spec.write_text(SPEC)
    assert main(["graph", "--no-refresh", str(spec), "--state", str(tmp_path / "s")]) == 0
    edges = [line.strip() for line in capsys.readouterr().out.splitlines() if line.strip().startswith('"launch.srv" ->')]
    assert edges == [f'"launch.srv" -> "benchmark.{c}";' for c in CELLS] + ['"launch.srv" -> "teardown.srv";']


def test_state_list_in_value_order(tmp_path, capsys):
    cfg = resolve_text(tmp_path, SPEC)
    write_state(tmp_path / "state", applied_state(build_graph(cfg)))
    assert main(["state", "list", "--state", str(tmp_path / "state")]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert [a for a in listed if a.startswith("benchmark.")] == [f"benchmark.{c}" for c in CELLS]
    assert [a for a in listed if a.startswith("check.")] == [f"check.{c}.ok" for c in CELLS]
