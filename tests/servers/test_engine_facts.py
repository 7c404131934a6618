"""One pure module per engine (specdsl/facts/engines): each imports nothing
that does I/O, and the places that used to keep their own copy of an
engine's knowledge read it from there (the adapters, validation, the GPU
rule, diagnosis), so a fact changed in the module is changed everywhere."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from specdsl.facts import ENGINES, engines
from specdsl.facts.engines import BY_NAME, QUIRKS, engine, engine_of_argv
from specdsl.model import config
from specdsl.model.gpus import WHOLE, server_need
from specdsl.servers import ADAPTERS

FOLDER = Path(engines.__file__).parent
# what an engine module may import: the standard library's pure parts, attrs,
# and the facts beside it
ALLOWED = {"__future__", "typing", "pathlib", "attrs", "specdsl.facts.client", "specdsl.facts.engines.base",
           "specdsl.facts.engines"}


@pytest.mark.parametrize("path", sorted(FOLDER.glob("*.py")), ids=lambda p: p.name)
def test_an_engine_module_imports_nothing_that_does_io(path):
    tree = ast.parse(path.read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module)
    assert imported <= ALLOWED, imported - ALLOWED


def test_every_engine_has_its_module_and_its_adapter_reads_it():
    assert set(BY_NAME) == set(ENGINES) == set(ADAPTERS)
    for name, adapter in ADAPTERS.items():
        facts = BY_NAME[name]
        assert adapter.facts is facts
        assert adapter.quirks is QUIRKS[name] is facts.quirks
        assert adapter.keyed is facts.keyed and adapter.impact is facts.impact
        assert adapter.distributions == facts.distributions
    assert engine("llama.cpp") is BY_NAME["command"]  # unknown: driven like command


def test_managed_flags_are_refused_by_validation_as_the_module_says(tmp_path):
    from specdsl.diag import Diagnostic
    from specdsl.model.values import V
    from specdsl.validate.engine_args import check_args

    for name in ("sglang", "vllm", "transformers"):
        for flag, attr in engine(name).managed.items():
            diags: list[Diagnostic] = []
            check_args(name, V({flag: V("x", None)}, None), diags)
            assert [d.summary for d in diags] == [f"`{flag}` is set by specdsl"], (name, flag)
            assert (f"`{attr}` attribute" if attr else "binds the server") in diags[0].detail


def test_a_recorded_command_line_names_its_engine():
    assert engine_of_argv(("/e/bin/python", "-m", "sglang.launch_server", "--model-path", "m")) == "sglang"
    assert engine_of_argv(("/e/bin/vllm", "serve", "m")) == "vllm"
    assert engine_of_argv(("/e/bin/transformers", "serve", "m")) == "transformers"
    assert engine_of_argv(("./serve.sh", "--port", "8000")) == "command"


def _server(engine_name, args=(), gpus=None):
    return config.Server(name="s", engine=engine_name, model="m", args=tuple(args), gpus=gpus)


def test_the_gpu_rule_is_the_engines():
    assert server_need(_server("vllm", [("tensor-parallel-size", 2), ("pipeline-parallel-size", 2)])) == 4
    assert server_need(_server("sglang", [("tp-size", 4), ("dp-size", 2), ("enable-dp-attention", True)])) == 4
    assert server_need(_server("sglang", [("tp-size", 8), ("nnodes", 2)])) == 4
    assert server_need(_server("transformers")) == 1
    assert server_need(_server("command")) is WHOLE
    assert server_need(_server("command", gpus=2)) == 2
