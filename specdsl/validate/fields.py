"""The checks of one attribute's value: a string, a bool, a bounded integer
or number, a duration, one of a set of words, lists and maps of strings,
an argv with placeholders, engine arguments, a host's GPUs.

Each check takes the evaluated value (`V`), the diagnostics and the
attribute's name as the spec writes it; it reports at the span of the
offending value and returns the plain value, or INVALID. The block
schemas (`schema`) and the `slurm` map's keys (`slurm`) are built from
them; this module imports neither.
"""

from __future__ import annotations

import re

from typing import Any, Callable

from specdsl.diag import Diagnostic, Span, did_you_mean
from specdsl.model import ast, config
from specdsl.model.values import INVALID, V, type_name

Check = Callable[[V, list[Diagnostic], str], Any]


def _err(diags, summary, span, detail=""):
    diags.append(Diagnostic.error(summary, span, detail))
    return INVALID


def string(v: V, diags, name) -> Any:
    if isinstance(v.value, str):
        return v.value
    return _err(diags, f"`{name}` must be a string, not {type_name(v.value)}", v.span)


_HOST_PORT = re.compile(r"^(?:([^@\s]+)@)?([^:@\s\[\]/]+):(\d+)$")


def ssh_target(v: V, diags, name) -> Any:
    """A host's `ssh`: `user@host` or an ssh config name. `me@host:2222`
    is an error: ssh would take `host:2222` as the host's name (a port is
    the ssh config's `Port`)."""
    value = string(v, diags, name)
    if not isinstance(value, str):
        return value
    m = _HOST_PORT.match(value)
    if m:
        user, host, port = m.groups()
        alias = host.split(".")[0]
        return _err(diags, f"`{name}` takes a host, not host:port: ssh would look up a machine named `{host}:{port}`", v.span,
                    f"give the port in your ssh config (~/.ssh/config: `Host {alias}` / `HostName {host}` / `Port {port}`"
                    + (f" / `User {user}`" if user else "") + f") and write `{name} = \"{alias}\"`")
    return value


def boolean(v: V, diags, name) -> Any:
    if isinstance(v.value, bool):
        return v.value
    return _err(diags, f"`{name}` must be true or false, not {type_name(v.value)}", v.span)


def integer(lo: int | None = None, hi: int | None = None) -> Check:
    def check(v: V, diags, name):
        x = v.value
        if isinstance(x, float) and x.is_integer():
            x = int(x)
        if not isinstance(x, int) or isinstance(x, bool):
            return _err(diags, f"`{name}` must be an integer, not {type_name(v.value)}", v.span)
        if lo is not None and x < lo or hi is not None and x > hi:
            bounds = f">= {lo}" if hi is None else f"between {lo} and {hi}"
            return _err(diags, f"`{name}` must be {bounds}, not {x}", v.span)
        return x

    return check


def number(lo: float | None = None, exclusive: bool = False) -> Check:
    def check(v: V, diags, name):
        x = v.value
        if not isinstance(x, (int, float)) or isinstance(x, bool):
            return _err(diags, f"`{name}` must be a number, not {type_name(x)}", v.span)
        if lo is not None and (x <= lo if exclusive else x < lo):
            return _err(diags, f"`{name}` must be {'>' if exclusive else '>='} {lo}, not {x}", v.span)
        return x

    return check


def duration(positive: bool = True) -> Check:
    def check(v: V, diags, name):
        x = v.value
        if isinstance(x, ast.Quantity) and x.unit in ast.DURATION_UNITS:
            seconds = x.seconds()
            if seconds < 0 or positive and seconds == 0:
                return _err(diags, f"`{name}` must be {'positive' if positive else 'zero or more'}", v.span)
            return float(seconds)
        if isinstance(x, (int, float)) and not isinstance(x, bool):
            return _err(
                diags,
                f"`{name}` needs a unit",
                v.span,
                f"write a duration with its unit, such as `{x}s` or `{x}m` (units: ms, s, m, h)",
            )
        return _err(diags, f"`{name}` must be a duration such as `30s` or `20m`, not {type_name(x)}", v.span)

    return check


def failure_limit(v: V, diags, name) -> Any:
    """A count of requests (`3`) or a fraction of a run's (`1%`, `0.01`):
    ("count", n) or ("fraction", f)."""
    x = v.value
    if isinstance(x, ast.Quantity) and x.unit == "%":
        if not 0 <= x.value <= 100:
            return _err(diags, f"`{name}` must be between 0% and 100%, not {x.value:g}%", v.span)
        return ("fraction", x.fraction())
    if isinstance(x, float) and 0 < x < 1:
        return ("fraction", x)
    if isinstance(x, float) and x.is_integer():
        x = int(x)
    if isinstance(x, int) and not isinstance(x, bool) and x >= 0:
        return ("count", x)
    return _err(diags, f"`{name}` must be a count of requests (`0`, `3`) or a fraction of them (`1%`), not "
                f"{x if isinstance(x, (int, float)) and not isinstance(x, bool) else type_name(x)}", v.span,
                "failed requests a run may have and still be a measurement (docs/language.md)")


def fraction(v: V, diags, name) -> Any:
    """A share above 0 and below 1: `1%` or `0.01`."""
    x = v.value
    if isinstance(x, ast.Quantity) and x.unit == "%":
        x = x.fraction()
    elif isinstance(x, ast.Quantity) or isinstance(x, bool) or not isinstance(x, (int, float)):
        return _err(diags, f"`{name}` must be a fraction (`1%`, `0.01`), not {type_name(v.value)}", v.span)
    if not 0 < x < 1:
        return _err(diags, f"`{name}` must be above 0% and below 100%, not {x * 100:g}%", v.span,
                    "how far apart two warm-up slices may be and still agree: `1%` (docs/language.md)")
    return float(x)


def enum(*choices: str) -> Check:
    def check(v: V, diags, name):
        x = v.value
        if not isinstance(x, str):
            return _err(diags, f"`{name}` must be a string, not {type_name(x)}", v.span)
        if x not in choices:
            hint = did_you_mean(x, choices) or "one of: " + ", ".join(f'"{c}"' for c in choices)
            return _err(diags, f'Unknown {name} "{x}"', v.span, hint)
        return x

    return check


def str_list(v: V, diags, name) -> Any:
    if not isinstance(v.value, list):
        return _err(diags, f"`{name}` must be a list of strings, not {type_name(v.value)}", v.span)
    out = []
    for item in v.value:
        if item.value is INVALID:
            return INVALID
        if not isinstance(item.value, str):
            return _err(diags, f"Items of `{name}` must be strings, not {type_name(item.value)}", item.span)
        out.append(item.value)
    return tuple(out)


def command_list(allowed: tuple[str, ...]) -> Check:
    """A `command` argv: a list of strings whose `{name}` placeholders are
    among `allowed` (specdsl.model.placeholders). An unknown one (`{prot}`)
    is an error at the placeholder, with did-you-mean: it would reach the
    script as written."""
    from specdsl.model.placeholders import found

    def check(v: V, diags, name):
        argv = str_list(v, diags, name)
        if argv is INVALID:
            return INVALID
        bad = False
        for item in v.value:
            for key, offset in found(item.value):
                if key in allowed:
                    continue
                bad = True
                hint = did_you_mean(key, allowed) or ""
                known = "placeholders: " + ", ".join(f"{{{a}}}" for a in allowed)
                _err(diags, f"Unknown placeholder `{{{key}}}` in `{name}`", _inside(item, offset, len(key) + 2),
                     f"{hint} ({known})" if hint else known)
        return INVALID if bad else argv

    return check


def metrics_preset(v: V, diags, name) -> Any:
    """The name of an engine client's result format (specdsl.facts.bench_clients):
    an unknown one is an error at the value, with did-you-mean."""
    from specdsl.facts.bench_clients import preset_names

    x = v.value
    if not isinstance(x, str):
        return _err(diags, f"`{name}` must be a string, not {type_name(x)}", v.span)
    known = preset_names()
    if x not in known:
        hint = did_you_mean(x, known) or ""
        listed = "presets: " + ", ".join(f'"{k}"' for k in known)
        return _err(diags, f'Unknown metrics preset "{x}"', v.span, f"{hint} ({listed})" if hint else listed)
    return x


def _inside(item: V, offset: int, length: int) -> Span | None:
    """The span of `length` characters at `offset` of a string value, when
    its literal is on one line and has no escapes (else the whole string)."""
    s = item.span
    if s is None or s.end_line not in (None, s.line) or s.end_col is None or s.end_col - s.col != len(item.value) + 2:
        return s
    return Span(s.file, s.line, s.col + 1 + offset, s.line, s.col + 1 + offset + length)


def str_map(v: V, diags, name) -> Any:
    """Environment variables: string values (numbers are written as text)."""
    if not isinstance(v.value, dict):
        return _err(diags, f"`{name}` must be a map, not {type_name(v.value)}", v.span)
    out = {}
    for key, item in v.value.items():
        x = item.value
        if x is INVALID:
            return INVALID
        if isinstance(x, (int, float)) and not isinstance(x, bool):
            x = str(x)
        if not isinstance(x, str):
            return _err(diags, f"`{name}.{key}` must be a string, not {type_name(x)}", item.span)
        out[key] = x
    return config.pairs(out)


def slo_map(v: V, diags, name) -> Any:
    """Per-request SLOs: `{ ttft = 200ms, tpot = 50ms, e2el = 2s }`, each a
    positive duration, as ((metric, ms), ...) in the order written."""
    from specdsl.model.metrics import SLO_METRICS

    if not isinstance(v.value, dict) or not v.value:
        return _err(diags, f"`{name}` must be a map of latency bounds, such as `{{ ttft = 200ms, tpot = 50ms }}`", v.span)
    out = []
    for key, item in v.value.items():
        x = item.value
        if x is INVALID:
            return INVALID
        if key not in SLO_METRICS:
            hint = did_you_mean(key, SLO_METRICS) or ""
            return _err(diags, f"`{name}.{key}`: an SLO bounds one of {', '.join(SLO_METRICS)} (vLLM's goodput)", item.span,
                        hint or f"write `{name} = {{ ttft = 200ms, tpot = 50ms }}`")
        if not (isinstance(x, ast.Quantity) and x.unit in ast.DURATION_UNITS):
            return _err(diags, f"`{name}.{key}` must be a duration such as `200ms`", item.span,
                        f"write `{key} = {x}ms`" if isinstance(x, (int, float)) and not isinstance(x, bool) else "")
        if x.seconds() <= 0:
            return _err(diags, f"`{name}.{key}` must be positive", item.span)
        out.append((key, float(x.seconds() * 1000.0)))
    return tuple(out)


def scalar_map(v: V, diags, name) -> Any:
    """Engine arguments: scalars, or lists of scalars for repeated flags."""
    if not isinstance(v.value, dict):
        return _err(diags, f"`{name}` must be a map, not {type_name(v.value)}", v.span)
    out = []
    for key, item in v.value.items():
        x = item.value
        if x is INVALID:
            return INVALID
        if isinstance(x, list):
            if any(not isinstance(i.value, (str, int, float, bool)) for i in x):
                return _err(diags, f"`{name}.{key}` must hold strings, numbers or bools", item.span)
            x = tuple(i.value for i in x)
        elif isinstance(x, ast.Quantity):
            return _err(diags, f"`{name}.{key}` cannot be {type_name(x)}", item.span, "write the number the server expects")
        elif not isinstance(x, (str, int, float, bool)):
            return _err(diags, f"`{name}.{key}` must be a string, number or bool, not {type_name(x)}", item.span)
        out.append((key, x))
    return tuple(out)  # order as written: argv order


def gpu_count_or_ids(v: V, diags, name) -> Any:
    """A host's GPUs: a count (`8`) or a list of distinct device ids (`[0, 2]`)."""
    if isinstance(v.value, list):
        ids: list[int] = []
        for item in v.value:
            x = item.value
            if x is INVALID:
                return INVALID
            if not isinstance(x, int) or isinstance(x, bool) or x < 0:
                what = x if isinstance(x, int) and not isinstance(x, bool) else type_name(x)
                return _err(diags, f"Items of `{name}` must be device ids (integers >= 0), not {what}", item.span,
                            "write the indexes `nvidia-smi` lists, such as `gpus = [0, 1]`")
            if x in ids:
                return _err(diags, f"GPU {x} is listed twice in `{name}`", item.span)
            ids.append(x)
        return tuple(ids)
    return integer(0)(v, diags, name)
