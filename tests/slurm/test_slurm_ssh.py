"""Slurm through a login node over SSH, against the real parts: the
loopback sshd (`login`) as the login node of the real one-node cluster.
How a command is composed and that its values arrive byte for byte; the
preflight asked through the login node (specdsl runs here with no Slurm
command on its PATH and no SLURM_CONF), each problem naming its setting.
A whole apply through it: test_slurm_ssh_e2e.py."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from apply_helpers import cli_env
from slurm_helpers import LOGIN, setup, spec_text, through_login
from specdsl.apply.slurm.preflight import check_python
from specdsl.apply.slurm.site import package_folder
from specdsl.hosts.slurm import SlurmClient, SlurmError, SshRunner, remote_script
from specdsl.hosts.ssh import SshHost
from specdsl.resolve.resolver import resolve_file

WEIRD = ["a b", "it's", '"q"', "$(touch /tmp/specdsl-pwned)", "`id`", "x;y", "*", "back\\slash", "ünï", "new\nline"]


@pytest.fixture
def login_host(login, tmp_path):
    host = SshHost(LOGIN, name="cluster", workdir=str(tmp_path / "login-workdir"), config=str(login.config))
    try:
        yield host
    finally:
        host.close()


def no_slurm_env(login, tmp_path: Path) -> dict[str, str]:
    """This machine's side: a PATH with ssh alone (no sbatch, no squeue) and
    no SLURM_CONF; the ssh config of the loopback sshd."""
    bare = tmp_path / "bin-ssh-only"
    bare.mkdir(exist_ok=True)
    if not (bare / "ssh").exists():
        os.symlink(shutil.which("ssh"), bare / "ssh")
    env = cli_env(SPECDSL_SSH_CONFIG=str(login.config), PATH=str(bare))
    env.pop("SLURM_CONF", None)
    return env


def apply(folder: Path, env: dict, timeout: float = 300, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "specdsl.cli.main", "apply", "m.spec", "--yes", *extra], cwd=folder,
                          capture_output=True, text=True, timeout=timeout, env=env)


# -- the command composition ------------------------------------------------------
def test_a_remote_command_is_quoted_words():
    script = remote_script(["sbatch", "--job-name=a b;c", "/x/job.sh"], env={"SLURM_CONF": "/e t/slurm.conf"},
                           cwd=Path("/jobs/it's"))
    assert script.splitlines() == [
        "cd '/jobs/it'\"'\"'s' || { echo specdsl-nocwd >&2; exit 126; }",
        "command -v sbatch >/dev/null 2>&1 || { echo specdsl-missing >&2; exit 127; }",
        "exec env -- 'SLURM_CONF=/e t/slurm.conf' sbatch '--job-name=a b;c' /x/job.sh",
    ]


def test_values_reach_the_login_node_byte_for_byte(login_host, tmp_path):
    folder = tmp_path / "login-workdir" / "it's a $(dir)"
    login_host.mkdir(folder)
    runner = SshRunner(login_host, env={"SPECDSL_WEIRD": WEIRD[3] + WEIRD[9]})
    done = runner.run(["python3", "-c", "import json, os, sys; print(json.dumps([os.getcwd(), os.environ['SPECDSL_WEIRD'], "
                       "*sys.argv[1:]]))", *WEIRD], timeout=30, cwd=folder)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [str(folder), WEIRD[3] + WEIRD[9], *WEIRD]
    assert not os.path.exists("/tmp/specdsl-pwned")


def test_a_program_the_login_node_lacks(login_host):
    client = SlurmClient(runner=SshRunner(login_host))
    with pytest.raises(SlurmError, match="sbatch-nowhere is not installed on the login node specdsl-test"):
        client.run_program(["sbatch-nowhere", "--version"])
    assert client.which("sbatch-nowhere") is None


# -- apply through the login node ---------------------------------------------------
FAR = '''
host "far" {
  ssh   = "specdsl-nohost"
  slurm = { partition = "debug" }
}
experiment "f" {
  host     = host.far
  stack    = stack.sys
  server   = server.s
  workload = workload.w
}
'''


def test_the_preflight_runs_on_the_login_node(fresh, login, tmp_path):
    folder, _ = setup(tmp_path, server_args=', "./no-such-script.py"')
    spec = folder / "m.spec"
    share = tmp_path / "login-share"
    text = through_login(spec.read_text(), fresh, share).replace('partition = "debug"', 'partition = "debgu"', 1)
    spec.write_text(text + FAR)
    # refreshing, the unreachable host is an error before anything runs; offline, every preflight says its own
    out = apply(folder, no_slurm_env(login, tmp_path))
    assert out.returncode == 1 and "cannot refresh: host far (specdsl-nohost): connecting: unknown host" in out.stderr
    out = apply(folder, no_slurm_env(login, tmp_path), 300, "--no-refresh")
    text = out.stdout + out.stderr
    assert out.returncode == 5, text
    # asked of the cluster through the login node, at the line that set it
    assert 'm.spec:4:' in text and 'slurm.partition: no partition "debgu" on this cluster' in text, text
    assert "did you mean `debug`?" in text
    # a file the spec names by relative path must be here, to be copied to the login node
    assert re.search(r"m\.spec:\d+:\d+: command of server s: \./no-such-script\.py is not on this machine", text), text
    # a login node that cannot be reached fails its own host's preflight
    assert "host far (specdsl-nohost): connecting: unknown host" in text, text
    assert "skipped because preflight.cluster failed" in text and "skipped because preflight.far failed" in text
    assert fresh.jobs() == [] and not (share / "jobs").exists()  # nothing submitted


def test_plan_asks_the_cluster_through_the_login_node(fresh, login, tmp_path):
    """`specdsl plan` (refreshing) asks the cluster through the login node
    what apply's preflight asks, and copies nothing there: a valid spec
    plans (exit 0), an unknown partition is an error at the host block
    (exit 1). The job's Python is asked once a copy of this specdsl is on
    the login node (an earlier apply's), not before: plan puts none there."""
    from specdsl.apply.slurm.site import login_package

    folder, _ = setup(tmp_path)
    spec = folder / "m.spec"
    share = tmp_path / "login-share"
    good = through_login(spec.read_text(), fresh, share, python="/no/such/python3")
    spec.write_text(good)
    env = no_slurm_env(login, tmp_path)

    def plan() -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "specdsl.cli.main", "plan", "m.spec"], cwd=folder,
                              capture_output=True, text=True, timeout=120, env=env)

    out = plan()
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"submitted on the login node {LOGIN}" in out.stdout
    assert not (share / "lib").exists() and not (share / "jobs").exists()  # nothing copied, nothing submitted
    package = login_package(share)  # as an earlier apply left it: now its Python is asked, and fails
    package.mkdir(parents=True)
    (package / "specdsl").symlink_to(package_folder())
    out = plan()
    assert out.returncode == 1, out.stdout + out.stderr
    assert "m.spec:2:1: error: Host `cluster`: slurm.python: /no/such/python3 on the login node specdsl-test" in out.stderr
    assert "`slurm.python` is set at m.spec:4:" in out.stderr, out.stderr
    spec.write_text(good.replace('partition = "debug"', 'partition = "debgu"', 1))
    out = plan()
    assert out.returncode == 1 and "Plan for" not in out.stdout, out.stdout + out.stderr
    assert ('m.spec:2:1: error: Host `cluster`: slurm.partition: no partition "debgu" on this cluster '
            "(did you mean `debug`?)") in out.stderr, out.stderr
    assert "`slurm.partition` is set at m.spec:4:" in out.stderr and "Traceback" not in out.stderr
    assert fresh.jobs() == []


def test_the_jobs_python_is_checked_on_the_login_node(login_host, tmp_path):
    spec = tmp_path / "m.spec"
    spec.write_text(through_login(spec_text(tmp_path), _Conf(), tmp_path / "share", python="/no/such/python3"))
    resolved = resolve_file(spec)
    assert resolved.ok, [d.summary for d in resolved.diags]
    [decl] = [h for h in resolved.config.hosts if h.name == "cluster"]
    client = SlurmClient(runner=SshRunner(login_host))
    [problem] = check_python(decl, client, decl.slurm.python, tmp_path / "lib")
    assert re.match(r"\S*m\.spec:4:\d+: slurm\.python: /no/such/python3 on the login node specdsl-test cannot run "
                    r"specdsl \S+'s job", problem), problem
    assert "No such file or directory" in problem  # what the login node said
    # this interpreter with this package (the copy a login node gets) passes
    assert check_python(decl, client, sys.executable, package_folder().parent) == []


def test_a_slurm_command_missing_on_the_login_node(login_host, tmp_path, monkeypatch):
    """The login node's PATH lacks a command the preflight needs (here one
    named so that no machine has it): the error names the login node."""
    from specdsl.apply.slurm import preflight as slurm_preflight

    spec = tmp_path / "m.spec"
    spec.write_text(through_login(spec_text(tmp_path), _Conf(), tmp_path / "share"))
    [decl] = [h for h in resolve_file(spec).config.hosts if h.name == "cluster"]
    monkeypatch.setattr(slurm_preflight, "COMMANDS", ("sbatch-nowhere", "squeue"))
    [problem] = slurm_preflight.check(decl, SlurmClient(runner=SshRunner(login_host)), tmp_path / "x.sh")
    assert re.match(r"\S*m\.spec:4:\d+: host cluster runs on Slurm through specdsl-test but sbatch-nowhere is not in "
                    r"the PATH of a non-interactive ssh session there", problem), problem


class _Conf:
    conf = "/etc/slurm/slurm.conf"


def test_settings_that_do_not_go_with_slurm(tmp_path):
    spec = tmp_path / "m.spec"
    spec.write_text(spec_text(tmp_path).replace('host "cluster" {\n', 'host "cluster" {\n  ssh = "login"\n  workdir = "/x"\n'))
    out = subprocess.run([sys.executable, "-m", "specdsl.cli.main", "validate", str(spec)], capture_output=True,
                         text=True, timeout=60, env=cli_env())
    assert out.returncode == 1
    assert "m.spec:4:3" in out.stderr and "`workdir` of a Slurm host is `slurm.workdir`" in out.stderr, out.stderr


# -- the spec's files, copied to the login node --------------------------------------
def test_the_specs_files_are_copied_once_per_content(login_host, tmp_path):
    """A dataset, a model folder, a script and a folder of carried wheels
    named by relative path arrive on the login node under
    `files/<digest>/`, byte for byte; a second stage copies nothing, a
    changed file is copied anew, and the job's values name the copies."""
    from specdsl.apply.slurm import files as slurm_files
    from specdsl.model import config

    spec_dir = tmp_path / "spec"
    (spec_dir / "data").mkdir(parents=True)
    (spec_dir / "data" / "p.jsonl").write_text('{"prompt": "hi"}\n')
    (spec_dir / "tiny").mkdir()
    (spec_dir / "tiny" / "config.json").write_text("{}")
    (spec_dir / "bench.py").write_text("print(1)\n")
    (spec_dir / "wheels").mkdir()
    (spec_dir / "wheels" / "a-1-py3-none-any.whl").write_bytes(b"PK")
    (spec_dir / "same.jsonl").write_text('{"prompt": "hi"}\n')  # the content of data/p.jsonl, another name
    server = config.Server("s", "transformers", "./tiny")
    workload = config.Workload("w", dataset="jsonl:data/p.jsonl")
    script = config.Workload("u", command=("python3", "bench.py", "--port", "{port}", "Qwen/Qwen3-8B"))
    stack = config.Stack("st", find_links=("wheels",), packages=("torch==2.0",))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "q.jsonl").write_text('{"prompt": "abs"}\n')
    absolute = config.Workload("a", dataset=f"{elsewhere / 'q.jsonl'}")  # a dataset is this machine's, absolute too
    on_cluster = config.Server("c", "vllm", str(spec_dir / "tiny"))  # any other absolute path is the cluster's
    same = config.Workload("s", dataset="sharegpt:same.jsonl")
    values = [server, workload, script, stack, absolute, on_cluster, same]
    files = [f for v in values for f in slurm_files.files_of(v, spec_dir)]
    assert sorted(f.text for f in files) == sorted([str(elsewhere / "q.jsonl"), "./tiny", "bench.py", "data/p.jsonl",
                                                    "wheels", "same.jsonl"])
    assert slurm_files.missing(files) == []
    root = tmp_path / "login-workdir" / "slurm"
    first = slurm_files.stage(login_host, root, files)
    assert len(first.copied) == 6 and first.kept == []
    memo: dict = {}
    s2, w2, u2, st2, a2, c2, same2 = (first.rewrite(v, spec_dir, memo) for v in values)
    assert Path(same2.dataset.removeprefix("sharegpt:")).name == "same.jsonl"
    assert Path(same2.dataset.removeprefix("sharegpt:")).read_text() == '{"prompt": "hi"}\n'
    assert Path(a2.dataset).read_text() == '{"prompt": "abs"}\n' and a2.dataset.startswith(str(root / "files"))
    assert c2 == on_cluster
    remote = Path(w2.dataset.removeprefix("jsonl:"))
    assert w2.dataset.startswith("jsonl:" + str(root / "files"))
    assert remote.read_text() == '{"prompt": "hi"}\n' and remote.name == "p.jsonl"
    assert (Path(s2.model) / "config.json").read_text() == "{}"
    assert Path(u2.command[1]).read_text() == "print(1)\n" and u2.command[2:] == ("--port", "{port}", "Qwen/Qwen3-8B")
    assert (Path(st2.find_links[0]) / "a-1-py3-none-any.whl").read_bytes() == b"PK" and st2.packages == ("torch==2.0",)
    again = slurm_files.stage(login_host, root, files)
    assert again.copied == [] and len(again.kept) == 6 and again.remote == first.remote
    (spec_dir / "data" / "p.jsonl").write_text('{"prompt": "changed"}\n')
    changed = slurm_files.stage(login_host, root, files)
    [(f, _, path)] = changed.copied
    assert f.text == "data/p.jsonl" and path != str(remote) and Path(path).read_text() == '{"prompt": "changed"}\n'
    assert remote.read_text() == '{"prompt": "hi"}\n'  # the old content's copy is another folder


def test_a_file_missing_here_is_a_located_problem(tmp_path):
    from specdsl.apply.slurm import files as slurm_files
    from specdsl.resolve.resolver import resolve_file

    spec = tmp_path / "m.spec"
    spec.write_text(spec_text(tmp_path, server_args=', "./no-such-script.py"'))
    resolved = resolve_file(spec)
    [exp] = resolved.config.experiments[:1]
    [problem] = slurm_files.missing(slurm_files.files_of(exp, tmp_path))
    assert re.match(r"\S*m\.spec:\d+:\d+: command of server s: \./no-such-script\.py is not on this machine", problem), problem


def test_plan_asks_the_login_node_which_copies_are_there(login, tmp_path, monkeypatch, capsys):
    """`plan` (refreshing) asks the login node, in stage's one command, which
    of the spec's files it has: a file staged before is "already there", a
    new one "will copy"; with --no-refresh it asks nothing."""
    from specdsl.apply.slurm import files as slurm_files
    from specdsl.cli.main import main
    from specdsl.operations.plan import ask_login_nodes, login_node_copies
    from specdsl.plan.files import copy_folder, render_copies

    root = tmp_path / "login-workdir" / "slurm"
    (tmp_path / "p.jsonl").write_text('{"prompt": "hi"}\n')
    (tmp_path / "bench.py").write_text("print(1)\n")
    (tmp_path / "m.spec").write_text(
        f'host "cluster" {{\n  ssh = "{LOGIN}"\n  slurm = {{ workdir = "{root}" }}\n}}\n'
        'stack "sys" {\n  python = "system"\n}\n'
        'server "s" {\n  engine = "command"\n  model = "m"\n  command = ["python3", "./bench.py", "{port}"]\n}\n'
        'workload "w" {\n  dataset = "jsonl:p.jsonl"\n  requests = 2\n}\n'
        'experiment "e" {\n  host = host.cluster\n  stack = stack.sys\n  server = server.s\n  workload = workload.w\n}\n')
    # an earlier apply's copy of p.jsonl, put where stage puts it (the loopback login node shares this
    # filesystem; stage itself is test_the_specs_files_are_copied_once_per_content's, and costs a second)
    digest = slurm_files.content_digest(tmp_path / "p.jsonl")
    (root / "files" / copy_folder(digest, tmp_path / "p.jsonl")).mkdir(parents=True)
    shutil.copy(tmp_path / "p.jsonl", root / "files" / copy_folder(digest, tmp_path / "p.jsonl") / "p.jsonl")
    monkeypatch.setenv("SPECDSL_SSH_CONFIG", str(login.config))
    graph, plan = planned_here(tmp_path / "m.spec")
    copies, problems = login_node_copies(graph, plan, tmp_path)
    assert problems is None
    copies, notes = ask_login_nodes(graph, plan, copies)
    rows = {c.file.text: c.as_json() for c in copies}
    assert notes == {} and rows["p.jsonl"]["status"] == "already there" and rows["./bench.py"]["status"] == "will copy"
    assert Path(rows["p.jsonl"]["copy"]).read_text() == '{"prompt": "hi"}\n'
    text = render_copies(copies, notes)
    assert f"Files copied to the login node {LOGIN} of host cluster: 1 to copy, 1 already there" in text
    assert "\n  = p.jsonl (dataset of workload w): 17 B" in text and "\n  + ./bench.py (command of server s)" in text
    assert text.count("(will copy)") == 1 and text.count("(already there)") == 1
    assert main(["plan", "--no-refresh", str(tmp_path / "m.spec"), "--json"]) == 0  # asks nothing
    assert {r["status"] for r in json.loads(capsys.readouterr().out)["login_node_files"]} == {"copied unless already there"}


def planned_here(spec: Path):
    from specdsl.graph.build import build_graph
    from specdsl.plan.diff import make_plan
    from specdsl.plan.model import Refresh

    resolved = resolve_file(spec)
    assert resolved.ok, [d.summary for d in resolved.diags]
    graph = build_graph(resolved.config, spec_dir=spec.parent)
    return graph, make_plan(graph, None, Refresh(), spec=str(spec), spec_digest="d")
