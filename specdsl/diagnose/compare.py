"""Compare two arms: every difference, ranked by likely impact.

The ranking rule (docs/diagnose.md) puts first what the engine's adapter
knows moves performance (`Adapter.impact`, `Adapter.impact_packages`,
beside each engine in specdsl/servers), and among those what the server
chose on its own above what the spec declared; then warnings of the log
that name a risk or a silent choice; then the rest. Each tier is a small
number; the rank is the place in the sorted list.
"""

from __future__ import annotations

import re
from pathlib import Path

import attrs

from specdsl.diagnose import gpus as gpu_facts
from specdsl.diagnose.arms import Arm, arm_of_run, text
from specdsl.diagnose.model import CATEGORIES, Diagnosis, Difference, _show
from specdsl.facts import engine_flags, flag_table
from specdsl.servers import adapter_for

# The tiers, best first (docs/diagnose.md has the same table).
T_IMPACT_DEFAULT = 0  # a high-impact effective setting the server chose itself
T_LOG = 1  # a warning (risk or silent choice) on one side only; a flag left out whose value the server then chose
T_IMPACT_DECLARED = 2  # a high-impact setting the spec changed
T_ENGINE = 3  # the engine's own version (the story's SGLang 0.5.6 -> 0.5.9)
T_ENV = 4  # an environment variable of the stack or server (CUDA_HOME picks the toolkit kernels build against)
T_IMPACT_STACK = 5  # the engine's kernels, torch/CUDA/NCCL, Python
T_WORKLOAD = 6  # the arms measured different loads
T_DEFAULT = 7  # another setting the server chose itself
T_DECLARED = 8  # another server flag or declared stack field
T_REST = 9  # other packages, other effective keys, the host block, facts of the log
# the GPU facts of the arms' preflights (diagnose.gpus): a different model or driver, a
# slowdown, another job on the GPU rank with the log's risks; the hardware's class
# (maximum SM clock, memory size) with the stack; the rest last
_GPU_TIERS = {"risk": T_LOG, "class": T_IMPACT_STACK, "rest": T_REST}

_CORE_PACKAGES = ("torch.cuda", "torch.nccl", "python", "cuda.nvcc")
# a declared stack field -> the resolved version that says the same (the difference shown)
_DECLARED_AS = {"cuda": "torch.cuda", "python": "python"}
NOISE = "noise: differs between launches of one configuration"


def compare(state, baseline_run, candidate_run, *, state_dir: Path, baseline=None, candidate=None,
            labels: tuple[str, str] | None = None, arms: tuple[str, str] = ("baseline", "candidate")) -> Diagnosis:
    """The diagnosis of `candidate_run` against `baseline_run` (benchmark
    RunRecords of `state`, whose folders are under `state_dir`; the same
    run twice for a paired result, whose arms it holds). `baseline` and
    `candidate` are the arms' config.Experiment when the spec is known;
    `arms` which arm of a paired run each side is."""
    base = arm_of_run(state, state_dir, baseline_run, side=arms[0], experiment=baseline,
                      label=labels[0] if labels else None)
    cand = arm_of_run(state, state_dir, candidate_run, side=arms[1], experiment=candidate,
                      label=labels[1] if labels else None)
    if baseline_run.id == candidate_run.id:
        base = attrs.evolve(base, workload=cand.workload)  # both arms of a pair ran the experiment's workload
    return compare_arms(base, cand)


def compare_arms(base: Arm, cand: Arm) -> Diagnosis:
    """The ranked differences of two arms."""
    adapter = adapter_for(cand.engine or base.engine)
    out = _effective_differences(base, cand, adapter)
    out += _server_arg_differences(base, cand, adapter, {d.key for d in out if d.silent_default})
    stack, resolved = _stack_differences(base, cand, adapter)
    out += stack
    where, notes = _where_differences(base, cand)
    out += where
    out += _log_differences(base, cand, out, resolved)
    order = {c: i for i, c in enumerate(CATEGORIES)}
    ranked = sorted(out, key=lambda d: (d.tier, order[d.category], d.key))
    shown = [_with_rank(d, i) for i, d in enumerate(x for x in ranked if not x.hidden)]
    hidden = [x for x in ranked if x.hidden]
    names = sorted(set(base.metrics) & set(cand.metrics))
    metrics = tuple((n, base.metrics.get(n), cand.metrics.get(n)) for n in names)
    return Diagnosis(base.label, cand.label, shown, notes=base.notes + cand.notes + tuple(notes), runs=(base.run_id, cand.run_id),
                     metrics=metrics, hidden=hidden, metrics_are=_metrics_are(base, cand))




def _effective_differences(base: Arm, cand: Arm, adapter) -> list[Difference]:
    """What the servers chose themselves that differs: each effective
    setting neither side declared (the declared ones are server_args
    differences), and the flags a release added at their defaults as one line."""
    impact = dict(adapter.impact)
    out: list[Difference] = []
    declared_both = base.declared & cand.declared
    volatile = frozenset(adapter.volatile) | base.volatile | cand.volatile
    engine = cand.engine or base.engine
    releases = (_release(adapter, base), _release(adapter, cand))
    added = _added_flags(engine, *releases)
    new_defaults: list[tuple[str, str]] = []
    for key in sorted(set(base.effective) | set(cand.effective)):
        b, c = _get(base.effective, key), _get(cand.effective, key)
        # what both declared is a server_args difference; the engine's version is the stack's
        if b == c or key in declared_both or key in ("log_patterns", "version"):
            continue
        # a side's value is the server's own choice when that side has one and did not declare it
        chosen = [a for a, v in ((base, b), (cand, c)) if v is not None and key not in a.declared]
        if not chosen:
            continue  # only what the specs asked for: the server_args difference says it
        same = _same_fact(key, base.effective, cand.effective)
        if same:  # the engine's internal record of a setting: the setting's line says it
            out.append(Difference("effective", key, b, c, silent_default=True, why=_silent_why(chosen), tier=T_DEFAULT,
                                  hidden=f"said by effective.{same}"))
            continue
        if b is None and key in added and key not in cand.declared and _at_default(c, added[key]):
            new_defaults.append((key, c))  # a flag the release added, at its default: one line for all of them
            continue
        silent = True
        if key in impact:
            tier, why = T_IMPACT_DEFAULT, f"{impact[key]}; {_silent_why(chosen)}"
        else:
            tier, why = T_DEFAULT, _silent_why(chosen)
        quote = next((a.sources.get(key, "") for a in reversed(chosen) if a.sources.get(key)), "")
        quote = fragment(quote, key)
        out.append(Difference("effective", key, b, c, silent_default=silent, why=why, tier=tier, quote=quote,
                              hidden=NOISE if key in volatile else ""))

    if new_defaults:
        n = len(new_defaults)
        out.append(Difference(
            "effective", f"{engine} {releases[1]} adds {n} flag{'s' if n != 1 else ''}, {'all ' if n > 1 else ''}at "
            f"{'their defaults' if n > 1 else 'its default'}", None, f"{n} flags", silent_default=True, tier=T_DEFAULT,
            why=f"not in {releases[0]}'s flag table; each value is {releases[1]}'s default (specdsl/facts)",
            members=new_defaults))
    return out


def _server_arg_differences(base: Arm, cand: Arm, adapter, defaulted: set[str]) -> list[Difference]:
    """The server flags as given that differ (`defaulted`: the effective
    settings a side's server chose itself)."""
    impact = dict(adapter.impact)
    dest = _dests(cand.engine or base.engine)
    volatile = frozenset(adapter.volatile) | base.volatile | cand.volatile
    out: list[Difference] = []
    for key in sorted(set(base.args) | set(cand.args)):
        b, c = base.args.get(key), cand.args.get(key)
        if b == c:
            continue
        d = dest.get(key, key.replace("-", "_"))
        tier, why = (T_IMPACT_DECLARED, impact[d]) if d in impact else (T_DECLARED, "a server flag as given")
        if d in defaulted:  # the flag a side left out, and its server then chose the value itself
            tier, why = T_LOG, f"{why}; unset on one side, where the server chose the value itself"
        out.append(Difference("server_args", key, b, c, why=why, tier=tier, bisectable=key != "model",
                              hidden=NOISE if d in volatile else ""))

    return out


def _stack_differences(base: Arm, cand: Arm, adapter) -> tuple[list[Difference], dict[str, Difference]]:
    """(the declared stack settings and resolved versions that differ, the
    resolved ones by package): a declaration the resolved version says is
    hidden behind it."""
    packages_impact = dict(adapter.impact_packages)
    out: list[Difference] = []
    engine_dist, _ = adapter.distribution(_Packages({**base.packages, **cand.packages}))
    resolved: dict[str, Difference] = {}
    for key in sorted(set(base.packages) | set(cand.packages)):
        b, c = base.packages.get(key), cand.packages.get(key)
        if b == c:
            continue
        if key == engine_dist:
            tier, why = T_ENGINE, packages_impact.get(key, "the serving engine itself")
        elif key in packages_impact or key in _CORE_PACKAGES:
            tier, why = T_IMPACT_STACK, packages_impact.get(key, _core_why(key))
        else:
            tier, why = T_REST, "resolved version differs"
        resolved[key] = Difference("stack", f"resolved.{key}", b, c, why=why, tier=tier)
    for key in sorted(set(base.stack) | set(cand.stack)):
        b, c = base.stack.get(key), cand.stack.get(key)
        if b == c:
            continue
        name = key.removeprefix("packages.")
        why = packages_impact.get(name, "a declared stack setting")
        bisectable = key.startswith("packages.") or key in ("python", "cuda")
        said = resolved.get(name if key.startswith("packages.") else _DECLARED_AS.get(key, ""))
        hidden = ""
        if said is not None:  # the resolved version says it, with the declaration beside it
            resolved[said.key.removeprefix("resolved.")] = attrs.evolve(
                said, why=f"{said.why}; declared {_show(b)} -> {_show(c)}")  # bisect changes the declared one
            hidden = f"said by {said.label}"
        out.append(Difference("stack", key, b, c, why=why, tier=T_DECLARED, bisectable=bisectable, hidden=hidden))
    out += resolved.values()

    return out, resolved


def _where_differences(base: Arm, cand: Arm) -> tuple[list[Difference], list[str]]:
    """(the environment variables, host blocks, GPUs and workloads that
    differ, the notes of what could not be compared)."""
    out: list[Difference] = []
    for key in sorted(set(base.env) | set(cand.env)):
        b, c = base.env.get(key), cand.env.get(key)
        if b != c:
            out.append(Difference("env", key, b, c, why="an environment variable of the stack or server",
                                  tier=T_ENV, bisectable=True))
    for key in sorted(set(base.host) | set(cand.host)):
        b, c = base.host.get(key), cand.host.get(key)
        if b != c:
            out.append(Difference("host", key, b, c, why="the arms ran on different host blocks", tier=T_REST))
    notes: list[str] = []
    if bool(base.gpus) != bool(cand.gpus):
        missing = base if not base.gpus else cand
        notes.append(f"{missing.label}: no GPU facts recorded by its host's preflight; the GPUs are not compared")
    elif base.gpus:
        for key in sorted(set(base.gpus) | set(cand.gpus)):
            b, c = base.gpus.get(key), cand.gpus.get(key)
            if b == c:
                continue
            kind = gpu_facts.tier_class(key, b, c)
            if kind is not None:
                out.append(Difference("host", key, b, c, why=gpu_facts.why_of(key), tier=_GPU_TIERS[kind]))
    for key in sorted(set(base.workload) | set(cand.workload)):
        b, c = base.workload.get(key), cand.workload.get(key)
        if b != c:
            out.append(Difference("workload", key, b, c, why="the arms measured different loads",
                                  tier=T_WORKLOAD, bisectable=True))

    return out, notes


def _log_differences(base: Arm, cand: Arm, out: list[Difference], resolved: dict[str, Difference]) -> list[Difference]:
    """One line per distinct fact of the logs only one side says (`out`:
    the differences so far, whose quoted silent choices are said there)."""
    logs: list[Difference] = []
    # with the launches it came from; a silent choice an effective difference
    # already quotes is said there
    quoted = {d.key for d in out if d.category == "effective" and d.silent_default and not d.hidden}
    seen_base, seen_cand = set(base.warnings), set(cand.warnings)
    for arm, other, letter in ((cand, seen_base, "candidate"), (base, seen_cand, "baseline")):
        for w in arm.warnings:
            if w in other:
                continue
            values = ("warned", None) if letter == "baseline" else (None, "warned")
            hidden = f"said by effective.{_CHOICE_KEY}" if _is_choice(w) and _CHOICE_KEY in quoted else ""
            logs.append(Difference("log", w, *values, why=f"only {arm.label}'s server log says so",
                                  tier=T_LOG if letter == "candidate" else T_REST, seen=_seen(arm, w), hidden=hidden))
    if _get(base.effective, "log_patterns") != _get(cand.effective, "log_patterns"):
        follows = any(d.tier == T_ENGINE for d in resolved.values())
        logs.append(Difference("log", "log_patterns", _get(base.effective, "log_patterns"),
                              _get(cand.effective, "log_patterns"), why="the logs were read with the patterns of their releases",
                              tier=T_REST, hidden="follows from the engine's version" if follows else ""))

    return logs


QUOTE_MAX = 200  # a log quote longer than this is cut to the fragment that says the fact


def fragment(quote: str, key: str) -> str:
    """The part of a log message that says `key`'s value: in a dump such
    as `server_args=ServerArgs(model_path='m', ..., key=value, ...)` the
    `key=value` item (brackets and quotes kept whole); a message without it
    and longer than QUOTE_MAX, its start, marked as cut. Never over
    QUOTE_MAX characters."""
    name = key.rsplit(".", 1)[-1]
    found = re.search(rf"(?<![\w.]){re.escape(name)}=", quote)
    if found is None:
        return quote if len(quote) <= QUOTE_MAX else quote[:QUOTE_MAX - 1] + "…"
    end, depth, inside = found.end(), 0, ""
    while end < len(quote):
        ch = quote[end]
        if inside:
            inside = "" if ch == inside else inside
        elif ch in "'\"":
            inside = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                break
            depth -= 1
        elif ch == "," and depth == 0:
            break
        end += 1
    item = quote[found.start():end].strip()
    if item == quote.strip():
        return item if len(item) <= QUOTE_MAX else item[:QUOTE_MAX - 1] + "…"
    item = item if len(item) <= QUOTE_MAX - 4 else item[:QUOTE_MAX - 5] + "…"
    return f"…{item}…" if len(quote) > len(item) else item


def _same_fact(key: str, base: dict, cand: dict) -> str:
    """The effective key that `key` (`internal_states.X`, SGLang's record of
    setting `X` per data-parallel rank) says again, with the same values on
    both sides; "" when it is a fact of its own."""
    m = re.fullmatch(r"internal_states(?:\[\d+\])?\.(.+)", key)
    if m is None or m[1] not in set(base) | set(cand):
        return ""
    same = all(_get(side, m[1]) == _get(side, key) for side in (base, cand))
    return m[1] if same else ""


def _release(adapter, arm: Arm) -> str | None:
    version = _get(arm.effective, "version")
    if version and version != "null":
        return version
    return adapter.distribution(_Packages(arm.packages))[1]


def _added_flags(engine: str, old: str | None, new: str | None) -> dict[str, str | None]:
    """dest -> default, as text, of the flags in `new`'s flag table that
    `old`'s has not (empty when the tables are one, or unknown)."""
    if not old or not new:
        return {}
    try:
        old_table, new_table = flag_table(engine, old), flag_table(engine, new)
    except (KeyError, ValueError):
        return {}
    if old_table is None or new_table is None or old_table.release == new_table.release:
        return {}
    before = {info.dest for info in engine_flags(engine, old_table.release).values()}
    return {info.dest: info.default for info in engine_flags(engine, new_table.release).values() if info.dest not in before}


def _at_default(value: str | None, default: str | None) -> bool:
    """Whether the reported `value` is the flag table's `default` (argparse's
    text: `False`, `0`, `[]`, `auto`)."""
    if value is None or default is None:
        return False
    if value.lower() == default.lower() or value.strip("'\"") == default.strip("'\""):
        return True
    try:
        return float(value) == float(default)
    except ValueError:
        return False


def _with_rank(d: Difference, rank: int) -> Difference:
    return attrs.evolve(d, rank=rank)


_CHOICE_KEY = "attention_backend"


def _is_choice(warning: str) -> bool:
    return warning.startswith("attention backend not specified:")  # logscan's words for the server's own choice


def _seen(arm: Arm, warning: str) -> str:
    """"4 of 4 launches: 1, 3, 5, 7" (the run's launch numbers, as apply's warnings name them)."""
    launches = arm.warned.get(warning, ())
    if not launches or not arm.launches:
        return ""
    word = "launch" if len(arm.launches) == 1 else "launches"
    return f"{len(launches)} of {len(arm.launches)} {word}: {', '.join(str(n) for n in launches)}"


def _metrics_are(base: Arm, cand: Arm) -> str:
    """What each metric figure is, in the one vocabulary (specdsl.stats.FIGURES)."""
    if base.measured == cand.measured:
        return base.measured
    return f"baseline: {base.measured}; candidate: {cand.measured}"


class _Packages:
    def __init__(self, packages: dict) -> None:
        self.packages = packages


def _get(mapping: dict, key: str) -> str | None:
    value = mapping.get(key)
    return None if value is None else text(value)


def _silent_why(chosen: list[Arm]) -> str:
    return f"chosen by the server: the spec of {' and '.join(a.label for a in chosen)} does not set it"


def _core_why(key: str) -> str:
    return {"torch.cuda": "the CUDA runtime torch was built for", "torch.nccl": "the NCCL torch bundles (TP all-reduce)",
            "python": "the interpreter"}.get(key, "")


def _dests(engine: str) -> dict[str, str]:
    return {name: info.dest for name, info in engine_flags(engine).items()}
