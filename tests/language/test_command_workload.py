"""A command workload's placeholders are checked at validate (`{prot}` is a
located error with did-you-mean), JSON braces pass, and the plan shows the
argv as it will run (secrets hidden)."""

from __future__ import annotations

import json

from specdsl.cli.main import main

SPEC = '''stack "s" { python = "3.12" }
server "m" {
  engine = "vllm"
  model  = "org/m"
}
workload "script" {
  command = [COMMAND]
  metric "output_throughput" { regex = "throughput: ([0-9.]+)" }
}
experiment "e" {
  stack    = stack.s
  server   = server.m
  workload = workload.script
  assert "fast" { output_throughput >= 10 }
}
'''


def write(tmp_path, command: str):
    spec = tmp_path / "c.spec"
    spec.write_text(SPEC.replace("COMMAND", command))
    return spec


def test_an_unknown_placeholder_is_an_error_at_it(tmp_path, capsys):
    command = '"python3", "bench.py", "--url", "http://{host}:{prot}/v1"'
    spec = write(tmp_path, command)
    assert main(["validate", "--json", str(spec)]) == 1
    (diag,) = json.loads(capsys.readouterr().out)["files"][0]["diagnostics"]
    assert diag["summary"] == "Unknown placeholder `{prot}` in `command`"
    assert diag["detail"].startswith("did you mean `port`? (placeholders: {host}, {port}, {model}, {base_url})")
    line = SPEC.splitlines().index("  command = [COMMAND]") + 1
    col = len("  command = [") + command.index("{prot}") + 1
    assert (diag["range"]["line"], diag["range"]["col"], diag["range"]["end_col"]) == (line, col, col + len("{prot}"))


def test_a_server_command_takes_its_own_placeholders(tmp_path, capsys):
    spec = tmp_path / "s.spec"
    spec.write_text(SPEC.replace("COMMAND", '"x"').replace('engine = "vllm"', 'engine  = "command"\n  command = ["srv", "--port", "{port}", "{base_url}"]'))
    assert main(["validate", str(spec)]) == 1
    err = capsys.readouterr().err
    assert "error: Unknown placeholder `{base_url}` in `command`" in err and "placeholders: {port}, {host}, {model}" in err


def test_json_braces_and_known_placeholders_pass_and_the_plan_shows_the_argv(tmp_path, capsys):
    spec = write(tmp_path, r'"python3", "bench.py", "--url", "{base_url}/v1", "--model", "{model}", "--api-key", "s3cret", "{\"n\": 1}"')
    assert main(["validate", str(spec)]) == 0
    capsys.readouterr()
    assert main(["plan", str(spec), "--no-refresh"]) == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if "benchmark.e" in ln)
    assert line.endswith("runs python3 bench.py --url 'http://127.0.0.1:{port}/v1' --model org/m --api-key '(sensitive)' "
                         """'{"n": 1}')""")
    assert "s3cret" not in out
