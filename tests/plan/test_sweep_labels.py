"""Sweeps: every cell carries its label in its steps' addresses (the first
cell too, whose launch used to be the bare `launch.llama`), in the Slurm
job names plan shows, and `--target` takes a cell or a slice of the matrix;
a Slurm `gres` that gives a job fewer GPUs than a server needs is a located
error at validate."""

from __future__ import annotations

import json

import pytest

from specdsl.cli.main import main
from specdsl.names import target_matches

SWEEP = '''HOST
stack "s" { python = "3.12" }
server "llama" {
  engine = "vllm"
  model  = "org/m"
}
workload "w" { requests = 4 }
experiment "paced" {
  matrix   = { seqs = [64, 128, 256], rate = [1, 2] }
  HOSTREF
  stack    = stack.s
  server   = server.llama { args = { max-num-seqs = matrix.seqs } }
  workload = workload.w
}
'''


def spec(tmp_path, slurm: bool = False):
    text = SWEEP.replace("HOSTREF", "host     = host.cluster" if slurm else "")
    text = text.replace("HOST\n", 'host "cluster" {\n  slurm = { partition = "gpu", gres = "gpu:1" }\n}\n' if slurm else "")
    path = tmp_path / "sweep.spec"
    path.write_text(text)
    return path


def plan_json(capsys, *argv):
    code = main(["plan", *argv, "--no-refresh", "--json"])
    out = capsys.readouterr().out
    assert code == 0, out
    return [c["addr"] for c in json.loads(out)["changes"]]


def test_every_cell_carries_its_label_the_first_too(tmp_path, capsys):
    addrs = plan_json(capsys, str(spec(tmp_path)))
    launches = [a for a in addrs if a.startswith("launch.")]
    assert launches == ["launch.llama/paced[seqs=64]", "launch.llama/paced[seqs=128]", "launch.llama/paced[seqs=256]"]
    assert "teardown.llama/paced[seqs=64]" in addrs and "launch.llama" not in addrs


def test_slurm_job_names_carry_the_cell(tmp_path, capsys):
    assert main(["plan", str(spec(tmp_path, slurm=True)), "--no-refresh"]) == 0
    out = capsys.readouterr().out
    jobs = [line.split()[1] for line in out.splitlines() if line.startswith("  job ")]
    assert jobs == ["llama/paced[seqs=64]", "llama/paced[seqs=128]", "llama/paced[seqs=256]"], out


@pytest.mark.parametrize("target, cells", [
    ("paced[seqs=128,rate=2]", ["paced[seqs=128,rate=2]"]),
    ("paced[rate=2, seqs=128]", ["paced[seqs=128,rate=2]"]),  # any order, spaces
    ("paced[seqs=128]", ["paced[seqs=128,rate=1]", "paced[seqs=128,rate=2]"]),  # a slice
    ("paced[rate=2.0]", ["paced[seqs=64,rate=2]", "paced[seqs=128,rate=2]", "paced[seqs=256,rate=2]"]),  # by value
])
def test_target_takes_a_cell_or_a_slice(tmp_path, capsys, target, cells):
    addrs = plan_json(capsys, str(spec(tmp_path)), "--target", target)
    assert [a[len("benchmark."):] for a in addrs if a.startswith("benchmark.")] == cells


def test_a_slice_no_cell_matches_names_the_matrix(tmp_path, capsys):
    assert main(["plan", str(spec(tmp_path)), "--no-refresh", "--target", "paced[seqs=12]"]) == 1
    err = capsys.readouterr().err
    assert "specdsl: error: --target paced[seqs=12]: no cell of paced has those values" in err
    assert "its matrix: seqs: 64, 128, 256; rate: 1, 2" in err


def test_target_matches():
    assert target_matches("g", "g[a=1,b=x]") and target_matches("g[b=x]", "g[a=1,b=x]")
    assert not target_matches("g[b=y]", "g[a=1,b=x]") and not target_matches("g[c=1]", "g[a=1,b=x]")
    assert not target_matches("h", "g[a=1]") and not target_matches("g[a=1", "g[a=1]")


def test_a_gres_below_the_servers_need_is_a_located_error(tmp_path, capsys):
    path = spec(tmp_path, slurm=True)
    path.write_text(path.read_text().replace('model  = "org/m"', 'model  = "org/m"\n  args   = { tensor-parallel-size = 8 }'))
    assert main(["validate", "--json", str(path)]) == 1
    (diag,) = json.loads(capsys.readouterr().out)["files"][0]["diagnostics"]
    assert diag["summary"] == "Server `llama` needs 8 GPUs but a Slurm job of host `cluster` gets 1"
    assert 'ask for `gres = "gpu:8"`' in diag["detail"]
    line = path.read_text().splitlines().index("  server   = server.llama { args = { max-num-seqs = matrix.seqs } }") + 1
    assert (diag["range"]["line"], diag["range"]["col"]) == (line, 14)
    path.write_text(path.read_text().replace('gres = "gpu:1"', 'gres = "gpu:h200:8"'))
    assert main(["validate", str(path)]) == 0
