"""Facts about the servers specdsl drives: flag tables and log patterns read
from the servers' own sources (copied from the project's shared facts).

Pure data loading; imports nothing else from specdsl. Used by validation
(engine arguments) and by the engine adapters (argv, log scanning).
`client` holds what each engine's API accepts from the benchmark client
(its quirks) and the request the client sends, as a template: planning puts
it in a benchmark's identity, the client sends it.
"""

from __future__ import annotations

import csv
import functools
import re
from pathlib import Path

import attrs

ENGINES = ("sglang", "vllm", "transformers", "command")
_FLAG_FILES = {"sglang": "sglang-v0.5.9-server-args.tsv", "vllm": "vllm-serve-args.tsv"}
# Log patterns per engine release, oldest first: (release, file). A server
# of a version between two releases is read with the older one's set (the
# lines of a release stay until a later release changes them); a version
# older than the first, or unknown, with the nearest set (the first, or the
# newest). The release the rows were read from is in each file's header.
_PATTERN_SETS = {
    "sglang": (("0.5.6", "sglang-v0.5.6-log-patterns.tsv"), ("0.5.9", "sglang-log-patterns.tsv")),
    "vllm": (("0.33.0", "vllm-log-patterns.tsv"),),
}
_TRANSFORMERS_HELP = "transformers-5.17-serve-help.txt"


@attrs.frozen
class FlagInfo:
    """One command-line option. `name` is the canonical flag without dashes;
    `type` is "bool", "int", "float", "str", "json" or "list";
    `choices` empty means any value; `late_choices` means the server checks
    the choices after parsing (a warning, not an error, when outside)."""

    name: str
    dest: str
    type: str
    default: str | None
    choices: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    late_choices: bool = False
    negation: str | None = None  # e.g. "no-enable-foo" for paired booleans


@attrs.frozen
class LogPattern:
    regex: re.Pattern
    meaning: str
    source: str


def _read(name: str) -> str:
    return (Path(__file__).parent / name).read_text()  # package data beside this module


def _type_of(raw: str) -> str:
    raw = raw.lower()
    if "nargs=+" in raw or "nargs=*" in raw:
        return "list"
    if raw.startswith("bool"):
        return "bool"
    if "json" in raw or raw.startswith("loads"):
        return "json"
    if "human-readable" in raw:
        return "str"
    if "int" in raw:
        return "int"
    if "float" in raw:
        return "float"
    return "str"


@functools.cache
def engine_flags(engine: str) -> dict[str, FlagInfo]:
    """Every flag of `engine`, keyed by each of its spellings without dashes
    (`tp-size` and `tensor-parallel-size` both map to one FlagInfo).
    An empty dict for an engine without a flag table (`command`)."""
    if engine == "transformers":
        return _transformers_flags()
    if engine not in _FLAG_FILES:
        return {}
    out: dict[str, FlagInfo] = {}
    rows = csv.reader((l for l in _read(_FLAG_FILES[engine]).splitlines() if not l.startswith("#")), delimiter="\t")
    next(rows)  # header
    for row in rows:
        flag, dest, typ, default, choices = (row + [""] * 5)[:5]
        if "(positional)" in flag:
            continue
        spellings = [f.lstrip("-") for f in flag.split(",") if f.startswith("--")]
        if not spellings:
            continue
        paired = "paired" in typ
        late = choices.startswith("~")
        info = FlagInfo(
            name=spellings[0],
            dest=dest,
            type=_type_of(typ),
            default=None if default == "None" else default,
            choices=tuple(c for c in choices.lstrip("~").split("|") if c and c != "None"),
            aliases=tuple(spellings[1:]),
            late_choices=late,
            negation=spellings[-1] if paired and len(spellings) > 1 else None,
        )
        for s in spellings:
            out.setdefault(s, info)
    return out


_HELP_OPTION = re.compile(r"^  --([a-z0-9-]+)(?: / --(no-[a-z0-9-]+))?(?:\s+(\[[^\]]+\]|[A-Z]+))?")


def _transformers_flags() -> dict[str, FlagInfo]:
    out: dict[str, FlagInfo] = {}
    for line in _read(_TRANSFORMERS_HELP).splitlines():
        m = _HELP_OPTION.match(line)
        if not m:
            continue
        name, negation, meta = m.groups()
        if name in ("help", "json", "format", "quiet", "no-truncate"):
            continue
        if negation or meta is None:
            typ, choices = "bool", ()
        elif meta.startswith("["):
            typ, choices = "str", tuple(meta.strip("[]").split("|"))
        else:
            typ, choices = {"INTEGER": "int", "FLOAT": "float"}.get(meta, "str"), ()
        out[name] = FlagInfo(name, name.replace("-", "_"), typ, None, choices, (), False, negation)
    return out


def _release_key(version: str) -> tuple:
    """`0.5.6` -> (0, 5, 6); a local or dev suffix (`0.5.9+cu130`, `0.5.6.post1`) is ignored."""
    parts = []
    for piece in re.split(r"[.+-]", version):
        if not piece.isdigit():
            break
        parts.append(int(piece))
    return tuple(parts)


def pattern_set(engine: str, version: str | None = None) -> str:
    """The name of the log-pattern set a server of `engine` at `version`
    is read with (`sglang 0.5.6`); "" for an engine without patterns.
    Unknown version: the newest set."""
    sets = _PATTERN_SETS.get(engine, ())
    if not sets:
        return ""
    chosen = sets[-1][0]
    key = _release_key(version) if version else ()
    if key:
        older = [release for release, _ in sets if _release_key(release) <= key]
        chosen = older[-1] if older else sets[0][0]
    return f"{engine} {chosen}"


@functools.cache
def log_patterns(engine: str, version: str | None = None) -> tuple[LogPattern, ...]:
    """The log patterns of `engine` for a server at `version` (see
    `pattern_set`; empty for engines without a table)."""
    name = pattern_set(engine, version)
    if not name:
        return ()
    release = name.split(" ", 1)[1]
    file = dict(_PATTERN_SETS[engine])[release]
    lines = [l for l in _read(file).splitlines() if l and not l.startswith("#")]
    out = []
    for line in lines[1:]:
        regex, meaning, source = (line.split("\t") + ["", ""])[:3]
        out.append(LogPattern(re.compile(regex), meaning, source))
    return tuple(out)
