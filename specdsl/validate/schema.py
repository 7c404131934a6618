"""Attribute schemas of hosts, stacks, servers and workloads, and the typed
constructors that check evaluated attributes (`V`s) against them.

Each check reports at the span of the offending value and returns the plain
value, or INVALID. `build_*` functions return a `specdsl.model.config`
object, or None when an error was reported.
"""

from __future__ import annotations

from typing import Any

import attrs

from specdsl.diag import Diagnostic, Span, did_you_mean
from specdsl.facts import ENGINES
from specdsl.model import ast, config
from specdsl.model.placeholders import SERVER_COMMAND, WORKLOAD_COMMAND
from specdsl.model.values import INVALID, V
from specdsl.validate.fields import (Check, boolean, command_list, duration, enum, failure_limit, fraction, gpu_count_or_ids,
                                     integer, metrics_preset, number, scalar_map, slo_map, ssh_target, str_list, str_map,
                                     string)
from specdsl.validate.slurm import check_host, slurm_settings


@attrs.frozen
class Field:
    check: Check
    required: bool = False
    doc: str = ""


SCHEMAS: dict[str, dict[str, Field]] = {
    "variable": {
        "default": Field(lambda v, d, n: v.value, doc="value used when none is given"),
        "description": Field(string),
        "type": Field(enum("string", "number", "bool", "list", "map")),
        "sensitive": Field(boolean, doc="a secret: its value is never shown or written (docs/language.md)"),
    },
    "host": {
        "ssh": Field(ssh_target, doc="user@host; leave out for this machine (with `slurm`: the login node)"),
        "gpus": Field(gpu_count_or_ids, doc="how many GPUs (`8`) or which device ids (`[0, 2]`) specdsl may use"),
        "allow_busy_gpus": Field(boolean, doc="benchmark even when another job holds memory or processes on the GPUs"),
        "workdir": Field(string),
        "slurm": Field(slurm_settings, doc="run each chain as a Slurm job (docs/slurm.md)"),
    },
    "stack": {
        "python": Field(string),
        "cuda": Field(string),
        "packages": Field(str_list),
        "index": Field(str_list),
        "find_links": Field(str_list),
        "overrides": Field(str_list),
        "exclude": Field(str_list),
        "env": Field(str_map),
        "installer": Field(enum("uv", "pip", "prebuilt")),
    },
    "server": {
        "engine": Field(enum(*ENGINES), doc="required, unless `url` names a server already running"),
        "model": Field(string, required=True),
        "args": Field(scalar_map),
        "env": Field(str_map),
        "port": Field(integer(1, 65535)),
        "ready_timeout": Field(duration()),
        "keep_running": Field(boolean),
        "command": Field(command_list(SERVER_COMMAND)),
        "ready_url": Field(string),
        "gpus": Field(integer(0), doc="GPUs the server needs (default: read from its args, docs/gpus.md)"),
        "url": Field(string, doc="a server already running there: benchmarked, never launched or stopped"),
        "api_key": Field(string, doc="with `url`: sent as `Authorization: Bearer KEY` (sensitive)"),
    },
    "workload": {
        "dataset": Field(string),
        "input_len": Field(integer(1)),
        "output_len": Field(integer(1)),
        "requests": Field(integer(1)),
        "concurrency": Field(integer(1)),
        "rate": Field(number(0, exclusive=True)),
        "burstiness": Field(number(0, exclusive=True)),
        "runs": Field(integer(1)),
        "max_runs": Field(integer(1)),
        "block": Field(integer(1)),
        "warmup": Field(integer(0)),
        "warmup_time": Field(duration(positive=False), doc="the most a steady warm-up may take (docs/verdicts.md)"),
        "warmup_tolerance": Field(fraction, doc="how far apart two warm-up slices may be and agree (default 1%)"),
        "duration": Field(duration(), doc="a run's length in time, requests cycling (instead of a count: runs of one comparison equally long)"),
        "cooldown": Field(duration(positive=False)),
        "timeout": Field(duration()),
        "seed": Field(integer()),
        "endpoint": Field(enum("completions", "chat")),
        "ignore_eos": Field(boolean),
        "command": Field(command_list(WORKLOAD_COMMAND)),
        "metrics": Field(metrics_preset, doc="read the result file of an engine's own client: \"vllm-bench-serve\" or "
                                             "\"sglang-bench-serving\" (docs/language.md)"),
        "client_processes": Field(integer(1), doc="worker processes the built-in client spreads the streams over (default 1)"),
        "max_failed": Field(failure_limit, doc="failed requests a valid run may have: a count or a fraction (default 0)"),
        "prefix_cache": Field(enum("reset", "off", "warm"),
                              doc="prefix-cache hits in the runs: emptied before each (reset, the default), "
                                  "the cache turned off, or left warm"),
        "max_launches": Field(integer(4), doc="a paired comparison's budget: at most this many server launches (two a pair, two pairs at least)"),
        "max_time": Field(duration(), doc="a paired comparison's budget: at most this much wall time of launches and runs"),
        "launch_estimate": Field(duration(), doc="your guess of one launch's cost (start, warm-up, its runs), for the plan when nothing is recorded"),
        "slo": Field(slo_map, doc="per-request latency bounds of goodput: { ttft = 200ms, tpot = 50ms, e2el = 2s } (vLLM's --goodput)"),
        "tokenizer": Field(string, doc='what counts prompt tokens: "model" (the model\'s own) or a local path (default: the model\'s, when it is a folder)'),
    },
    "metric": {"regex": Field(string), "json": Field(string)},
}
EXPERIMENT_ATTRS = ("host", "stack", "server", "workload", "baseline", "baseline_mode", "promote", "matrix", "search")
BASELINE_MODES = ("paired", "recorded")
NESTED = {"workload": ("metric",), "experiment": ()}


def check_attrs(kind: str, values: dict[str, V], names: dict[str, Span | None], span: Span | None, diags) -> dict[str, Any] | None:
    """Check every attribute of a block of `kind`; returns plain values by
    name, or None if something was wrong. `names` gives where each attribute
    name was written (for unknown-attribute errors)."""
    schema = SCHEMAS[kind]
    ok = True
    out: dict[str, Any] = {}
    for name, v in values.items():
        field = schema.get(name)
        if field is None:
            hint = did_you_mean(name, schema) or f"{kind} attributes: {', '.join(sorted(schema))}"
            diags.append(Diagnostic.error(f"Unknown {kind} attribute `{name}`", names.get(name) or v.span, hint))
            ok = False
            continue
        if v.value is INVALID:
            ok = False
            continue
        value = field.check(v, diags, name)
        if value is INVALID:
            ok = False
        else:
            out[name] = value
    if kind == "host" and "slurm" in values:

        ok = check_host(values, names, diags) and ok
    for name, field in schema.items():
        if field.required and name not in values:
            diags.append(Diagnostic.error(f"Missing required attribute `{name}` in {kind}", span, f"add `{name} = ...`"))
            ok = False
    return out if ok else None


def build_host(name: str, values: dict, span) -> config.Host:
    gpus = values.get("gpus")
    if isinstance(gpus, tuple):  # device ids: the count is how many
        values = dict(values, gpus=len(gpus), gpu_ids=gpus)
    return config.Host(name=name, span=span, **values)


def build_stack(name: str, values: dict, span) -> config.Stack:
    return config.Stack(name=name, span=span, **values)


# What a server specdsl launches is made of: none of it means anything for
# one that is already running at `url`.
LAUNCH_FIELDS = ("args", "env", "port", "ready_timeout", "keep_running", "command", "ready_url", "gpus")


def build_server(name: str, values: dict, span, spans: dict[str, Span | None], diags) -> config.Server | None:
    if "url" in values or "api_key" in values:
        return _existing_server(name, values, span, spans, diags)
    if "engine" not in values:
        diags.append(Diagnostic.error("Missing required attribute `engine` in server", span,
                                      'add `engine = "vllm"` (or "sglang", "transformers", "command"), or `url = '
                                      '"http://HOST:PORT"` for a server that is already running'))
        return None
    server = config.Server(name=name, span=span, **values)
    if server.engine == "command":
        if not server.command:
            diags.append(
                Diagnostic.error(
                    "A server with engine = \"command\" needs `command`",
                    span,
                    'add `command = ["my-server", "--port", "{port}", "--model", "{model}"]`',
                )
            )
            return None
        if not any("{port}" in a for a in server.command) and server.port is None:
            diags.append(
                Diagnostic.warning(
                    "The command has no `{port}` placeholder",
                    spans.get("command"),
                    "specdsl picks a free port and passes it through `{port}`; without it, set `port`",
                )
            )
    elif server.command:
        diags.append(
            Diagnostic.error(
                f"`command` is only for engine = \"command\", not \"{server.engine}\"",
                spans.get("command"),
                "the engine builds its own command line from `model` and `args`",
            )
        )
        return None
    return server


def _existing_server(name: str, values: dict, span, spans: dict, diags) -> config.Server | None:
    """A server already running at `url` (docs/language.md): only `engine`
    (optional: read from the server), `model` and `api_key` go with it; a
    launch field, a malformed URL or an `api_key` without `url` is an error."""
    from specdsl.model.endpoint import url_problem

    ok = True
    url = values.get("url")
    if url is None:
        diags.append(Diagnostic.error("`api_key` needs `url`", spans.get("api_key") or span,
                                      "an API key is sent to a server that is already running, named by `url`; "
                                      "a server specdsl launches takes its key in `args` (`api-key = var.key`)"))
        return None
    problem = url_problem(url)
    if problem:
        diags.append(Diagnostic.error(f"`url` is not a server's address: {problem}", spans.get("url") or span,
                                      'write the base URL the server answers at, e.g. `url = "http://gpu8:8000"` '
                                      '(no `/v1`: specdsl adds the API paths)'))
        ok = False
    from urllib.parse import urlsplit

    if not problem and values.get("api_key") and urlsplit(url).username is not None:
        diags.append(Diagnostic.error("`api_key` cannot go with credentials in `url`", spans.get("api_key") or span,
                                      "both would be sent as the `Authorization` header: keep one (a key: "
                                      "`Bearer KEY`; credentials in the URL: basic auth)"))
        ok = False
    for field in LAUNCH_FIELDS:
        if field in values:
            diags.append(Diagnostic.error(f"`{field}` cannot go with `url`", spans.get(field) or span,
                                          f"`url` names a server that is already running: specdsl does not launch it, "
                                          f"so `{field}` would never be used; leave out `{field}`, or leave out `url` "
                                          "to have specdsl launch the server"))
            ok = False
    if values.get("engine") == "command":
        diags.append(Diagnostic.error('`engine = "command"` cannot go with `url`', spans.get("engine") or span,
                                      '"command" is how specdsl launches a server of your own; for one already '
                                      'running leave `engine` out (read from the server) or name its engine'))
        ok = False
    if not ok:
        return None
    return config.Server(name=name, span=span, engine=values.get("engine", ""), model=values["model"],
                         url=url.rstrip("/"), api_key=values.get("api_key"))


def build_workload(name: str, values: dict, span, metrics: tuple, spans, diags,
                   command_spans: tuple = ()) -> config.Workload | None:
    """The workload, or None after reporting why not. `spans` are where
    each attribute's name was written, `command_spans` where each item of
    `command` was (kept on the workload for plan's located errors)."""
    spans = spans if isinstance(spans, dict) else {}
    preset = values.get("metrics")
    if values.get("command") and not metrics and not preset:
        diags.append(
            Diagnostic.error(
                "A workload that runs a command needs at least one `metric` block",
                span,
                'add `metric "output_throughput" { regex = "throughput: ([0-9.]+)" }`, or read an engine client\'s '
                'result file with `metrics = "vllm-bench-serve"` (docs/language.md)',
            )
        )
        return None
    if (metrics or preset) and not values.get("command"):
        what = "`metrics`" if preset else "`metric` blocks"
        diags.append(
            Diagnostic.error(
                f"{what} {'needs' if preset else 'need'} `command`",
                spans.get("metrics") if preset else span,
                "metrics are read from the output of your own benchmark command: add `command = [...]`",
            )
        )
        return None
    if preset and not _preset_fits(preset, values["command"], spans, span, diags):
        return None
    if values.get("max_runs") is not None and values["max_runs"] < values.get("runs", 1):
        diags.append(
            Diagnostic.error(
                "`max_runs` is below `runs`",
                spans.get("max_runs") or span,
                f"max_runs is the most runs per arm adaptive pairs may reach: give at least runs = {values.get('runs', 1)}",
            )
        )
        return None
    if values.get("duration") is not None and (values.get("rate") is not None or (values.get("client_processes") or 1) > 1
                                              or values.get("command")):
        diags.append(
            Diagnostic.error(
                "`duration` runs a closed loop in one client process",
                spans.get("duration") or span,
                "a run by time keeps `concurrency` streams busy until it has passed; leave out `rate`, "
                "`client_processes` and `command`, or give `requests` instead of `duration`",
            )
        )
        return None
    if values.get("slo") and values.get("command"):
        diags.append(
            Diagnostic.error(
                "`slo` is read by the built-in client",
                spans.get("slo") or span,
                "goodput is counted from the requests the built-in client timed; with your own command, have it "
                "report goodput (vllm bench serve --goodput) and read it with a `metric` block",
            )
        )
        return None
    if "max_failed" in values:  # a count, or a fraction of each run's requests (specdsl.bench.validity)
        values = dict(values)
        kind, limit = values.pop("max_failed")
        values["max_failed_fraction" if kind == "fraction" else "max_failed"] = limit
    if values.get("client_processes") == 1:
        values = {k: v for k, v in values.items() if k != "client_processes"}  # the default: the same benchmark as unset
    values = {k: v for k, v in values.items() if k != "metrics"}
    return config.Workload(name=name, span=span, metrics=metrics, metrics_preset=preset, command_spans=tuple(command_spans),
                           **values)


def _preset_fits(preset: str, command: tuple, spans: dict, span, diags) -> bool:
    """A preset reads the file the client writes at `{result_file}`: a
    command without it is an error (nothing would be read); one that
    leaves out an option the client needs to write the file, a warning."""
    from specdsl.facts.bench_clients import presets
    from specdsl.model.placeholders import RESULT_FILE, uses

    facts = presets()[preset]
    writes = " ".join(f"{w} {{{RESULT_FILE}}}" if i == len(facts.writes) - 1 else w for i, w in enumerate(facts.writes))
    if not uses(command, RESULT_FILE):
        diags.append(
            Diagnostic.error(
                f"The `{preset}` metrics read the result file, but `command` does not name `{{{RESULT_FILE}}}`",
                spans.get("command") or span,
                f"{facts.client} writes it with `{writes}`: add that to `command`",
            )
        )
        return False
    for flag in facts.writes:
        if not any(arg == flag or arg.startswith(flag + "=") for arg in command):
            diags.append(
                Diagnostic.warning(
                    f"`command` does not pass `{flag}`",
                    spans.get("command") or span,
                    f"{facts.client} writes its result file with `{writes}`; without `{flag}` the run ends "
                    "with no result file to read",
                )
            )
    return True


def build_metric(block: ast.Block, values: dict, diags) -> config.MetricRule | None:
    regex, field = values.get("regex"), values.get("json")
    if (regex is None) == (field is None):
        diags.append(
            Diagnostic.error(
                "A metric needs exactly one of `regex` or `json`",
                block.span,
                '`regex = "tok/s: ([0-9.]+)"` reads the first group of the last match; `json = "results.throughput"` a field of the last JSON object printed',
            )
        )
        return None
    if regex is not None:
        import re

        try:
            compiled = re.compile(regex)
        except re.error as exc:
            span = block.attr("regex").value.span
            diags.append(Diagnostic.error(f"Invalid regular expression: {exc.msg}", span, "use Python `re` syntax"))
            return None
        if compiled.groups < 1:
            diags.append(
                Diagnostic.error(
                    "The regex has no group",
                    block.attr("regex").value.span,
                    "put the number in parentheses: `throughput: ([0-9.]+)`",
                )
            )
            return None
    return config.MetricRule(name=block.label or "", regex=regex, json=field)
