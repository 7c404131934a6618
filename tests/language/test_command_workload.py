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
    assert diag["detail"] == ("did you mean `port`? (placeholders: {host}, {port}, {model}, {base_url}, {python}, {bin}, "
                              "{result_file})")
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
    (tmp_path / "bench.py").write_text("")  # plan checks that the script is there
    assert main(["validate", str(spec)]) == 0
    capsys.readouterr()
    assert main(["plan", str(spec), "--no-refresh"]) == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if "benchmark.e" in ln)
    assert line.endswith("runs python3 bench.py --url 'http://127.0.0.1:{port}/v1' --model org/m --api-key '(sensitive)' "
                         """'{"n": 1}')""")
    assert "s3cret" not in out


ENGINE_CLIENT = '''stack "s" { python = "3.12" }
server "m" {
  engine = "vllm"
  model  = "org/m"
}
workload "client" {
  command = [COMMAND]
  metrics = PRESET
}
experiment "e" {
  stack    = stack.s
  server   = server.m
  workload = workload.client
  assert "fast" { output_throughput >= 10 }
}
'''


def _client_spec(tmp_path, command: str, preset: str = '"vllm-bench-serve"'):
    spec = tmp_path / "client.spec"
    spec.write_text(ENGINE_CLIENT.replace("COMMAND", command).replace("PRESET", preset))
    return spec


def _diags(capsys, spec):
    main(["validate", "--json", str(spec)])
    return json.loads(capsys.readouterr().out)["files"][0]["diagnostics"]


VLLM = '"{bin}/vllm", "bench", "serve", "--base-url", "{base_url}", "--save-result", "--result-filename", "{result_file}"'


def test_the_engine_client_recipe_validates_with_the_stack_placeholders(tmp_path, capsys):
    assert _diags(capsys, _client_spec(tmp_path, VLLM)) == []
    sglang = '"{python}", "-m", "sglang.bench_serving", "--base-url", "{base_url}", "--output-file", "{result_file}"'
    assert _diags(capsys, _client_spec(tmp_path, sglang, '"sglang-bench-serving"')) == []


def test_an_unknown_preset_is_an_error_at_its_value_with_did_you_mean(tmp_path, capsys):
    (diag,) = _diags(capsys, _client_spec(tmp_path, VLLM, '"vllm-bench"'))
    assert diag["severity"] == "error" and diag["summary"] == 'Unknown metrics preset "vllm-bench"'
    assert diag["detail"] == 'did you mean `vllm-bench-serve`? (presets: "sglang-bench-serving", "vllm-bench-serve")'
    line = ENGINE_CLIENT.splitlines().index("  metrics = PRESET") + 1
    assert (diag["range"]["line"], diag["range"]["col"]) == (line, len("  metrics = ") + 1)


def test_a_preset_needs_the_result_file_and_warns_of_an_option_left_out(tmp_path, capsys):
    (diag,) = _diags(capsys, _client_spec(tmp_path, '"{bin}/vllm", "bench", "serve", "--save-result"'))
    assert diag["severity"] == "error"
    assert diag["summary"] == "The `vllm-bench-serve` metrics read the result file, but `command` does not name `{result_file}`"
    assert "`--save-result --result-filename {result_file}`" in diag["detail"]
    assert diag["range"]["line"] == ENGINE_CLIENT.splitlines().index("  command = [COMMAND]") + 1
    (warn,) = _diags(capsys, _client_spec(tmp_path, VLLM.replace('"--save-result", ', "")))
    assert warn["severity"] == "warning" and warn["summary"] == "`command` does not pass `--save-result`"


def test_a_preset_needs_a_command_and_a_command_needs_metrics(tmp_path, capsys):
    spec = tmp_path / "x.spec"
    spec.write_text(ENGINE_CLIENT.replace("  command = [COMMAND]\n", "").replace("PRESET", '"vllm-bench-serve"'))
    (diag,) = _diags(capsys, spec)
    assert diag["summary"] == "`metrics` needs `command`"
    spec.write_text(ENGINE_CLIENT.replace("COMMAND", VLLM).replace("  metrics = PRESET\n", ""))
    (diag,) = _diags(capsys, spec)
    assert diag["summary"] == "A workload that runs a command needs at least one `metric` block"
    assert 'metrics = "vllm-bench-serve"' in diag["detail"]


def test_plan_reports_a_missing_script_at_it_and_takes_the_spec_folder_as_the_base(tmp_path, capsys, monkeypatch):
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    (elsewhere / "bench.py").write_text("")  # in the working directory only: not the spec's
    command = '"python3", "bench.py", "--url", "{base_url}"'
    spec = write(project, command)
    assert main(["plan", str(spec), "--no-refresh", "--state", str(tmp_path / "st")]) == 1
    err = capsys.readouterr().err
    line = SPEC.splitlines().index("  command = [COMMAND]") + 1
    col = len("  command = [") + command.index('"bench.py"') + 1
    assert f"c.spec:{line}:{col}: error: Workload `script`: its command names `bench.py`, which is not there" in err
    assert f"looked for {project / 'bench.py'}" in err and "nothing was started" in err
    (project / "bench.py").write_text("")
    assert main(["plan", str(spec), "--no-refresh", "--state", str(tmp_path / "st")]) == 0
    capsys.readouterr()
    # a path written as one (`./tools/run`) is checked too; options and absolute paths are not the spec folder's
    spec = write(project, '"./tools/run", "--out=x.py", "/opt/bench/run.py", "-m", "pkg.mod"')
    assert main(["plan", str(spec), "--no-refresh", "--state", str(tmp_path / "st")]) == 1
    err = capsys.readouterr().err
    assert "its command names `./tools/run`, which is not there" in err
    assert err.count(": error: ") == 1 and "\n1 error" in err
