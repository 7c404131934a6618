"""The job description (`job.json`): a real job's plan, graph and state
survive the round trip; a file of another version, a damaged one, or one
that names a class outside the closed list is refused with one line, and
the job runner exits 2 saying why (no traceback, nothing runs)."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from specdsl.apply.slurm import job_format
from specdsl.apply.slurm.folder import DESCRIPTION, read_description
from specdsl.apply.slurm.job_format import JobFormatError
from specdsl.graph.build import build_graph
from specdsl.model import config
from specdsl.plan.diff import make_plan
from specdsl.plan.model import Refresh
from specdsl.plan.slurm import slurm_jobs
from specdsl.resolve.resolver import resolve_file
from specdsl.state.model import FORMAT_VERSION, State
from slurm_helpers import spec_text

REPO = Path(__file__).resolve().parents[2]


def _job(tmp_path: Path):
    gates = tmp_path / "gates"
    gates.mkdir()
    spec = tmp_path / "m.spec"
    spec.write_text(spec_text(gates).replace('requests   = 2', 'requests   = 2\n  input_len  = 8'))
    resolved = resolve_file(spec)
    assert resolved.ok, [d.summary for d in resolved.diags]
    graph = build_graph(resolved.config)
    plan = make_plan(graph, None, Refresh(), spec=str(spec), spec_digest="d")
    job = slurm_jobs(graph, plan)[0]
    state = State(format_version=FORMAT_VERSION, lineage="lin-1", serial=3)
    return dict(name=job.name, first=job.steps[1], steps=list(job.steps), spec_dir=str(tmp_path), env_root="/envs",
                variables={"v": "x", "n": 2}, plan=plan, graph=graph, state=state)


def _write(folder: Path, text: str) -> Path:
    folder.mkdir(exist_ok=True)
    (folder / DESCRIPTION).write_text(text)
    return folder


def test_a_real_job_round_trips(tmp_path):
    desc = _job(tmp_path)
    text = job_format.dumps(**desc)
    json.loads(text)  # plain JSON
    back = read_description(_write(tmp_path / "j", text))
    assert back["plan"] == desc["plan"]
    assert back["steps"] == desc["steps"] and back["variables"] == desc["variables"]
    assert back["state"].lineage == "lin-1" and back["state"].serial == 3
    for addr in desc["steps"]:
        mine, theirs = back["graph"].steps[addr], desc["graph"].steps[addr]
        assert mine == theirs and mine.content == theirs.content
        assert mine.payload == theirs.payload  # the config objects, equal by value
        for key, value in mine.payload.items():
            assert type(value) is type(theirs.payload[key])
    launch = next(a for a in desc["steps"] if a.startswith("launch."))
    server = back["graph"].steps[launch].payload["server"]
    assert isinstance(server, config.Server) and isinstance(server.command, tuple)
    assert server.span is not None and server.span.line > 0  # spans ride along (errors inside the job point there)


def test_another_format_version_is_named(tmp_path):
    doc = json.loads(job_format.dumps(**_job(tmp_path)))
    doc["format_version"], doc["specdsl_version"] = 7, "9.9.0"
    with pytest.raises(JobFormatError, match=r"job format 7 written by specdsl 9\.9\.0; this specdsl .* reads job "
                                             r"format 2: submit from the same specdsl"):
        read_description(_write(tmp_path / "j", json.dumps(doc)))


def test_a_pickle_is_not_read(tmp_path):
    folder = tmp_path / "j"
    folder.mkdir()
    (folder / DESCRIPTION).write_bytes(pickle.dumps({"format_version": 1}))
    with pytest.raises(JobFormatError, match="cannot read the job description|not JSON"):
        read_description(folder)


@pytest.mark.parametrize("edit, message", [
    (lambda d: d.pop("state"), "no `state` in the job description"),
    (lambda d: d.update(steps="launch.s"), "`steps` is a str, not a list"),
    (lambda d: d.update(extra=1), "unknown key `extra`"),
    (lambda d: d.update(plan={"$obj": "Popen", "fields": {"args": ["touch", "/tmp/x"]}}),
     "'Popen' is not a class a job description may name"),
    (lambda d: d.update(plan={"$obj": "Plan", "fields": {"spec": "m", "run_this": 1}}), "Plan has no field 'run_this'"),
    (lambda d: d["graph"]["steps"].pop(), "`graph.steps` are not the job's `steps`"),
    (lambda d: d.update(state="not toml ["), "`state`: .*not valid TOML"),
])
def test_a_damaged_file_says_what_is_wrong(tmp_path, edit, message):
    doc = json.loads(job_format.dumps(**_job(tmp_path)))
    edit(doc)
    with pytest.raises(JobFormatError, match=message):
        read_description(_write(tmp_path / "j", json.dumps(doc)))


def test_the_job_runner_exits_2_with_one_line(tmp_path):
    doc = json.loads(job_format.dumps(**_job(tmp_path)))
    doc["format_version"] = 1
    folder = _write(tmp_path / "j", json.dumps(doc))
    out = subprocess.run([sys.executable, "-m", "specdsl.apply.slurm.job", str(folder)], capture_output=True, text=True,
                         timeout=60, cwd=REPO)
    assert out.returncode == 2
    assert out.stderr.startswith("specdsl: ") and "job format 1" in out.stderr and "Traceback" not in out.stderr
    assert not (folder / "state").exists()  # nothing ran


def test_only_known_classes_are_written(tmp_path):
    with pytest.raises(JobFormatError, match="a .*Thing cannot go into a job description"):
        job_format.encode(type("Thing", (), {})())
