"""The typed paired result (specdsl.paired_result) reads a paired
benchmark's result.json and gives it back key for key: on the files a real
apply writes (two candidates sharing the baseline's launches, through the
CLI against the decision double) byte for byte as the step writes them,
and on a document with every optional key a walk may leave (a burst's
remeasured runs, an endpoint pair's launch None, stopped, budget,
continued, unknown keys of a later version)."""

from __future__ import annotations

import json

from specdsl.exits import Exit
from specdsl.paired_result import Block, PairedResult
from tests.apply.test_shared_blocks import _cli, _spec


def _written(doc: dict) -> str:
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"  # as apply.steps.paired.record writes it


def test_a_recorded_paired_result_round_trips_byte_for_byte(tmp_path):
    (tmp_path / "bench.spec").write_text(_spec(tmp_path / "life.txt", max_runs=2, runs=2))
    applied = _cli(tmp_path, "apply", "bench.spec", "--yes")
    # the verdicts are the double's to decide; the result files are what is read here
    assert applied.returncode in (Exit.OK, Exit.CHECK_FAILED, Exit.UNDECIDED), applied.stderr[-2000:]
    seen = 0
    for path in (tmp_path / ".specdsl").rglob("result.json"):
        text = path.read_text()
        doc = json.loads(text)
        typed = PairedResult.of(doc)
        if "pairs" not in doc:
            assert typed is None  # a plain benchmark's result is not a paired one
            continue
        seen += 1
        assert _written(typed.to_json()) == text
        assert len(typed.pairs) == 2 and all(p.complete for p in typed.pairs)
        assert typed.shared is not None and typed.name("A") == "base"
        # the typed reading says what the raw document says
        for p, raw in zip(typed.pairs, doc["pairs"]):
            for b, rb in zip(p.blocks, raw["blocks"]):
                assert (b.arm, list(b.runs), b.launch) == (rb["arm"], rb["runs"], rb["launch"])
        again = {i for _p, b in typed.blocks() for i in b.remeasured or ()}  # runs a burst hit, kept beside
        assert typed.run_indexes() | again == {r["index"] for r in doc["runs"]}
        assert not typed.run_indexes() & again
        assert [x.log for _k, x in typed.launches_of("A")] == [x["log"] for x in doc["launches"] if x["arm"] == "A"]
    assert seen == 2


def test_every_optional_key_round_trips_and_an_absent_one_stays_absent():
    doc = {
        "runs": [{"index": 0, "metrics": {"output_throughput": 10.0}}, {"index": 1, "metrics": {}, "invalid": "burst"},
                 {"index": 2, "metrics": {}}],
        "pairs": [{"pair": 0, "blocks": [{"arm": "A", "runs": [0], "launch": None},
                                         {"arm": "B", "runs": [2], "launch": None, "remeasured": [1], "later": 1}]}],
        "arms": {"A": "base", "B": "fix"}, "launches": [{"arm": "A", "pair": 0, "run_s": [1.5], "dropped": "drifted",
                                                         "log_lines": ["x"], "CUDA_VISIBLE_DEVICES": "0"}],
        "effective": {}, "design": "d", "looks": {"horizon": 3}, "side_by_side": False, "specdsl": "0",
        "continued": 0, "stopped": "why", "budget": {"reached": "max_wall"}, "unit": "run", "newer": [1],
    }
    typed = PairedResult.of(doc)
    assert typed.to_json() == doc
    assert typed.pairs[0].block("B").remeasured == (1,) and typed.pairs[0].block("A").remeasured is None
    assert typed.continued == 0 and typed.launches[0].dropped == "drifted"
    bare = {"runs": [], "pairs": []}
    assert PairedResult.of(bare).to_json() == bare
    assert Block.of({"arm": "A", "runs": [3], "launch": 1}).to_json() == {"arm": "A", "runs": [3], "launch": 1}
    assert PairedResult.of(None) is None and PairedResult.of({"runs": []}) is None
