"""GPU needs at validate and plan time: what a server needs (its `gpus`,
or its engine's parallel sizes read through the flag tables), a server
needing more GPUs than its host has is an error located at the
experiment's `server`, and the host's `gpus` as a count or device ids."""

from __future__ import annotations

import pytest

from specdsl.model import config
from specdsl.model.gpus import WHOLE, host_devices, server_need
from specdsl.resolve.resolver import resolve_file


def need(engine: str, **args) -> int | None:
    return server_need(config.Server(name="s", engine=engine, model="m", args=config.pairs(args)))


@pytest.mark.parametrize("engine, args, expected", [
    ("vllm", {}, 1),
    ("vllm", {"tensor-parallel-size": 4}, 4),
    ("vllm", {"tensor-parallel-size": 2, "pipeline-parallel-size": 2}, 4),
    ("vllm", {"tensor-parallel-size": 2, "data-parallel-size": 4}, 8),
    ("vllm", {"tensor-parallel-size": 2, "data-parallel-size": 4, "data-parallel-size-local": 2}, 4),
    ("vllm", {"tensor-parallel-size": 4, "decode-context-parallel-size": 2}, 4),  # inside the TP group
    ("sglang", {"tp-size": 8}, 8),
    ("sglang", {"tensor-parallel-size": 4, "pp-size": 2}, 8),
    ("sglang", {"tp-size": 2, "dp-size": 2}, 4),
    ("sglang", {"tp-size": 8, "dp-size": 8, "enable-dp-attention": True}, 8),  # attention DP inside TP
    ("sglang", {"tp-size": 16, "nnodes": 2}, 8),  # per node
    ("sglang", {"tp-size": 8, "ep-size": 8}, 8),
    ("transformers", {"continuous-batching": True}, 1),
    ("command", {}, WHOLE),
])
def test_what_a_server_needs(engine, args, expected):
    assert need(engine, **args) == expected


def test_gpus_of_the_server_win_over_its_args():
    server = config.Server(name="s", engine="vllm", model="m", args=config.pairs({"tensor-parallel-size": 4}), gpus=2)
    assert server_need(server) == 2
    assert host_devices(config.Host(name="h", gpus=3)) == (0, 1, 2)
    assert host_devices(config.Host(name="h", gpus=2, gpu_ids=(4, 6))) == (4, 6)


def _resolve(tmp_path, text):
    spec = tmp_path / "g.spec"
    spec.write_text(text)
    return resolve_file(spec)


BASE = 'stack "s" {}\nworkload "w" {}\n'


def test_a_server_needing_more_gpus_than_its_host_is_a_located_error(tmp_path):
    text = BASE + '''host "g4" { gpus = 4 }
server "big" {
  engine = "sglang"
  model  = "m"
  args   = { tp-size = 8 }
}
experiment "sweep" {
  matrix   = { c = [1, 2, 3] }
  host     = host.g4
  stack    = stack.s
  server   = server.big
  workload = workload.w
}
experiment "cpu" {
  stack    = stack.s
  server   = server.big { gpus = 1 }
  workload = workload.w
}
'''
    resolved = _resolve(tmp_path, text)
    errors = [d for d in resolved.diags if d.severity == "error"]
    assert [(d.summary, d.span.line, d.span.col) for d in errors] == [
        ("Server `big` needs 8 GPUs but host `g4` has 4", 13, 14),  # one for the three cells
        ("Server `big` needs 1 GPU but host `local` declares none", 18, 14),
    ]
    assert "parallel sizes in `args`" in errors[0].detail


def test_host_gpus_as_ids_and_bad_ids(tmp_path):
    ok = _resolve(tmp_path, BASE + 'host "g" {\n  gpus = [0, 3]\n  allow_busy_gpus = true\n}\n'
                  'server "v" {\n  engine = "vllm"\n  model = "m"\n}\n'
                  'experiment "e" {\n  host = host.g\n  stack = stack.s\n  server = server.v\n  workload = workload.w\n}\n')
    assert ok.ok, [d.summary for d in ok.diags]
    host = ok.config.experiments[0].host
    assert (host.gpus, host.gpu_ids, host.allow_busy_gpus) == (2, (0, 3), True)
    bad = _resolve(tmp_path, 'host "g" { gpus = [0, -1, "x"] }\n')
    assert [(d.summary, d.span.col) for d in bad.diags] == [("Items of `gpus` must be device ids (integers >= 0), not -1", 23)]


def test_cuda_visible_devices_of_the_spec_on_a_gpu_host_is_an_error(tmp_path):
    text = BASE + '''host "g" { gpus = 2 }
server "v" {
  engine = "vllm"
  model  = "m"
  env    = { CUDA_VISIBLE_DEVICES = "1" }
}
experiment "e" {
  host     = host.g
  stack    = stack.s
  server   = server.v
  workload = workload.w
}
'''
    (d,) = [d for d in _resolve(tmp_path, text).diags if d.severity == "error"]
    assert d.summary == "`CUDA_VISIBLE_DEVICES` is set by specdsl on host `g`" and d.span.line == 12
