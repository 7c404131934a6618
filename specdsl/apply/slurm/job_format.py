"""The job description of a Slurm job (`JOBDIR/job.json`): versioned JSON,
read back only into the classes it may name.

The controller writes what the job walks: the plan of its steps, their
graph (steps with the config objects they carry), a snapshot of the state
(the state file's own TOML text), the variables, the spec's folder and
where environments live. The job checks the document against the schema
before it builds anything:

- `format` is `specdsl-slurm-job` and `format_version` the one this
  specdsl reads (else: which version wrote it and what to do);
- every top-level key is present with its JSON type;
- an object is rebuilt only as a class of the closed list `CLASSES`
  (config, syntax tree, spans, steps, plan and its costs), with the fields that class
  has; anything else is refused by name.

So a job file from another specdsl version, or a damaged one, is a
`JobFormatError` with one line saying why, never a traceback, and reading
one runs no code of the file's choosing (it was a pickle before).

Values: JSON scalars as they are; a list is `[...]`; a tuple
`{"$tuple": [...]}`; a dict `{"$dict": [[key, value], ...]}` (keys may be
any value); an attrs object `{"$obj": "Class", "fields": {...}}`; an enum
`{"$enum": "Class", "value": ...}`; a path `{"$path": "..."}`.
"""

from __future__ import annotations

import enum
import json
from pathlib import Path, PurePath
from typing import Any

import attrs

FORMAT = "specdsl-slurm-job"
FORMAT_VERSION = 2  # 1 was the pickle of specdsl 0.1
NAME = "job.json"

# key -> the JSON type it must have (checked before anything is rebuilt)
SCHEMA: dict[str, type | tuple[type, ...]] = {
    "format": str,
    "format_version": int,
    "specdsl_version": str,
    "name": str,
    "first": str,
    "steps": list,
    "spec_dir": str,
    "env_root": str,
    "variables": dict,
    "plan": dict,
    "graph": dict,
    "state": str,
}


class JobFormatError(Exception):
    """A job description this specdsl cannot read; the message says why."""


def _classes() -> dict[str, type]:
    from specdsl import diag
    from specdsl.graph import steps
    from specdsl.model import ast, config
    from specdsl.plan import cost as plan_cost
    from specdsl.plan import model as plan_model
    from specdsl.plan import reasons as plan_reasons

    out: dict[str, type] = {}
    # plan_cost: a plan's costs and undecided verdicts; plan_reasons: the code of each change's decision (Change.why)
    for module in (config, ast, diag, steps, plan_model, plan_cost, plan_reasons):
        for name, value in vars(module).items():
            if isinstance(value, type) and value.__module__ == module.__name__ and (
                    attrs.has(value) or issubclass(value, enum.Enum)):
                out[name] = value
    return out


_CLASSES: dict[str, type] | None = None


def classes() -> dict[str, type]:
    """The closed list of classes a job file may name (by class name)."""
    global _CLASSES
    if _CLASSES is None:
        _CLASSES = _classes()
    return _CLASSES


# -- values -------------------------------------------------------------------
def encode(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, tuple):
        return {"$tuple": [encode(v) for v in value]}
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {"$dict": [[encode(k), encode(v)] for k, v in value.items()]}
    if isinstance(value, PurePath):
        return {"$path": str(value)}
    if isinstance(value, enum.Enum):
        return {"$enum": _known(type(value)), "value": encode(value.value)}
    if attrs.has(type(value)):
        name = _known(type(value))
        return {"$obj": name, "fields": {f.alias: encode(getattr(value, f.name)) for f in attrs.fields(type(value))
                                         if f.init}}
    raise JobFormatError(f"a {type(value).__name__} cannot go into a job description")


def _known(cls: type) -> str:
    if classes().get(cls.__name__) is not cls:
        raise JobFormatError(f"a {cls.__module__}.{cls.__name__} cannot go into a job description")
    return cls.__name__


def decode(value: Any, where: str = "") -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, list):
        return [decode(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if not isinstance(value, dict) or len(value) not in (1, 2):
        raise JobFormatError(f"{where or 'the document'}: not a value of a job description")
    if "$tuple" in value:
        return tuple(decode(v, f"{where}[{i}]") for i, v in enumerate(_list(value["$tuple"], where)))
    if "$dict" in value:
        out = {}
        for i, pair in enumerate(_list(value["$dict"], where)):
            if not isinstance(pair, list) or len(pair) != 2:
                raise JobFormatError(f"{where}: item {i} of a map is not a [key, value] pair")
            key = decode(pair[0], f"{where}.key")
            try:
                out[key] = decode(pair[1], f"{where}.{key}")
            except TypeError:
                raise JobFormatError(f"{where}: a map key that is not a plain value") from None
        return out
    if "$path" in value:
        if not isinstance(value["$path"], str):
            raise JobFormatError(f"{where}: a path that is not a string")
        return Path(value["$path"])
    if "$enum" in value:
        cls = _class(value["$enum"], where)
        try:
            return cls(decode(value.get("value"), where))
        except (ValueError, TypeError):
            raise JobFormatError(f"{where}: {value.get('value')!r} is not a {cls.__name__} this specdsl knows") from None
    if "$obj" in value:
        cls = _class(value["$obj"], where)
        fields = value.get("fields")
        if not isinstance(fields, dict):
            raise JobFormatError(f"{where}: {cls.__name__} without its fields")
        known = {f.alias for f in attrs.fields(cls) if f.init}
        unknown = sorted(set(fields) - known)
        if unknown:
            raise JobFormatError(f"{where}: {cls.__name__} has no field {unknown[0]!r} in this specdsl")
        kw = {k: decode(v, f"{where}.{k}") for k, v in fields.items()}
        try:
            return cls(**kw)
        except (TypeError, ValueError) as exc:
            raise JobFormatError(f"{where}: {cls.__name__} cannot be made from the job file ({exc})") from None
    raise JobFormatError(f"{where or 'the document'}: an object of unknown kind {sorted(value)}")


def _class(name: Any, where: str) -> type:
    cls = classes().get(name) if isinstance(name, str) else None
    if cls is None:
        raise JobFormatError(f"{where}: {name!r} is not a class a job description may name")
    return cls


def _list(value: Any, where: str) -> list:
    if not isinstance(value, list):
        raise JobFormatError(f"{where}: expected a list")
    return value


# -- the document ---------------------------------------------------------------
def dumps(*, name: str, first: str, steps: list[str], spec_dir: str, env_root: str, variables: dict,
          plan, graph, state) -> str:
    """The job description of one job, as JSON text."""
    import specdsl
    from specdsl.state.codec import encode_state

    keep = set(steps)
    doc = {
        "format": FORMAT, "format_version": FORMAT_VERSION, "specdsl_version": specdsl.__version__,
        "name": name, "first": first, "steps": list(steps), "spec_dir": spec_dir, "env_root": env_root,
        "variables": {str(k): encode(v) for k, v in variables.items()},
        "plan": encode(plan),
        "graph": {"steps": [encode(graph.steps[a]) for a in steps],
                  "succ": {a: [s for s in graph.succ.get(a, ()) if s in keep] for a in steps},
                  "pred": {a: [p for p in graph.pred.get(a, ()) if p in keep] for a in steps}},
        "state": encode_state(state),
    }
    return json.dumps(doc, sort_keys=True, allow_nan=True)


def loads(text: str, path: Path) -> dict[str, Any]:
    """The job description in `text` (read from `path`): a dict with the
    plan, graph and state rebuilt; `JobFormatError` saying why not."""
    import specdsl

    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise JobFormatError(f"{path}: not a job description (not JSON: {exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise JobFormatError(f"{path}: not a specdsl job description (no `format = {FORMAT}`)")
    version, wrote = doc.get("format_version"), doc.get("specdsl_version", "an unknown version")
    if version != FORMAT_VERSION:
        raise JobFormatError(f"{path}: job format {version!r} written by specdsl {wrote}; this specdsl "
                             f"{specdsl.__version__} reads job format {FORMAT_VERSION}: submit from the same specdsl")
    for key, kind in SCHEMA.items():
        if key not in doc:
            raise JobFormatError(f"{path}: no `{key}` in the job description")
        if not isinstance(doc[key], kind) or (kind is int and isinstance(doc[key], bool)):
            raise JobFormatError(f"{path}: `{key}` is a {type(doc[key]).__name__}, not a {kind.__name__}")
    extra = sorted(set(doc) - set(SCHEMA))
    if extra:
        raise JobFormatError(f"{path}: unknown key `{extra[0]}` in the job description (written by specdsl {wrote})")
    try:
        return _rebuild(doc, path)
    except JobFormatError as exc:
        raise JobFormatError(f"{path}: {exc} (written by specdsl {wrote})") from None


def _rebuild(doc: dict, path: Path) -> dict[str, Any]:
    from specdsl.graph.build import Graph
    from specdsl.graph.steps import Step
    from specdsl.plan.model import Plan
    from specdsl.state.codec import decode_state
    from specdsl.state.errors import StateError

    steps = doc["steps"]
    if not all(isinstance(s, str) for s in steps):
        raise JobFormatError("`steps` must be a list of step addresses")
    g = doc["graph"]
    if set(g) != {"steps", "succ", "pred"}:
        raise JobFormatError("`graph` must have `steps`, `succ` and `pred`")
    built = {}
    for i, item in enumerate(_list(g["steps"], "graph.steps")):
        step = decode(item, f"graph.steps[{i}]")
        if not isinstance(step, Step):
            raise JobFormatError(f"graph.steps[{i}] is not a step")
        built[step.addr] = step
    if sorted(built) != sorted(steps):
        raise JobFormatError("`graph.steps` are not the job's `steps`")
    edges = {}
    for key in ("succ", "pred"):
        if not isinstance(g[key], dict) or not all(isinstance(v, list) and all(a in built for a in v)
                                                   for v in g[key].values()):
            raise JobFormatError(f"`graph.{key}` must map steps to lists of the job's steps")
        edges[key] = {a: tuple(v) for a, v in g[key].items()}
    plan = decode(doc["plan"], "plan")
    if not isinstance(plan, Plan):
        raise JobFormatError("`plan` is not a plan")
    try:
        state = decode_state(doc["state"], path)
    except StateError as exc:
        raise JobFormatError(f"`state`: {exc}") from None
    return {"name": doc["name"], "first": doc["first"], "steps": steps, "spec_dir": doc["spec_dir"],
            "env_root": doc["env_root"], "variables": {k: decode(v, f"variables.{k}") for k, v in doc["variables"].items()},
            "plan": plan, "graph": Graph(steps=built, succ=edges["succ"], pred=edges["pred"]), "state": state}
