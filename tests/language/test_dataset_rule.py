"""One rule says which file a workload's `dataset` names (model.datasets);
the benchmark client, a benchmark's identity and plan's file check read
that rule, so they agree on every value."""

from __future__ import annotations

from pathlib import Path

import pytest

from specdsl.bench.datasets import dataset_kind, jsonl_path, local_dataset, sharegpt_path
from specdsl.bench.results import BenchError
from specdsl.model.datasets import DatasetFile, dataset_file
from specdsl.plan.files import dataset_text

CASES = [
    ("random", None),
    ("prompts.jsonl", DatasetFile("jsonl", "", "prompts.jsonl")),
    ("jsonl:data/p.txt", DatasetFile("jsonl", "jsonl:", "data/p.txt")),
    ("chat.json", DatasetFile("sharegpt", "", "chat.json")),
    ("sharegpt:s.json", DatasetFile("sharegpt", "sharegpt:", "s.json")),
    # the prefix decides before the ending (the client once read this as a
    # JSONL file named `sharegpt:x.jsonl`, while plan and the identity read x.jsonl)
    ("sharegpt:x.jsonl", DatasetFile("sharegpt", "sharegpt:", "x.jsonl")),
    ("jsonl:/abs/x.json", DatasetFile("jsonl", "jsonl:", "/abs/x.json")),
    ("sharegpt-like-name", None),
]


@pytest.mark.parametrize("value,expected", CASES)
def test_every_reader_of_a_dataset_value_reads_the_one_rule(value, expected):
    assert dataset_file(value) == expected
    assert dataset_text(value) == (None if expected is None else (expected.prefix, expected.path))
    assert jsonl_path(value) == (Path(expected.path) if expected and expected.kind == "jsonl" else None)
    assert sharegpt_path(value) == (Path(expected.path) if expected and expected.kind == "sharegpt" else None)
    if expected is None:
        if value != "random":
            with pytest.raises(BenchError, match="unknown dataset"):
                dataset_kind(value)
    else:
        assert dataset_kind(value) == (expected.kind, Path(expected.path))


def test_a_relative_file_is_the_spec_folders(tmp_path):
    assert local_dataset("jsonl:p.jsonl", tmp_path) == f"jsonl:{(tmp_path / 'p.jsonl').resolve()}"
    assert local_dataset("sharegpt:x.jsonl", tmp_path) == f"sharegpt:{(tmp_path / 'x.jsonl').resolve()}"
    assert local_dataset("/abs/p.jsonl", tmp_path) == "/abs/p.jsonl"
    assert local_dataset("random", tmp_path) == local_dataset("random", None) == "random"
    assert dataset_file("d/p.jsonl").under(tmp_path) == tmp_path / "d" / "p.jsonl"
    assert dataset_file("/abs/p.jsonl").under(tmp_path) == Path("/abs/p.jsonl")
    assert dataset_file("p.jsonl").under(None) == Path("p.jsonl")
