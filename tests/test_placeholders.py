"""`{name}` placeholders: one pass, known names only."""

from specdsl.model.placeholders import expand, expand_argv


def test_known_names_replaced_once_and_other_braces_kept():
    values = {"port": "8000", "model": "{port}"}
    assert expand("--port={port}", values) == "--port=8000"
    assert expand("{model}", values) == "{port}"  # the value is not expanded again
    assert expand('{"max_tokens": 8}', values) == '{"max_tokens": 8}'
    assert expand("{{port}}", values) == "{8000}"
    assert expand_argv(["a{port}", "{nope}"], values) == ["a8000", "{nope}"]
