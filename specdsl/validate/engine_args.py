"""Engine arguments checked against the flag tables read from the servers'
sources (`specdsl.facts`): unknown flags (with did-you-mean), values of the
wrong type, values outside a flag's choices, and flags specdsl sets itself.
"""

from __future__ import annotations

from specdsl.diag import Diagnostic, did_you_mean
from specdsl.facts import engine_flags
from specdsl.model.values import V

# Set by specdsl from the server block (model, port) or needed to reach it.
_MANAGED = {
    "sglang": {"model-path": "model", "model": "model", "port": "port", "host": None},
    "vllm": {"model": "model", "port": "port", "host": None},
    "transformers": {"port": "port", "host": None},
}


def check_args(engine: str, args: V | None, diags: list[Diagnostic]) -> None:
    """Report problems with `args` (a V holding a dict of V) for `engine`."""
    if args is None or not isinstance(args.value, dict):
        return
    flags = engine_flags(engine)
    if not flags:
        return
    managed = _MANAGED.get(engine, {})
    for key, value in args.value.items():
        span = (args.keys or {}).get(key) or value.span
        name = key.lstrip("-")
        if key.startswith("-"):
            diags.append(
                Diagnostic.error(
                    f"Write engine flags without dashes: `{name}`",
                    span,
                    f"specdsl adds the dashes: `{name} = ...` becomes `--{name}`",
                )
            )
            continue
        if name in managed:
            attr = managed[name]
            diags.append(
                Diagnostic.error(
                    f"`{name}` is set by specdsl",
                    span,
                    f"use the server's `{attr}` attribute instead" if attr else "specdsl binds the server to the host it runs on",
                )
            )
            continue
        info = flags.get(name)
        if info is None:
            hint = did_you_mean(name, flags) or f"see `{engine}`'s flag table in specdsl/facts"
            diags.append(Diagnostic.error(f"Unknown {engine} flag `{name}`", span, hint))
            continue
        _check_value(engine, name, info, value, diags)


def _check_value(engine, name, info, value: V, diags) -> None:
    x = value.value
    if info.type == "bool":
        if not isinstance(x, bool):
            diags.append(
                Diagnostic.error(
                    f"`{name}` is an on/off flag: write true or false",
                    value.span,
                    f"`{name} = true` passes `--{name}`",
                )
            )
        return
    if isinstance(x, bool):
        diags.append(Diagnostic.error(f"`{name}` takes a value, not true/false", value.span, _default_hint(info)))
        return
    if info.type == "int" and not (isinstance(x, int) or isinstance(x, float) and x.is_integer()):
        diags.append(Diagnostic.error(f"`{name}` must be an integer", value.span, _default_hint(info)))
        return
    if info.type == "float" and not isinstance(x, (int, float)):
        diags.append(Diagnostic.error(f"`{name}` must be a number", value.span, _default_hint(info)))
        return
    if info.choices and isinstance(x, str) and x not in info.choices:
        hint = did_you_mean(x, info.choices) or "choices: " + ", ".join(info.choices[:20])
        summary = f'"{x}" is not a valid {name} for {engine}'
        if info.late_choices and x.lower() in {c.lower() for c in info.choices}:
            return
        if info.late_choices:
            diags.append(Diagnostic.warning(summary, value.span, hint + " (the server checks this when it starts)"))
        else:
            diags.append(Diagnostic.error(summary, value.span, hint))


def _default_hint(info) -> str:
    return f"its default is {info.default}" if info.default not in (None, "") else ""
