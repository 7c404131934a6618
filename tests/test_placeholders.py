"""`{name}` placeholders: one pass, known names only."""

from specdsl.model.placeholders import expand, expand_argv


def test_known_names_replaced_once_and_other_braces_kept():
    values = {"port": "8000", "model": "{port}"}
    assert expand("--port={port}", values) == "--port=8000"
    assert expand("{model}", values) == "{port}"  # the value is not expanded again
    assert expand('{"max_tokens": 8}', values) == '{"max_tokens": 8}'
    assert expand("{{port}}", values) == "{8000}"
    assert expand_argv(["a{port}", "{nope}"], values) == ["a8000", "{nope}"]


def test_a_workload_names_the_stack_environment_and_its_result_file():
    from specdsl.model.placeholders import WORKLOAD_COMMAND, uses

    assert {"python", "bin", "result_file"} <= set(WORKLOAD_COMMAND)
    argv = ["{python}", "-m", "x", "--out={result_file}", '{"a": 1}']
    values = {"python": "/env/bin/python", "bin": "/env/bin", "result_file": "/run/r.json"}
    assert expand_argv(argv, values) == ["/env/bin/python", "-m", "x", "--out=/run/r.json", '{"a": 1}']
    assert expand("{bin}/vllm", values) == "/env/bin/vllm"
    assert uses(argv, "result_file") and uses(argv, ("bin", "python")) and not uses(argv, "bin")
    assert not uses(['{"result_file": 1}'], "result_file")  # a JSON key is not a placeholder
