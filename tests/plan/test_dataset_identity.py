"""A benchmark's identity covers its dataset file's content: an edited
prompts file reruns it (issue 10: request settings recorded and locked),
while a built-in dataset's identity has no such key (nothing else reruns)."""

from __future__ import annotations

from specdsl.graph.build import build_graph
from specdsl.resolve.resolver import resolve_file

SPEC = '''
stack "s" { python = "3.11" }
server "v" {
  engine = "vllm"
  model  = "m"
}
workload "w" {
  dataset  = "DATASET"
  requests = 4
}
experiment "e" {
  stack    = stack.s
  server   = server.v
  workload = workload.w
}
'''


def _bench(tmp_path, dataset: str):
    spec = tmp_path / "x.spec"
    spec.write_text(SPEC.replace("DATASET", dataset))
    return build_graph(resolve_file(spec).config, spec_dir=tmp_path).steps["benchmark.e"]


def test_an_edited_dataset_file_is_a_new_benchmark(tmp_path):
    (tmp_path / "p.jsonl").write_text('{"prompt": "a b"}\n')
    first = _bench(tmp_path, "p.jsonl")
    assert len(first.content["dataset_digest"]) == 64
    assert _bench(tmp_path, "p.jsonl").identity == first.identity  # the same file: the same benchmark
    (tmp_path / "p.jsonl").write_text('{"prompt": "a c"}\n')
    assert _bench(tmp_path, "p.jsonl").identity != first.identity
    assert "dataset_digest" not in _bench(tmp_path, "random").content
    assert "dataset_digest" not in _bench(tmp_path, "missing.jsonl").content  # plan reports the file (cli)
