"""Server args (flag-without-dashes, value) pairs as command-line flags.

True is a bare flag; False leaves the flag out, except for a paired boolean
of the flag table (`enable-prefix-caching` / `no-enable-prefix-caching`),
where False writes the negation, because leaving it out keeps a default of
True. A list value follows the flag table: one flag with several values for
`nargs` options (`--flag a b`), the flag repeated otherwise. A mapping
becomes JSON.
"""

from __future__ import annotations

import json
from typing import Any

from specdsl.facts import engine_flags


def render_args(engine: str, args) -> list[str]:
    """The flags of `args` (pairs or dict) for `engine`, in the given order."""
    flags = engine_flags(engine)
    items = args.items() if isinstance(args, dict) else args
    out: list[str] = []
    for key, value in items:
        name = str(key).lstrip("-")
        info = flags.get(name)
        if value is True:
            out.append(f"--{name}")
        elif value is False:
            if info is not None and info.negation and name != info.negation:
                out.append(f"--{info.negation}")
        elif value is None:
            continue
        elif _is_mapping(value):
            out += [f"--{name}", json.dumps(_as_dict(value), sort_keys=True)]
        elif isinstance(value, (list, tuple)):
            values = [_scalar(v) for v in value]
            if info is not None and info.type == "list":
                out += [f"--{name}", *values]
            else:
                for v in values:
                    out += [f"--{name}", v]
        else:
            out += [f"--{name}", _scalar(value)]
    return out


def asked_config(engine: str, args) -> dict[str, Any]:
    """The spec's args under the engine's dest names (what we asked for)."""
    flags = engine_flags(engine)
    config: dict[str, Any] = {}
    for key, value in args:
        name = key.lstrip("-")
        info = flags.get(name)
        config[info.dest if info else name.replace("-", "_")] = value
    return config


def _is_mapping(value: Any) -> bool:
    if isinstance(value, dict):
        return True
    # model.config freezes a mapping as a tuple of (str, value) pairs
    return bool(value) and isinstance(value, tuple) and all(isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str) for p in value)


def _as_dict(value: Any) -> Any:
    if _is_mapping(value):
        items = value.items() if isinstance(value, dict) else value
        return {k: _as_dict(v) for k, v in items}
    if isinstance(value, tuple):
        return [_as_dict(v) for v in value]
    return value


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
