"""`plan` shows the files a Slurm-through-login-node apply will copy (pure:
no login node is asked): per host, each local file the jobs name, its
size and SHA-256, and its copy's path under `slurm.workdir/files/`, as
apply's `slurm_files.stage` names it; a file missing here is an error at
the block that names it, as apply's preflight finds it."""

from __future__ import annotations

import hashlib
import json
import textwrap
from pathlib import Path

import pytest

from specdsl.apply.slurm import files as slurm_files
from specdsl.cli.main import main
from specdsl.graph.build import build_graph
from specdsl.plan.diff import make_plan
from specdsl.plan.files import job_files, planned_copies
from specdsl.plan.model import Refresh
from specdsl.plan.slurm import slurm_jobs
from specdsl.resolve.resolver import resolve_file


def spec(ssh: bool = True, script: str = "./bench.py") -> str:
    login = '  ssh   = "me@login"\n' if ssh else ""
    return login.join(['host "cluster" {\n', textwrap.dedent(f'''\
          slurm = {{ partition = "debug", workdir = "/shared/me/specdsl" }}
        }}
        stack "sys" {{
          python     = "system"
          find_links = ["wheels"]
        }}
        server "s" {{
          engine  = "command"
          model   = "m"
          command = ["python3", "{script}", "{{port}}"]
        }}
        workload "w" {{
          dataset  = "jsonl:data/p.jsonl"
          requests = 2
        }}
        experiment "e" {{
          host     = host.cluster
          stack    = stack.sys
          server   = server.s {{ env = {{ CELL = matrix.c }} }}
          workload = workload.w
          matrix   = {{ c = [1, 2] }}
        }}
    ''')])


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "p.jsonl").write_text('{"prompt": "hi"}\n')
    (tmp_path / "bench.py").write_text("print(1)\n")
    (tmp_path / "wheels").mkdir()
    (tmp_path / "wheels" / "a-1-py3-none-any.whl").write_bytes(b"PK\3\4")
    (tmp_path / "m.spec").write_text(spec())
    return tmp_path


def plan_json(folder: Path, capsys) -> dict:
    assert main(["plan", "--no-refresh", str(folder / "m.spec"), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_plan_lists_each_file_once_with_its_size_digest_and_copy(folder, capsys):
    assert main(["plan", "--no-refresh", str(folder / "m.spec")]) == 0
    text = capsys.readouterr().out
    digest = hashlib.sha256(b'{"prompt": "hi"}\n').hexdigest()
    assert ("Files copied to the login node me@login of host cluster unless already there (plan does not ask the "
            "login node with --no-refresh), under /shared/me/specdsl/files/:") in text
    assert (f"  + data/p.jsonl (dataset of workload w): 17 B, sha256 {digest[:12]} -> "
            f"files/{digest[:32]}-p.jsonl/p.jsonl") in text
    assert "  + ./bench.py (command of server s): 9 B" in text and "  + wheels (find_links of stack sys): 4 B" in text
    section = text.split("Files copied to the login node", 1)[1]
    assert section.count("\n  + ") == 3  # two jobs (a matrix of 2) name each file: one copy each
    doc = plan_json(folder, capsys)
    rows = {r["path"]: r for r in doc["login_node_files"]}
    assert sorted(rows) == ["./bench.py", "data/p.jsonl", "wheels"]
    assert rows["data/p.jsonl"] == {
        "host": "cluster", "ssh": "me@login", "path": "data/p.jsonl", "setting": "dataset of workload w",
        "bytes": 17, "sha256": digest, "copy": f"/shared/me/specdsl/files/{digest[:32]}-p.jsonl/p.jsonl",
        "status": "copied unless already there"}


def test_the_plans_copies_are_the_ones_apply_makes(folder):
    """The copy paths plan shows are those `slurm_files.stage` puts: the same
    files found, the same digest, the same folder per content."""
    resolved = resolve_file(folder / "m.spec")
    graph = build_graph(resolved.config, spec_dir=folder)
    plan = make_plan(graph, None, Refresh(), spec="m.spec", spec_digest="d")
    jobs = slurm_jobs(graph, plan)
    copies = planned_copies(graph, jobs, folder)
    files = job_files(graph, jobs, "cluster", folder)
    assert {c.file.path.resolve() for c in copies} == {f.path.resolve() for f in files}
    for c in copies:
        digest = slurm_files.content_digest(c.file.path.resolve())
        assert c.digest == digest and c.copy == f"files/{digest[:32]}-{c.file.path.name}/{c.file.path.name}"


def test_a_changed_file_is_a_new_copy(folder, capsys):
    before = {r["path"]: r["copy"] for r in plan_json(folder, capsys)["login_node_files"]}
    (folder / "data" / "p.jsonl").write_text('{"prompt": "changed"}\n')
    after = {r["path"]: r["copy"] for r in plan_json(folder, capsys)["login_node_files"]}
    assert after["data/p.jsonl"] != before["data/p.jsonl"] and after["wheels"] == before["wheels"]


def test_a_file_missing_here_is_a_located_error(folder, capsys):
    (folder / "m.spec").write_text(spec(script="./no-such.py"))
    out = folder / "x.plan"
    assert main(["plan", "--no-refresh", str(folder / "m.spec"), "-o", str(out)]) == 1
    err = capsys.readouterr()
    assert "m.spec:9:1: error: Command of server s: a file to copy to the login node is missing" in err.err, err.err
    assert "./no-such.py is not on this machine" in err.err and err.out == "" and not out.exists()


def test_no_section_without_a_login_node(folder, capsys):
    """Submitted from this machine, the nodes see the spec's folder: nothing is copied."""
    (folder / "m.spec").write_text(spec(ssh=False))
    assert main(["plan", "--no-refresh", str(folder / "m.spec")]) == 0
    assert "Files copied" not in capsys.readouterr().out
    assert "login_node_files" not in plan_json(folder, capsys)


def test_a_login_node_not_reached_leaves_the_copies_unasked(folder, tmp_path, monkeypatch, capsys):
    """Refreshing, plan asks the login node; one that refuses the connection
    is a refresh failure that names it: with nothing recorded there the plan
    stands, saying so once (the cluster's own question is not a second,
    error), its copies "copied unless already there" with why; planned
    offline, the same copies without asking."""
    config = tmp_path / "ssh_config"
    config.write_text("Host login\n  HostName 127.0.0.1\n  Port 1\n  ConnectTimeout 5\n")
    monkeypatch.setenv("SPECDSL_SSH_CONFIG", str(config))
    assert main(["plan", str(folder / "m.spec")]) == 0
    out, err = capsys.readouterr()
    assert err.count("warning: cannot refresh: host cluster (me@login): connecting: connection refused") == 1, err
    assert "error" not in err
    assert ("Files copied to the login node me@login of host cluster unless already there (the login node was not "
            "reached: ") in out and "(will copy)" not in out and "(already there)" not in out
    assert main(["plan", str(folder / "m.spec"), "--no-refresh"]) == 0
    text = capsys.readouterr().out
    assert ("Files copied to the login node me@login of host cluster unless already there "
            "(plan does not ask the login node with --no-refresh") in text
    assert "(will copy)" not in text and "(already there)" not in text


def test_command_scripts_are_paths_of_the_spec_folder_and_names_stay_names(tmp_path):
    from specdsl.plan.files import command_scripts

    (tmp_path / "bench").mkdir()  # a folder named as a subcommand: `bench` stays a word
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "run").write_text("")
    argv = ["{bin}/vllm", "bench", "serve", "run.py", "./go.sh", "../up/x", "tools/run", "org/model", "--out=x.py",
            "-m", "pkg.mod", "/opt/abs.py", "sub/missing"]
    found = [(i, w) for i, w, _ in command_scripts(argv, tmp_path)]
    assert found == [(3, "run.py"), (4, "./go.sh"), (5, "../up/x"), (6, "tools/run")]
    assert [p for *_, p in command_scripts(["run.py"], tmp_path)] == [tmp_path / "run.py"]
