"""The `slurm = { ... }` setting of a host block: its keys and their types,
each problem at the span of the offending key or value.

What the language can check alone is checked here (names, types, the
shape of `gres` and `mem`, settings that do not go together, a server
kept running on a Slurm host); what only the cluster knows (the partition
exists, the account may use it, a node offers the gres) is checked by the
preflight before anything is submitted (`apply/slurm/preflight.py`),
and by `plan`, which asks the cluster the same (`preflight.for_plan`).
"""

from __future__ import annotations

import re
from typing import Any, Callable, Sequence

from specdsl.diag import Diagnostic, Span, did_you_mean
from specdsl.model import config
from specdsl.model.values import INVALID, V, type_name
from specdsl.validate import fields

GRES_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*(:[A-Za-z0-9_.-]+)?(:[0-9]+)?$")
MEM_RE = re.compile(r"^[0-9]+[KMGT]?$")

DOCS = {
    "partition": "the partition jobs go to (default: the cluster's default)",
    "account": "the account jobs are charged to",
    "gres": 'generic resources per job, `"gpu:8"` or `"gpu:h200:8"`',
    "time": "the job's time limit, a duration (`30m`)",
    "exclusive": "the job takes its node alone",
    "cpus": "CPUs for the job's one task",
    "mem": 'memory per node, `"64G"`',
    "max_parallel": "the most jobs of this host at once (default 4)",
    "workdir": "a folder the submit host and the compute nodes share (job folders, environments)",
    "sbatch_args": "more sbatch options, verbatim",
    "conf": "the cluster's slurm.conf on the submit host (default: its SLURM_CONF or Slurm's own)",
    "python": "the Python on the compute nodes that runs specdsl's job (with `ssh`, default python3)",
}


def slurm_settings(v: V, diags: list[Diagnostic], name: str) -> Any:
    """Check a `slurm` map; a `config.Slurm`, or INVALID."""
    if not isinstance(v.value, dict):
        diags.append(Diagnostic.error(f"`{name}` must be a map, not {type_name(v.value)}", v.span,
                                      'write `slurm = { partition = "gpu", gres = "gpu:8", time = 30m }`'))
        return INVALID
    keys = v.keys or {}
    out: dict[str, Any] = {}
    spans: dict[str, Any] = {}
    ok = True
    for key, item in v.value.items():
        where = keys.get(key) or item.span
        if key not in DOCS:
            hint = did_you_mean(key, DOCS) or "slurm settings: " + ", ".join(sorted(DOCS))
            diags.append(Diagnostic.error(f"Unknown slurm setting `{key}`", where, hint))
            ok = False
            continue
        if item.value is INVALID:
            ok = False
            continue
        value = _check(key, item, diags)
        if value is INVALID:
            ok = False
            continue
        out[key] = value
        spans[key] = item.span
    if not ok:
        return INVALID
    return config.Slurm(span=v.span, spans=tuple(sorted(spans.items())), **out)


def _check(key: str, item: V, diags) -> Any:
    x = item.value
    label = f"slurm.{key}"
    if key in ("conf", "python"):
        value = fields.string(item, diags, label)
        if value is INVALID:
            return value
        if key == "conf" and not value.startswith("/"):
            return _err(diags, "`slurm.conf` must be an absolute path", item.span,
                        "the path of slurm.conf on the submit host (the login node with `ssh`)")
        if key == "python" and (not value.strip() or ("/" in value and not value.startswith("/"))):
            return _err(diags, f'`slurm.python` "{value}" is neither a program name nor an absolute path', item.span,
                        'write "python3" (found on the nodes\' PATH) or the interpreter\'s full path')
        return value
    if key in ("partition", "account", "workdir"):
        value = fields.string(item, diags, label)
        if value is not INVALID and not value.strip():
            return _err(diags, f"`{label}` is empty", item.span, "give a name, or leave the setting out")
        if key == "workdir" and value is not INVALID and not value.startswith("/"):
            return _err(diags, "`slurm.workdir` must be an absolute path", item.span,
                        "the compute nodes resolve it too: write the shared folder's full path")
        return value
    if key == "gres":
        value = fields.string(item, diags, label)
        if value is not INVALID and not all(GRES_RE.match(part) for part in value.split(",")):
            return _err(diags, f'`slurm.gres` "{value}" is not a gres specification', item.span,
                        'write NAME[:TYPE][:COUNT], such as "gpu:8" or "gpu:h200:8"')
        return value
    if key == "mem":
        if isinstance(x, (int, float)) and not isinstance(x, bool):
            return _err(diags, "`slurm.mem` needs a unit", item.span, f'write it as Slurm does: "{x}G" or "{x}M"')
        value = fields.string(item, diags, label)
        if value is not INVALID and not MEM_RE.match(value):
            return _err(diags, f'`slurm.mem` "{value}" is not a memory size', item.span, 'write "64G", "512M" or "0" (all)')
        return value
    if key == "time":
        return fields.duration()(item, diags, label)
    if key == "exclusive":
        return fields.boolean(item, diags, label)
    if key == "cpus":
        return fields.integer(1)(item, diags, label)
    if key == "max_parallel":
        return fields.integer(1)(item, diags, label)
    if key == "sbatch_args":
        return fields.str_list(item, diags, label)
    raise AssertionError(key)


def _err(diags, summary, span, detail=""):
    diags.append(Diagnostic.error(summary, span, detail))
    return INVALID


def check_host(values: dict[str, V], names: dict, diags: list[Diagnostic]) -> bool:
    """The settings of a host block with `slurm` that do not go together;
    False (each problem reported at its key) when one is there."""
    ok = True
    if "workdir" in values:
        v = values["workdir"]
        diags.append(Diagnostic.error(
            "`workdir` of a Slurm host is `slurm.workdir`", names.get("workdir") or v.span,
            "on a Slurm host the job folders and environments live where the compute nodes see them: "
            "write the folder as `slurm = { workdir = \"/shared/...\" }`"))
        ok = False
    return ok


def check_experiments_on_slurm(experiments: Sequence[config.Experiment], diags: list[Diagnostic],
                               span_of: Callable[[config.Experiment], Span | None]) -> None:
    """What a Slurm host cannot do: keep a server running after its job
    (its servers end with the job). One error per experiment block (a sweep
    of many cells gives one line), at `span_of(exp)` (its `server = ...`),
    so `validate` and `plan` say it, not the host's preflight at apply."""
    seen: set[str] = set()
    for exp in experiments:
        if exp.host.slurm is None or not exp.server.keep_running or exp.group in seen:
            continue
        seen.add(exp.group)
        diags.append(Diagnostic.error(
            "`keep_running` cannot hold on a Slurm host", span_of(exp),
            f"server {exp.server.name} keeps running, but host {exp.host.name} runs each chain as one Slurm job "
            "and its servers end with the job: leave out keep_running, or run this server on a host without `slurm`"))
