"""`specdsl apply` on an ssh host (a real sshd on loopback): hostile values
in the model name, flags, env and a command workload's arguments arrive
unchanged and run nothing; the server runs on the host, detached, and is
stopped there at the end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from specdsl.hosts.registry import SSH_CONFIG_ENV
from sshd import processes_mentioning
from specdsl.state import load_state

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
# No braces (they are placeholders) and no `${`: the rest is fair game.
VALUES = ["two words", "it's \"q\"", "$(touch {canary}/dollar)", "`touch {canary}/tick`", "; touch {canary}/semi",
          "a\nb; touch {canary}/nl", "ünïcødé €✓", "*", "back\\slash", "--x=$(id)", "'; touch {canary}/quote; '"]


# a command workload: records its arguments, prints {"v": 1} (no braces in the spec: they are placeholders)
SCRIPT = "import json,sys; json.dump(sys.argv[1:], open(sys.argv[1], 'w')); print(chr(123) + '\"v\": 1' + chr(125))"


def lit(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def apply_env(sshd) -> dict[str, str]:
    env = dict(os.environ)
    env[SSH_CONFIG_ENV] = str(sshd.config)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def specdsl(*args, cwd, env, timeout=300):
    return subprocess.run([sys.executable, "-m", "specdsl.cli.main", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_apply_over_ssh_passes_hostile_values_unchanged(sshd, tmp_path):
    canary = tmp_path / "canary"
    canary.mkdir()
    values = [v.replace("{canary}", str(canary)) for v in VALUES]
    model, flag, env_value, arg = values[2], values[0] + values[5], "\n".join(values), values[3] + values[10]
    record = tmp_path / "record.json"
    workdir = tmp_path / "workdir"
    script_out = tmp_path / "script.json"
    (tmp_path / "e.spec").write_text(f'''
host "loop" {{
  ssh     = "specdsl-test"
  workdir = {lit(str(workdir))}
}}
stack "sys" {{
  python = "system"
}}
server "s" {{
  engine        = "command"
  model         = {lit(model)}
  command       = ["python3", {lit(str(HERE / "recording_server.py"))}, {lit(str(record))}, "{{port}}", "{{model}}"]
  args          = {{ hostile-flag = {lit(flag)} }}
  env           = {{ SPECDSL_HOSTILE = {lit(env_value)} }}
  ready_timeout = 60s
}}
workload "w" {{
  requests   = 2
  output_len = 4
}}
workload "script" {{
  command = ["python3", "-c", {lit(SCRIPT)},
             {lit(str(script_out))}, "{{model}}", {lit(arg)}]
  metric "v" {{ json = "v" }}
}}
experiment "e" {{
  host     = host.loop
  stack    = stack.sys
  server   = server.s
  workload = workload.w
}}
experiment "cmd" {{
  host     = host.loop
  stack    = stack.sys
  server   = server.s
  workload = workload.script
}}
''')
    env = apply_env(sshd)
    done = specdsl("apply", "e.spec", "--yes", cwd=tmp_path, env=env)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    got = json.loads(record.read_text(encoding="utf-8"))
    assert got["argv"] == [model, "--hostile-flag", flag]
    assert got["env"] == env_value
    assert json.loads(script_out.read_text(encoding="utf-8")) == [str(script_out), model, arg]
    assert list(canary.iterdir()) == [], "a value was run as a command"
    state = load_state(tmp_path / ".specdsl")
    assert {e.host for e in state.environments} == {"ssh:specdsl-test"}
    assert all(e.path.startswith(str(workdir / "envs")) for e in state.environments)
    assert not state.servers
    # the runs' logs came back from the host
    bench = next(r for r in state.runs if r.step == "benchmark.e" and r.status == "completed")
    assert (tmp_path / ".specdsl" / bench.folder / "result.json").exists()
    # the server's log stays on the host, under the workdir (brought back when a launch fails)
    logs = list((workdir / "runs").glob("*/server.log"))
    assert logs and "$ " in logs[0].read_text(encoding="utf-8")
    # nothing of the servers is left on the host, and no master connection is left here
    assert processes_mentioning(str(record)) == []
    assert [p for p in processes_mentioning("specdsl-ssh-") if " -M " in p] == []
    # a plan now: everything there, by identity
    plan = specdsl("plan", "e.spec", "--detailed-exitcode", cwd=tmp_path, env=env)
    assert plan.returncode == 0, plan.stdout + plan.stderr


def test_apply_to_an_unreachable_host_fails_its_preflight_clearly(sshd, tmp_path):
    (tmp_path / "e.spec").write_text('''
host "gpu8" {
  ssh = "specdsl-badkey"
}
stack "sys" {
  python = "system"
}
server "s" {
  engine  = "command"
  model   = "m"
  command = ["python3", "-m", "http.server", "{port}"]
}
workload "w" {
  requests = 1
}
experiment "e" {
  host     = host.gpu8
  stack    = stack.sys
  server   = server.s
  workload = workload.w
}
''')
    env = apply_env(sshd)
    # the refresh before the plan cannot reach it: an error before anything ran, naming the host and the cause
    done = specdsl("apply", "e.spec", "--yes", cwd=tmp_path, env=env, timeout=120)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "specdsl: error: cannot refresh: host gpu8 (specdsl-badkey): connecting: the host refused the key" in out, out
    # planned offline, the host's preflight is what fails
    done = specdsl("apply", "e.spec", "--yes", "--no-refresh", cwd=tmp_path, env=env, timeout=120)
    out = done.stdout + done.stderr
    assert done.returncode == 5, out
    assert "preflight.gpu8" in out and "host gpu8 (specdsl-badkey): connecting: the host refused the key" in out, out
    assert "Traceback" not in out
