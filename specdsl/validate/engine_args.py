"""Engine arguments checked against the flag tables read from the servers'
sources (`specdsl.facts`): unknown flags (with did-you-mean), values of the
wrong type, values outside a flag's choices or range, and flags specdsl sets
itself. The table is the one of the release the experiment's stack pins
(`facts.flag_table`), with a warning naming both versions when there is no
table of that release. `check_effective` checks an assertion's
`effective.NAME` and the value it is compared with against what the engine
reports.
"""

from __future__ import annotations

from specdsl.diag import Diagnostic, did_you_mean
from specdsl.facts import TableChoice, effective_names, engine_flags, flag_releases, flag_table
from specdsl.facts.engines import BY_NAME as _FACTS
from specdsl.model import ast
from specdsl.model.values import V

_ENGINE_NAMES = {name: e.label for name, e in _FACTS.items()}



def table_warning(choice: TableChoice | None, span) -> Diagnostic | None:
    """The warning for a pinned release without its own table (None when
    the table is the release's own, or nothing is pinned)."""
    if choice is None or choice.exact or choice.pinned is None:
        return None
    name = _ENGINE_NAMES.get(choice.engine, choice.engine)
    return Diagnostic.warning(
        f"No {name} {choice.pinned} flag table: its flags are checked against {name} {choice.release}'s",
        span,
        f"specdsl has tables for {name} " + ", ".join(flag_releases(choice.engine))
        + "; a flag added or removed since then is judged by that release (tools/read_engine_flags.py reads a new one)",
    )


def check_args(engine: str, args: V | None, diags: list[Diagnostic], choice: TableChoice | None = None) -> None:
    """Report problems with `args` (a V holding a dict of V) for `engine`,
    against the table of `choice` (None: the engine's default table)."""
    if args is None or not isinstance(args.value, dict):
        return
    flags = engine_flags(engine, choice.release if choice else None)
    if not flags:
        return
    label = f"{_ENGINE_NAMES.get(engine, engine)} {choice.release}" if choice and choice.pinned else engine
    managed = _FACTS[engine].managed if engine in _FACTS else {}  # set by specdsl (facts/engines)
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
            diags.append(Diagnostic.error(f"Unknown {label} flag `{name}`", span, hint))
            continue
        _check_value(label, name, info, value, diags)


_OPS = {"gt": (">", lambda x, b: x > b), "ge": (">=", lambda x, b: x >= b),
        "lt": ("<", lambda x, b: x < b), "le": ("<=", lambda x, b: x <= b)}


def _check_range(engine, name, info, value: V, diags) -> None:
    x = value.value
    if not info.bounds or isinstance(x, bool) or not isinstance(x, (int, float)):
        return
    broken = [(op, b) for op, b in info.bounds if op in _OPS and not _OPS[op][1](x, b)]
    if not broken:
        return
    rule = " and ".join(f"{_OPS[op][0]} {b:g}" for op, b in info.bounds if op in _OPS)
    hint = f"{engine} accepts `{name}` {rule}"
    if any(op in ("lt", "le") and b == 1 for op, b in info.bounds) and 1 < x <= 100:
        hint += f"; a fraction: write {x / 100:g} for {x:g}%"
    diags.append(Diagnostic.error(f"`{name} = {x:g}` is out of range for {engine}", value.span, hint))


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
    _check_range(engine, name, info, value, diags)
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


def check_effective(expr, engine: str, choice: TableChoice | None, diags: list[Diagnostic]) -> None:
    """`effective.NAME` in an assertion against the names `engine` reports
    (its resolved arguments and the facts its adapter reads from the log),
    and a string it is compared with (`==`, `!=`) against the flag's
    choices. An unknown name close to a known one is an error (a typo:
    the check would be ERROR after the benchmark ran); any other unknown
    name a warning (the server may still report it)."""
    names = effective_names(engine, choice.release if choice else None)
    if not names:
        return
    flags = engine_flags(engine, choice.release if choice else None)
    label = f"{_ENGINE_NAMES.get(engine, engine)} {choice.release}" if choice and choice.pinned else _ENGINE_NAMES.get(engine, engine)
    by_dest = {}
    for info in flags.values():
        by_dest.setdefault(info.dest, info)

    def ref_name(e) -> str | None:
        if isinstance(e, ast.Ref) and len(e.parts) == 2 and e.parts[0] == "effective":
            return e.parts[1]
        return None

    def visit(e) -> None:
        if isinstance(e, ast.BinOp):
            if e.op in ("==", "!="):
                for ref, other in ((e.left, e.right), (e.right, e.left)):
                    name = ref_name(ref)
                    if name in names and isinstance(other, ast.String) and name in by_dest:
                        info = by_dest[name]
                        if info.choices and not info.late_choices and other.value not in info.choices:
                            hint = did_you_mean(other.value, info.choices) or "choices: " + ", ".join(info.choices[:20])
                            diags.append(Diagnostic.error(
                                f'"{other.value}" is never a value of effective.{name} for {label}', other.span, hint))
            visit(e.left)
            visit(e.right)
        elif isinstance(e, (ast.Not, ast.Neg)):
            visit(e.operand)
        elif isinstance(e, ast.Call):
            for a in e.args:
                visit(a)
        else:
            name = ref_name(e)
            if name is not None and name not in names:
                close = did_you_mean(name, names)
                if close:
                    diags.append(Diagnostic.error(f"{label} reports no effective `{name}`", e.span, close))
                else:
                    diags.append(Diagnostic.warning(
                        f"{label} reports no effective `{name}` that specdsl knows of", e.span,
                        "the check is ERROR if the server does not report it; names come from the flag table "
                        "(resolved arguments) and the log lines specdsl reads"))

    visit(expr)
