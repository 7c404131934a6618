"""Secrets in a spec reach the processes that need them and nothing else.

A real `specdsl` in subprocesses, real files, a real (stdlib) server: a
stack's `HF_TOKEN`, a server's `API_KEY` and an `--api-key` flag fed by a
`sensitive` variable are planned, saved in a plan, applied (from the saved
plan and from the spec), changed and shown; the server proves it received
each value unchanged by printing its SHA-256, and then every file under the
state folder, the environment root, the plans and the stack locks, and
everything printed, is searched for each value (and for its bare SHA-256,
which a short token could be brute-forced from)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

HF_TOKEN = "hf_" + "Tok3nValue" * 3
HF_TOKEN_2 = "hf_" + "Other3Value" * 3
API_KEY = "sk-server-" + "K3y" * 8
FLAG_KEY = "sk-flag-" + "Fl4g" * 6

SERVER = textwrap.dedent('''
    import hashlib, http.server, json, os, sys

    def digest(text):  # salted: the bare SHA-256 of a secret must appear nowhere
        return hashlib.sha256(("received:" + text).encode()).hexdigest()

    port = int(sys.argv[1])
    flag = sys.argv[sys.argv.index("--api-key") + 1]
    print("received", json.dumps({"HF_TOKEN": digest(os.environ.get("HF_TOKEN", "")),
                                  "API_KEY": digest(os.environ.get("API_KEY", "")),
                                  "--api-key": digest(flag)}), flush=True)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.reply({"data": [{"id": "m"}]})

        def do_POST(self):
            self.rfile.read(int(self.headers.get("content-length", 0)))
            self.reply({"choices": [{"text": "x"}], "usage": {"prompt_tokens": 1, "completion_tokens": 1}})

        def reply(self, doc):
            body = json.dumps(doc).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    http.server.HTTPServer(("127.0.0.1", port), Handler).serve_forever()
''')


def spec_text(hf_token: str) -> str:
    return textwrap.dedent(f'''
        variable "key" {{
          sensitive = true
        }}

        stack "sys" {{
          python = "system"
          env    = {{ HF_TOKEN = "{hf_token}", TOKENIZERS_PARALLELISM = "false" }}
        }}

        server "s" {{
          engine        = "command"
          model         = "m"
          command       = ["{sys.executable}", "server.py", "{{port}}", "--api-key", var.key]
          env           = {{ API_KEY = "{API_KEY}" }}
          ready_timeout = 60s
        }}

        workload "w" {{
          command = ["{sys.executable}", "-c", "print('tput: 7')"]
          runs    = 2
          metric "tput" {{ regex = "tput: (\\\\d+)" }}
        }}

        experiment "e" {{
          stack    = stack.sys
          server   = server.s
          workload = workload.w
          assert "ran" {{ tput >= 1 }}
          promote  = "prod"
        }}
    ''')


class Project:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.env_root = root / "envs"
        self.key_file = root / "config" / "specdsl" / "identity.key"
        self.outputs: list[str] = []
        (root / "server.py").write_text(SERVER)
        self.write_spec(HF_TOKEN)

    def write_spec(self, hf_token: str) -> None:
        (self.root / "s.spec").write_text(spec_text(hf_token))

    def run(self, *args, env: dict | None = None, code: int | None = 0) -> subprocess.CompletedProcess:
        environ = {k: v for k, v in os.environ.items() if not k.startswith("SPECDSL_VAR_")}
        environ.update(SPECDSL_ENV_ROOT=str(self.env_root), SPECDSL_KEY_FILE=str(self.key_file), **(env or {}))
        previous = os.umask(0)  # the most permissive: no mode may come from it
        try:
            proc = subprocess.run([sys.executable, "-m", "specdsl.cli.main", *map(str, args)], cwd=self.root,
                                  capture_output=True, text=True, timeout=300, env=environ)
        finally:
            os.umask(previous)
        self.outputs += [proc.stdout, proc.stderr]
        assert "Traceback" not in proc.stderr, proc.stderr
        if code is not None:
            assert proc.returncode == code, proc.stdout + proc.stderr
        return proc

    def written(self) -> list[Path]:
        """Every file specdsl wrote: state, runs, plans, stack locks, environment records."""
        roots = [self.root / ".specdsl", self.root / "plans", self.root / "stacks"]
        files = [p for r in roots for p in r.rglob("*") if p.is_file()]
        for folder in self.env_root.iterdir():
            if folder.is_dir():
                files += [p for p in folder.rglob("*") if p.is_file() and "venv" not in p.relative_to(folder).parts]
            else:
                files.append(folder)
        return files


def received(project: Project) -> list[dict]:
    logs = sorted((project.root / ".specdsl" / "runs").glob("*/server.log"))
    return [json.loads(m.group(1)) for log in logs for m in re.finditer(r"^received (.*)$", log.read_text(), re.M)]


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def proof(text: str) -> str:
    """What the server prints for a value it received."""
    return sha("received:" + text)


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Project:
    project = Project(tmp_path_factory.mktemp("secrets"))
    project.run("validate", "s.spec", "-var", f"key={FLAG_KEY}")
    plan = project.run("plan", "s.spec", "-var", f"key={FLAG_KEY}", "-o", "plans/first.plan.toml")
    assert "Saved the plan" in plan.stdout
    # the saved plan keeps no secret: the sensitive variable comes from the environment
    project.run("apply", "plans/first.plan.toml", env={"SPECDSL_VAR_key": FLAG_KEY})
    for addr in project.run("state", "list", "--state", ".specdsl").stdout.split():
        project.run("state", "show", addr, "--state", ".specdsl")
    project.write_spec(HF_TOKEN_2)
    project.changed_plan = project.run("plan", "s.spec", "-var", f"key={FLAG_KEY}", "--no-refresh")
    project.changed_json = project.run("plan", "s.spec", "-var", f"key={FLAG_KEY}", "--no-refresh", "--json")
    project.run("apply", "s.spec", "--yes", "-var", f"key={FLAG_KEY}")
    project.run("show", "plans/first.plan.toml")
    project.run("show", "plans/first.plan.toml", "--json")
    return project


def test_every_process_received_every_secret_unchanged(project):
    got = received(project)
    assert [g["HF_TOKEN"] for g in got] == [proof(HF_TOKEN), proof(HF_TOKEN_2)]  # a stack's env, as written, each time
    assert {g["API_KEY"] for g in got} == {proof(API_KEY)}
    assert {g["--api-key"] for g in got} == {proof(FLAG_KEY)}  # from SPECDSL_VAR_key, then from -var


def test_no_secret_in_any_file_or_output(project):
    files = project.written()
    names = {p.name for p in files}
    assert {"state.toml", "state.toml.backup", "first.plan.toml", "prod.lock.toml", "specdsl-env.json", "server.log"} <= names
    needles = {}
    for secret in (HF_TOKEN, HF_TOKEN_2, API_KEY, FLAG_KEY):
        needles[secret] = secret
        needles[f"sha256({secret[:6]}...)"] = sha(secret)  # a bare digest could be brute-forced: never written
    for path in files:
        data = path.read_bytes().decode("utf-8", "replace")
        for what, needle in needles.items():
            assert needle not in data, f"{what} in {path}"
    printed = "\n".join(project.outputs)
    for what, needle in needles.items():
        assert needle not in printed, f"{what} printed"


def test_changed_secret_changes_identities_and_says_so(project):
    text = project.changed_plan.stdout
    assert "-/+ provision.sys    (env.HF_TOKEN: (sensitive value changed))" in text
    assert "-/+ launch.s" in text
    doc = json.loads(project.changed_json.stdout)
    change = next(c for c in doc["changes"] if c["addr"] == "provision.sys")
    assert change["fields"] == [{"path": "env.HF_TOKEN", "before": "(sensitive)", "after": "(sensitive)"}]
    assert doc["variables"] == {"key": "(sensitive)"}


def test_records_say_where_secrets_were(project):
    lock = (project.root / "stacks" / "prod.lock.toml").read_text()
    assert 'HF_TOKEN = "(sensitive)"' in lock and 'API_KEY = "(sensitive)"' in lock
    assert '"--api-key",\n    "(sensitive)",' in lock  # the argv that passed, its secret left out
    assert 'TOKENIZERS_PARALLELISM = "false"' in lock  # not every name with TOKEN in it
    marker = json.loads(next(project.env_root.glob("*/specdsl-env.json")).read_text())
    assert marker["record"]["env"]["HF_TOKEN"] == "(sensitive)"
    stack_env = dict(marker["stack"]["env"])
    assert re.fullmatch(r"\(sensitive:[0-9a-f]{32}\)", stack_env["HF_TOKEN"])  # a keyed digest: reuse still compares
    header = next(line for line in (next((project.root / ".specdsl" / "runs").glob("*/server.log"))).read_text().splitlines()
                  if line.startswith("$ "))
    assert header.endswith("--api-key '(sensitive)'")


def test_everything_written_is_the_owners_only(project):
    for path in project.written() + [project.key_file]:
        assert oct(path.stat().st_mode & 0o777) == oct(0o600), path
    folders = {p.parent for p in project.written()} | {project.root / ".specdsl", project.root / ".specdsl" / "runs",
                                                        project.key_file.parent}
    for folder in folders:
        assert oct(folder.stat().st_mode & 0o777) == oct(0o700), folder


def test_reapplying_the_same_secret_reuses_the_environment(project):
    proc = project.run("plan", "s.spec", "-var", f"key={FLAG_KEY}")
    assert "provision.sys" not in proc.stdout or "= provision.sys" in proc.stdout
    assert "No changes." in proc.stdout, proc.stdout
