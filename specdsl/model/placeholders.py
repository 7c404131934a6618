"""`{name}` placeholders in argv templates (a `command` server, a command
workload), expanded in one pass and in one place.

Only the known names are replaced; every other brace is left as written, and
a value that itself contains `{port}` is not expanded again (one pass over
the template, never over the result). JSON arguments such as
`{"max_tokens": 8}` therefore pass through untouched.
"""

from __future__ import annotations

import re
from typing import Mapping, Sequence

_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")

# What each argv template may use (validate checks them: `{prot}` is an error).
SERVER_COMMAND = ("port", "host", "model")
# A command workload also names the stack's environment, so that the
# engine's own client runs from the stack under test (`{python} -m
# sglang.bench_serving`, `{bin}/vllm bench serve`): `{python}` its
# interpreter, `{bin}` the folder of its console scripts; and
# `{result_file}`, a fresh path per run that the command writes its results
# to and specdsl reads them from (specdsl.bench.command).
STACK_ENV = ("python", "bin")
RESULT_FILE = "result_file"
WORKLOAD_COMMAND = ("host", "port", "model", "base_url", *STACK_ENV, RESULT_FILE)


def uses(argv: Sequence[str], names: Sequence[str] | str) -> bool:
    """Whether any `{name}` of `names` is in the argv."""
    wanted = (names,) if isinstance(names, str) else tuple(names)
    return any(name in wanted for arg in argv for name, _ in found(str(arg)))


def found(template: str) -> list[tuple[str, int]]:
    """(name, offset of its `{`) of every `{name}` in `template`."""
    return [(m[1], m.start()) for m in _PLACEHOLDER.finditer(template)]


def expand(template: str, values: Mapping[str, str]) -> str:
    """`template` with each `{name}` in `values` replaced, once."""
    return _PLACEHOLDER.sub(lambda m: str(values[m[1]]) if m[1] in values else m[0], template)


def expand_argv(argv: Sequence[str], values: Mapping[str, str]) -> list[str]:
    return [expand(str(arg), values) for arg in argv]
