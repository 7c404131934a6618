"""Identities follow the physical machine, not the host block's name:
renaming a host block rebuilds nothing, and two blocks that mean the same
machine share its environment (and servers)."""

from __future__ import annotations

from specdsl.plan.model import Action
from specdsl.plan.render import render_text

from plan_helpers import SPEC, applied_state, plan_for, resolve_text

BASE_ON = 'experiment "base" {\n  host     = host.%s'
CAND_ON = 'experiment "cand" {\n  host     = host.%s'


def two_hosts(box: str = "", gpu: str = "  gpus = 2\n", names=("box", "gpu")) -> str:
    """SPEC with base on host block names[0] and cand on names[1], both
    this machine unless the bodies say otherwise."""
    a, b = names
    hosts = f'host "{a}" {{\n{box}}}\nhost "{b}" {{\n{gpu}}}\n'
    # runs = 2: on two machines the arms are measured apart, and a promotion needs runs that decide its ratio
    spec = SPEC.replace("  requests    = 16\n", "  requests    = 16\n  runs        = 2\n")
    return hosts + spec.replace('experiment "base" {', BASE_ON % a).replace('experiment "cand" {', CAND_ON % b)


def graph_of(tmp_path, text, name):
    graph, _ = plan_for(resolve_text(tmp_path, text, name))
    return graph


def identities(graph, *kinds):
    return {s.identity for s in graph.steps.values() if not kinds or s.kind in kinds}


def test_renaming_a_host_block_changes_no_identity(tmp_path):
    before = graph_of(tmp_path, two_hosts(), "a.spec")
    after = graph_of(tmp_path, two_hosts(names=("workstation", "big")), "b.spec")
    assert identities(after) == identities(before)
    assert "preflight.big" in after.steps and "preflight.gpu" in before.steps  # only the address follows the name
    # and the default host (no host attribute) is the same machine as an empty block
    assert identities(graph_of(tmp_path, SPEC, "c.spec"), "provision", "launch", "benchmark") == \
        identities(graph_of(tmp_path, two_hosts(gpu=""), "d.spec"), "provision", "launch", "benchmark")


def test_renamed_host_block_plans_no_changes(tmp_path):
    before = graph_of(tmp_path, two_hosts(), "a.spec")
    state = applied_state(before)
    state = state.with_promotion("prod", state.result(before.steps["benchmark.cand"].identity).id, ["faster"])
    _, plan = plan_for(resolve_text(tmp_path, two_hosts(names=("workstation", "big")), "b.spec"), state)
    assert not plan.has_changes, render_text(plan)


def test_two_host_blocks_on_this_machine_share_one_provision(tmp_path):
    graph = graph_of(tmp_path, two_hosts(), "a.spec")
    provisions = [s for s in graph.steps.values() if s.kind == "provision"]
    assert [p.addr for p in provisions] == ["provision.s"]
    # both blocks' preflights (gpus differ: two checks) come before it
    assert provisions[0].deps == ("preflight.box", "preflight.gpu")
    assert provisions[0].experiments == ("base", "cand")
    # the same server configuration on both blocks: one server
    same_server = two_hosts().replace('server.tiny { args = { attention-backend = "flashinfer" } }', "server.tiny")
    graph = graph_of(tmp_path, same_server, "b.spec")
    assert [s.addr for s in graph.steps.values() if s.kind == "launch"] == ["launch.tiny"]
    # and blocks that ask the same of the machine share the preflight too
    graph = graph_of(tmp_path, two_hosts(gpu=""), "c.spec")
    assert [s.addr for s in graph.steps.values() if s.kind == "preflight"] == ["preflight.box"]


def test_what_locates_the_machine_is_in_the_identity(tmp_path):
    plain = graph_of(tmp_path, two_hosts(), "a.spec")
    for i, body in enumerate(('  ssh = "me@box"\n', '  workdir = "/scratch"\n')):
        moved = graph_of(tmp_path, two_hosts(box=body), f"b{i}.spec")
        assert moved.steps["provision.s"].identity != plain.steps["provision.s"].identity, body
        assert moved.steps["benchmark.base"].identity != plain.steps["benchmark.base"].identity, body
    # gpus is what the preflight checks, not where the environment lives
    more = graph_of(tmp_path, two_hosts(gpu="  gpus = 4\n"), "c.spec")
    assert more.steps["preflight.gpu"].identity != plain.steps["preflight.gpu"].identity
    assert identities(more, "provision", "launch", "benchmark") == identities(plain, "provision", "launch", "benchmark")


def test_moving_to_another_machine_reads_as_the_ssh_field(tmp_path):
    before = graph_of(tmp_path, two_hosts(), "a.spec")
    _, plan = plan_for(resolve_text(tmp_path, two_hosts(box='  ssh = "me@box"\n'), "b.spec"), applied_state(before))
    prov = plan.change("provision.s")
    assert prov.action is Action.REPLACE
    assert prov.reason == 'host.ssh: (none) -> "me@box"'
    assert plan.change("launch.tiny").reason == "provision.s changes"
    assert plan.change("provision.s/cand").action is Action.REUSE  # cand's block stays on this machine
