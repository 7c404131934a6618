"""The rule for what is sensitive, how identities hash it, and the places
that show text a secret could be in: diagnostics (a source line, a -var),
log headers of the processes specdsl starts, `state show`."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from specdsl import secrets
from specdsl.graph.build import build_graph
from specdsl.hosts import LocalHost
from specdsl.resolve.resolver import resolve_file

TOKEN = "hf_" + "S3cretT0ken" * 3
KEY = "sk-" + "Abc123" * 6


@pytest.mark.parametrize(
    "name, sensitive",
    [("HF_TOKEN", True), ("HUGGING_FACE_HUB_TOKEN", True), ("API_KEY", True), ("OPENAI_API_KEY", True),
     ("AWS_SECRET_ACCESS_KEY", True), ("DB_PASSWORD", True), ("PGPASSWD", False), ("MY_PASSWD", True), ("KEY", True),
     ("apiKey", True), ("hf-token", True), ("api-key", True), ("admin-api-key", True), ("BASIC_AUTH", True),
     ("SESSION_COOKIE", True), ("GOOGLE_APPLICATION_CREDENTIALS", True), ("DB_PASS", True),
     ("TOKENIZERS_PARALLELISM", False), ("max-num-batched-tokens", False), ("HF_HOME", False), ("ssl-keyfile", False),
     ("CUDA_VISIBLE_DEVICES", False), ("SSH_AUTH_SOCK", False), ("tokenizer", False), ("KEYS_DIR", False)],
)
def test_the_name_rule(name, sensitive):
    assert secrets.is_sensitive_name(name) is sensitive


def write(tmp_path: Path, token: str, key: str = KEY, extra: str = "") -> Path:
    spec = tmp_path / "s.spec"
    spec.write_text(f'''
variable "pw" {{
  sensitive = true
  default   = "{key}"
}}

stack "st" {{
  python = "3.12"
  env    = {{ HF_TOKEN = "{token}", OMP_NUM_THREADS = "4" }}
  index  = ["https://user:{key}@pypi.example/simple"]
}}

server "sv" {{
  engine  = "vllm"
  model   = "m"
  args    = {{ api-key = var.pw, max-num-seqs = 8 }}
}}

workload "w" {{}}

experiment "e" {{
  stack    = stack.st
  server   = server.sv
  workload = workload.w
}}
{extra}''')
    return spec


def steps(spec: Path) -> dict:
    resolved = resolve_file(spec)
    assert resolved.ok, resolved.diags
    return build_graph(resolved.config).steps


@pytest.fixture
def key_file(tmp_path, monkeypatch):
    path = tmp_path / "k" / "identity.key"
    monkeypatch.setenv(secrets.KEY_ENV, str(path))
    return path


def test_identities_hash_secrets_with_the_users_key(tmp_path, key_file, monkeypatch):
    first = steps(write(tmp_path, TOKEN))
    again = steps(write(tmp_path, TOKEN))
    changed = steps(write(tmp_path, TOKEN + "x"))
    assert first["provision.st"].identity == again["provision.st"].identity
    assert first["provision.st"].identity != changed["provision.st"].identity
    assert first["launch.sv"].identity != changed["launch.sv"].identity  # it builds on the provision
    content = json.dumps([s.content for s in first.values()])
    for secret in (TOKEN, KEY):
        assert secret not in content and hashlib.sha256(secret.encode()).hexdigest() not in content
    assert first["provision.st"].content["stack"]["env"]["OMP_NUM_THREADS"] == "4"
    assert re.fullmatch(r"\(sensitive:[0-9a-f]{32}\)", first["provision.st"].content["stack"]["env"]["HF_TOKEN"])
    assert re.fullmatch(r"https://user:\(sensitive:[0-9a-f]{32}\)@pypi.example/simple",
                        first["provision.st"].content["stack"]["index"][0])
    assert first["launch.sv"].content["server"]["args"]["api-key"].startswith("(sensitive:")
    assert first["launch.sv"].payload["server"].args[0] == ("api-key", KEY)  # apply gets the real value
    # another user's key: the digests differ, so nothing written lets one test guesses without the key
    monkeypatch.setenv(secrets.KEY_ENV, str(tmp_path / "other.key"))
    other = steps(write(tmp_path, TOKEN))
    assert other["provision.st"].identity != first["provision.st"].identity
    assert other["preflight.local"].identity == first["preflight.local"].identity  # no secret there: as before
    assert oct(key_file.stat().st_mode & 0o777) == oct(0o600)


PAIRED = '''
experiment "c" {
  stack    = stack.st
  server   = server.sv { args = { max-num-seqs = 16 } }
  workload = workload.w
  baseline = experiment.e
  assert "f" { output_throughput >= baseline.output_throughput }
}
'''


def test_a_paired_benchmark_hashes_its_arms_secrets_too(tmp_path, key_file):
    from specdsl.plan.cost import arm_launch_identity

    alone = steps(write(tmp_path, TOKEN))
    paired = steps(write(tmp_path, TOKEN, extra=PAIRED))["benchmark.c"]
    content = json.dumps(paired.content)
    for secret in (TOKEN, KEY):
        assert secret not in content and hashlib.sha256(secret.encode()).hexdigest() not in content
    assert paired.content["arms"]["baseline"]["server"]["args"]["api-key"].startswith("(sensitive:")
    # each arm's content is what its server's own launch step would have
    assert arm_launch_identity(paired.content, "baseline") == alone["launch.sv"].identity
    changed = steps(write(tmp_path, TOKEN + "x", extra=PAIRED))["benchmark.c"]
    assert changed.identity != paired.identity  # a changed secret still changes it


def cli(*args, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "specdsl.cli.main", *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, **(env or {})))
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def test_a_diagnostic_on_a_line_with_a_secret_masks_it(tmp_path):
    spec = tmp_path / "bad.spec"
    spec.write_text(f'stack "st" {{\n  env = {{ HF_TOKEN = "{TOKEN}", N = true }}\n}}\n'
                    f'server "s" {{\n  engine = "command"\n  model = "m"\n'
                    f'  command = ["x", "--api-key", "{KEY}", 8, "--token={KEY}"]\n}}\n')
    proc = cli("validate", "bad.spec", cwd=tmp_path)
    assert proc.returncode == 1
    assert TOKEN not in proc.stderr and KEY not in proc.stderr
    lines = proc.stderr.splitlines()
    col = f'  env = {{ HF_TOKEN = "{TOKEN}", N = true }}'.index("true") + 1
    at = lines.index(f"bad.spec:2:{col}: error: `env.N` must be a string, not a bool")
    assert lines[at + 1] == '   2 |   env = { HF_TOKEN = "' + "*" * len(TOKEN) + '", N = true }'
    assert lines[at + 2].index("^") == lines[at + 1].index("true")  # the caret still points at its column
    at = next(i for i, line in enumerate(lines) if line.startswith("bad.spec:7:"))
    assert lines[at + 1] == f'   7 |   command = ["x", "--api-key", "{"*" * len(KEY)}", 8, "--token={"*" * len(KEY)}"]'
    proc = cli("validate", "--json", "bad.spec", cwd=tmp_path)
    assert TOKEN not in proc.stdout and KEY not in proc.stdout


def test_a_sensitive_variable_is_never_echoed(tmp_path):
    spec = tmp_path / "v.spec"
    spec.write_text('variable "n" {\n  sensitive = true\n  type      = "number"\n}\n'
                    'variable "hf_token" { default = "x" }\n')
    proc = cli("validate", "v.spec", "-var", f"n={KEY}", cwd=tmp_path)
    assert proc.returncode == 1 and "-var n=(sensitive): expected a number" in proc.stderr and KEY not in proc.stderr
    proc = cli("validate", "v.spec", cwd=tmp_path, env={"SPECDSL_VAR_n": KEY})
    assert "SPECDSL_VAR_n=(sensitive): expected a number" in proc.stderr and KEY not in proc.stderr
    # a variables file with a mistake on the secret's line
    (tmp_path / "vars.spec").write_text(f"hf_token = {TOKEN}\nn = 1 +\n")
    proc = cli("validate", "v.spec", "--var-file", "vars.spec", cwd=tmp_path)
    assert proc.returncode == 1 and TOKEN not in proc.stderr, proc.stderr


def test_a_saved_plan_keeps_no_sensitive_variable_and_asks_for_it(tmp_path):
    (tmp_path / "p.spec").write_text(
        'variable "key" { sensitive = true }\n\nstack "st" { python = "system" }\n\n'
        'server "s" {\n  engine  = "command"\n  model   = "m"\n  command = ["x", "{port}", "--api-key", var.key]\n}\n\n'
        'workload "w" {}\n\nexperiment "e" {\n  stack    = stack.st\n  server   = server.s\n  workload = workload.w\n}\n')
    env = {"SPECDSL_KEY_FILE": str(tmp_path / "key"), "SPECDSL_ENV_ROOT": str(tmp_path / "envs")}
    proc = cli("plan", "--no-refresh", "p.spec", "-var", f"key={KEY}", "-o", "p.plan.toml", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    saved = (tmp_path / "p.plan.toml").read_text()
    assert KEY not in saved and 'key = "(sensitive)"' in saved
    proc = cli("apply", "p.plan.toml", cwd=tmp_path, env=env)  # no value given: says where it can come from
    assert proc.returncode == 1 and "Variable `key` has no value" in proc.stderr and "SPECDSL_VAR_key" in proc.stderr
    proc = cli("show", "p.plan.toml", cwd=tmp_path, env=env)
    assert KEY not in proc.stdout
    # another value than the one planned: the plan is stale (its digest covers the value, keyed)
    proc = cli("apply", "p.plan.toml", cwd=tmp_path, env={**env, "SPECDSL_VAR_key": KEY + "2"})
    assert proc.returncode == 6 and "stale plan" in proc.stderr


def test_log_headers_leave_secrets_out_and_the_process_gets_them(tmp_path):
    code = ("import hashlib, os, sys; h = lambda s: hashlib.sha256(('got:' + s).encode()).hexdigest();"
            "print('env', h(os.environ['HF_TOKEN']), 'argv', h(sys.argv[2]), h(sys.argv[3].split('=', 1)[1]))")
    log = tmp_path / "run.log"
    result = LocalHost(env_root=tmp_path).run([sys.executable, "-c", code, "--api-key", KEY, f"--hf-token={TOKEN}", "pos"],
                                              log_path=log, timeout=30, env={"HF_TOKEN": TOKEN})
    assert result.returncode == 0
    text = log.read_text()
    header = text.splitlines()[0]
    assert header.startswith("$ ") and "--api-key '(sensitive)'" in header and "'--hf-token=(sensitive)'" in header
    assert TOKEN not in text and KEY not in text
    got = lambda s: hashlib.sha256(("got:" + s).encode()).hexdigest()  # noqa: E731
    assert f"env {got(TOKEN)} argv {got(KEY)} {got(TOKEN)}" in text


def test_what_apply_prints_of_a_failing_server_leaves_its_secret_out(tmp_path):
    (tmp_path / "f.spec").write_text(
        'stack "st" { python = "system" }\n\n'
        'server "s" {\n  engine        = "command"\n  model         = "m"\n'
        '  command       = ["python", "-c", "import os; print(\'my key is\', os.environ[\'API_KEY\']); raise SystemExit(3)", "{port}"]\n'
        f'  env           = {{ API_KEY = "{KEY}" }}\n  ready_timeout = 20s\n}}\n\n'
        'workload "w" {}\n\nexperiment "e" {\n  stack    = stack.st\n  server   = server.s\n  workload = workload.w\n}\n')
    env = {"SPECDSL_KEY_FILE": str(tmp_path / "key"), "SPECDSL_ENV_ROOT": str(tmp_path / "envs")}
    proc = cli("apply", "f.spec", "--yes", cwd=tmp_path, env=env)
    assert proc.returncode == 5, proc.stdout + proc.stderr
    printed = proc.stdout + proc.stderr
    assert "my key is (sensitive)" in printed  # the server's last lines are shown, its secret is not
    assert KEY not in printed


def test_plan_reasons_name_a_sensitive_change_and_never_show_it(key_file):
    from specdsl.plan.diff import describe, field_changes

    a, b = secrets.marker(TOKEN), secrets.marker(TOKEN + "x")
    before = {"server": {"env": {"HF_TOKEN": a, "N": "1"}, "command": ["srv", "--api-key", a, "--x", "1"]}}
    after = {"server": {"env": {"HF_TOKEN": b, "N": "2"}, "command": ["srv", "--api-key", b, "--x", "2"]}}
    reason = describe(field_changes(before, after), {})
    assert reason == ('command: (sensitive value changed) +"2" -"1", env.HF_TOKEN: (sensitive value changed), '
                      'env.N: "1" -> "2"')
    added = describe(field_changes({"stack": {"env": {"N": "1"}}}, {"stack": {"env": {"N": "1", "HF_TOKEN": a}}}), {})
    assert added == 'env.HF_TOKEN: (none) -> "(sensitive)"'
