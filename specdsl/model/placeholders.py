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
WORKLOAD_COMMAND = ("host", "port", "model", "base_url")


def found(template: str) -> list[tuple[str, int]]:
    """(name, offset of its `{`) of every `{name}` in `template`."""
    return [(m[1], m.start()) for m in _PLACEHOLDER.finditer(template)]


def expand(template: str, values: Mapping[str, str]) -> str:
    """`template` with each `{name}` in `values` replaced, once."""
    return _PLACEHOLDER.sub(lambda m: str(values[m[1]]) if m[1] in values else m[0], template)


def expand_argv(argv: Sequence[str], values: Mapping[str, str]) -> list[str]:
    return [expand(str(arg), values) for arg in argv]
