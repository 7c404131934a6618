"""Which steps go to Slurm as which jobs (pure: no cluster), the sbatch
options of the settings, and the gres a node offers."""

from __future__ import annotations

import textwrap

from specdsl.apply.slurm.preflight import node_offers
import pytest

from specdsl.graph.build import build_graph
from specdsl.plan.diff import make_plan
from specdsl.plan.model import Refresh
from specdsl.plan.slurm import render_jobs, resources, slurm_jobs, time_text
from specdsl.resolve.resolver import resolve_file

HOST = 'host "cluster" {\n  slurm = { partition = "gpu", account = "inf", gres = "gpu:8", time = 90m, exclusive = true }\n}\n'
COMMON = textwrap.dedent('''
    stack "sys" {
      python = "system"
    }
    server "s" {
      engine  = "command"
      model   = "m"
      command = ["srv", "{port}"]
    }
    workload "w" {
      requests = 2
    }
''')


@pytest.fixture(autouse=True)
def _here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def planned(text: str):
    with open("m.spec", "w") as f:
        f.write(text)
    resolved = resolve_file(__import__("pathlib").Path("m.spec"))
    assert resolved.ok, [d.summary for d in resolved.diags]
    graph = build_graph(resolved.config)
    return graph, make_plan(graph, None, Refresh(), spec="m.spec", spec_digest="d")


def test_one_job_per_server_and_a_workload_matrix_shares_one():
    graph, plan = planned(HOST + COMMON + textwrap.dedent('''
        experiment "servers" {
          host     = host.cluster
          stack    = stack.sys
          server   = server.s { env = { CELL = matrix.c } }
          workload = workload.w
          matrix   = { c = [1, 2, 3] }
        }
        experiment "loads" {
          host     = host.cluster
          stack    = stack.sys
          server   = server.s
          workload = workload.w { concurrency = matrix.n }
          matrix   = { n = [1, 4] }
        }
    '''))
    jobs = slurm_jobs(graph, plan)
    assert len(jobs) == 4  # a server per `servers` cell; both `loads` cells share the plain server.s
    shared = next(j for j in jobs if "benchmark.loads[n=4]" in j.steps)
    assert [a for a in shared.steps if a.startswith("benchmark.")] == ["benchmark.loads[n=1]", "benchmark.loads[n=4]"]
    assert sum(1 for j in jobs for a in j.steps if a.startswith("launch.")) == 4
    assert all(j.steps[0] == "provision.sys" for j in jobs)  # each job carries the environment it needs
    assert not any(graph.steps[a].kind in ("preflight", "check") for j in jobs for a in j.steps)


def test_paired_baseline_and_candidate_share_one_allocation():
    graph, plan = planned(HOST + COMMON + textwrap.dedent('''
        experiment "base" {
          host     = host.cluster
          stack    = stack.sys
          server   = server.s
          workload = workload.w { runs = 2 }
        }
        experiment "cand" {
          host     = host.cluster
          stack    = stack.sys
          server   = server.s { env = { FAST = "1" } }
          workload = workload.w { runs = 2 }
          baseline = experiment.base
          assert "faster" { output_throughput >= baseline.output_throughput }
        }
    '''))
    jobs = slurm_jobs(graph, plan)
    paired = [j for j in jobs if "benchmark.cand" in j.steps]
    assert len(paired) == 1 and "launch" not in " ".join(paired[0].steps)  # both arms: launched by the paired step itself
    assert "check.cand.faster" not in {a for j in jobs for a in j.steps}  # verdicts are judged here


def test_local_experiments_go_nowhere_near_slurm():
    graph, plan = planned(COMMON + 'experiment "e" {\n  stack = stack.sys\n  server = server.s\n  workload = workload.w\n}\n')
    assert slurm_jobs(graph, plan) == [] and render_jobs(graph, plan) == ""


def test_plan_lists_the_jobs_with_their_options():
    graph, plan = planned(HOST + COMMON + 'experiment "e" {\n  host = host.cluster\n  stack = stack.sys\n'
                                          '  server = server.s\n  workload = workload.w\n}\n')
    text = render_jobs(graph, plan)
    assert "job s on host cluster: --partition=gpu --account=inf --gres=gpu:8 --time=01:30:00 --exclusive" in text
    assert "provision.sys, launch.s, benchmark.e, teardown.s" in text
    assert "at most 4 at once" in text


def test_resources_and_time():
    graph, _ = planned(HOST + COMMON + 'experiment "e" {\n  host = host.cluster\n  stack = stack.sys\n'
                                       '  server = server.s\n  workload = workload.w\n}\n')
    slurm = graph.steps["launch.s"].payload["host"].slurm
    assert resources(slurm)[:2] == ["--partition=gpu", "--account=inf"]
    assert time_text(30) == "00:01:00" and time_text(61) == "00:02:00" and time_text(2 * 86400 + 3600) == "2-01:00:00"


def test_node_offers():
    assert node_offers("gpu:8", "gpu:8") and not node_offers("gpu:8", "gpu:9")
    assert node_offers("gpu:h200:8(S:0-1)", "gpu:h200:4") and not node_offers("gpu:h200:8(S:0-1)", "gpu:a100:1")
    assert node_offers("gpu:h200:4,gpu:a100:4", "gpu:8")  # an untyped request counts every type
    assert not node_offers("(null)", "gpu:1") and node_offers("gpu:2,nic:1", "gpu:1,nic:1")
