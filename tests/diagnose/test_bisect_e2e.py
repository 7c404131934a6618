"""For real: a `transformers serve` candidate with three differences from
its baseline, two harmless (a CORS flag, an environment variable) and one
that costs throughput (continuous batching left off). Apply fails it and
says why under the FAIL; diagnose ranks continuous batching first, marked
as the server's default; bisect names it alone within ceil(log2 3) + 1 = 3
experiments."""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "apply"))
from apply_helpers import REPO, processes_mentioning, specdsl  # noqa: E402

# about 220 s on 2 quiet cores: a proof run on demand (`-m proof`), not in CI's
# default run; the ddmin logic runs in the fast suite (test_bisect.py)
# an apply and a bisect, each with a 900 s budget, and two diagnoses
pytestmark = [pytest.mark.e2e, pytest.mark.proof, pytest.mark.timeout(2400)]

TINY = REPO / "examples" / "quickstart" / "tiny-llama"
# The quickstart's stack, as it is written there: its environment is reused by identity.
SPEC = '''
variable "torch_index" { default = "https://download.pytorch.org/whl/cpu" }

stack "serve" {
  python = "3.11"
  packages = ["transformers[serving]==5.19.0", "torch==2.13.0", "requests"]
  index    = [var.torch_index]
}

server "batched" {
  engine        = "transformers"
  model         = "MODEL"
  ready_timeout = 3m
  args          = { continuous-batching = true, cb-max-memory-percent = 0.02 }
}

server "tuned" {
  engine        = "transformers"
  model         = "MODEL"
  ready_timeout = 3m
  # continuous batching left off (the costly difference), CORS on, a note in the environment
  args          = { cb-max-memory-percent = 0.02, enable-cors = true }
  env           = { DEMO_NOTE = "candidate" }
}

workload "c16" {
  endpoint    = "completions"
  input_len   = 32
  output_len  = 16
  requests    = 16
  concurrency = 16
  # two pairs first (three launches), three at most; two runs a block: runs
  # are cheap next to a launch, and average the noise of a shared machine
  runs        = 2
  max_runs    = 3
  block       = 2
  warmup      = 1
}

experiment "baseline" {
  stack    = stack.serve
  server   = server.batched
  workload = workload.c16
}

experiment "candidate" {
  stack    = stack.serve
  server   = server.tuned
  workload = workload.c16
  baseline = experiment.baseline
  assert "not slower" { output_throughput >= baseline.output_throughput * 0.9 }
}
'''


def test_diagnose_ranks_batching_first_and_bisect_names_it_alone(tmp_path):
    (tmp_path / "e2e.spec").write_text(SPEC.replace("MODEL", str(TINY)))
    applied = specdsl("apply", "e2e.spec", "--yes", "--target", "candidate", cwd=tmp_path)
    out = applied.stdout + applied.stderr
    assert applied.returncode == 3, out  # a confident FAIL
    assert "why, against its baseline (ranked):" in out
    assert "1. effective.continuous_batching: true -> false  [server default]" in out

    diagnosed = specdsl("diagnose", "candidate", "e2e.spec", "--json", cwd=tmp_path, timeout=120)
    assert diagnosed.returncode == 0, diagnosed.stderr
    doc = json.loads(diagnosed.stdout)
    first = doc["differences"][0]
    assert (first["category"], first["key"], first["silent_default"]) == ("effective", "continuous_batching", True)
    bisectable = [d["key"] for d in doc["differences"] if d["bisectable"]]
    assert sorted(bisectable) == ["DEMO_NOTE", "continuous-batching", "enable-cors"]
    print(specdsl("diagnose", "candidate", "e2e.spec", cwd=tmp_path, timeout=120).stdout)

    bisected = specdsl("bisect", "candidate", "e2e.spec", "--yes", cwd=tmp_path)
    out = bisected.stdout + bisected.stderr
    print(out[-3000:])
    assert bisected.returncode == 0, out
    assert "Reproduces the regression: the cause:\n  server_args.continuous-batching: true -> (unset)" in out
    ran = int(out.split("Bisect of candidate: ")[1].split(" experiments run")[0])
    assert 1 <= ran <= 3, out
    assert processes_mentioning(str(tmp_path)) == []
