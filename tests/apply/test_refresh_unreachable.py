"""Refresh failures are errors: `specdsl plan` against an SSH host that
does not resolve exits 1 naming the host and the cause (nothing on stdout,
no `drift:` line), `--no-refresh`/`-refresh=false` plans offline; a record
on a host the spec no longer names stays a drift note. The real `ssh`
client, an ssh config whose name resolves nowhere (`.invalid`): no server."""

from __future__ import annotations

import json
import shutil

import pytest

from specdsl.apply.refresh import Unreachable, refresh
from specdsl.cli.main import main
from specdsl.hosts.registry import SSH_CONFIG_ENV
from specdsl.model.config import Host as HostDecl
from specdsl.state import Environment, State

pytestmark = pytest.mark.skipif(shutil.which("ssh") is None, reason="needs the OpenSSH client")

SPEC = '''host "gpu8" {
  ssh  = "specdsl-nowhere"
  gpus = 8
}
stack "s" { python = "3.12" }
server "m" {
  engine = "vllm"
  model  = "org/m"
}
workload "w" { requests = 4 }
experiment "e" {
  host     = host.gpu8
  stack    = stack.s
  server   = server.m
  workload = workload.w
}
'''


@pytest.fixture
def nowhere(tmp_path, monkeypatch):
    config = tmp_path / "ssh_config"
    config.write_text("Host specdsl-nowhere\n  HostName no-such-host.invalid\n")
    monkeypatch.setenv(SSH_CONFIG_ENV, str(config))
    spec = tmp_path / "x.spec"
    spec.write_text(SPEC)
    return spec


def test_a_host_that_does_not_resolve_is_an_error_where_state_records_something(nowhere, capsys):
    from specdsl.state import write_state

    state = State.new().with_environment(Environment("e1", "ssh:specdsl-nowhere", "/x", "/x/bin/python", "3.11"))
    write_state(nowhere.parent / ".specdsl", state)
    code = main(["plan", str(nowhere), "--detailed-exitcode"])
    out, err = capsys.readouterr()
    assert code == 1 and out == ""
    assert "specdsl: error: cannot refresh: host gpu8 (specdsl-nowhere): connecting: unknown host" in err
    assert "--no-refresh" in err and "drift:" not in err + out


def test_an_empty_state_plans_without_the_host_and_says_so(nowhere, capsys):
    code = main(["plan", str(nowhere), "--detailed-exitcode"])
    out, err = capsys.readouterr()
    assert code == 2, err  # changes: everything is to be made
    assert "specdsl: warning: cannot refresh: host gpu8 (specdsl-nowhere): connecting: unknown host" in err
    assert "nothing is recorded there, so its environments are planned as new" in err
    assert "+ provision.s" in out and "drift: host gpu8 (specdsl-nowhere)" in out
    code = main(["plan", str(nowhere), "--json"])
    out, _ = capsys.readouterr()
    doc = json.loads(out)
    assert code == 0 and doc["valid"] is True
    [e] = doc["refresh_errors"]
    assert e["kind"] == "unreachable" and e["host"] == "ssh:specdsl-nowhere" and "unknown host" in e["detail"]
    # apply needs the host: it stops before anything runs
    code = main(["apply", str(nowhere), "--yes"])
    _, err = capsys.readouterr()
    assert code == 1 and "error: cannot refresh: host gpu8 (specdsl-nowhere)" in err and "--no-refresh" in err


@pytest.mark.parametrize("offline", ["--no-refresh", "-refresh=false"])
def test_offline_plans_without_asking(nowhere, capsys, offline):
    assert main(["plan", str(nowhere), offline]) == 0
    assert "+ launch.m" in capsys.readouterr().out


def test_a_host_the_spec_no_longer_names_stays_a_drift_note(nowhere):
    state = State.new().with_environment(Environment("e1", "ssh:specdsl-nowhere", "/x", "/x/bin/python", "3.11"))
    with pytest.raises(Unreachable) as exc:
        refresh(state, names={"gpu8": HostDecl("gpu8", ssh="specdsl-nowhere")}, strict=True)
    assert exc.value.causes[0].startswith("host gpu8 (specdsl-nowhere): connecting: unknown host")
    fresh = refresh(state, names={}, strict=True)  # no longer in the spec: its records stand, with the reason
    assert fresh.environments == frozenset({"e1"})
    assert any("unknown host" in d and "taken as they are" in d for d in fresh.drift)


def test_a_slurm_cluster_that_does_not_answer_on_an_empty_state_plans_and_says_so(nowhere, capsys):
    """The Slurm half: a cluster's login node that does not resolve is the
    same refresh error as an SSH host's where nothing is recorded (the
    cluster's own check, `sbatch --test-only`, is not asked a second time
    as an error of the plan); where state records an environment there it
    stays an error."""
    nowhere.write_text(SPEC.replace('  gpus = 8\n', '  gpus = 8\n  slurm = { partition = "debug", time = 10m }\n'))
    code = main(["plan", str(nowhere), "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(out)
    assert doc["valid"] is True
    [e] = doc["refresh_errors"]  # the host once, not once for refresh and once for the cluster
    assert e["kind"] == "unreachable" and e["host"] == "ssh:specdsl-nowhere" and "unknown host" in e["detail"]
    assert err.count("warning: cannot refresh: host gpu8 (specdsl-nowhere)") == 1
    code = main(["plan", str(nowhere), "--detailed-exitcode"])
    out, err = capsys.readouterr()
    assert code == 2 and "+ provision.s" in out and "error" not in err
    from specdsl.state import write_state

    write_state(nowhere.parent / ".specdsl",
                State.new().with_environment(Environment("e1", "ssh:specdsl-nowhere", "/x", "/x/bin/python", "3.11")))
    code = main(["plan", str(nowhere)])
    out, err = capsys.readouterr()
    assert code == 1 and out == "" and "cannot refresh: host gpu8 (specdsl-nowhere)" in err
