"""Compare two arms: every difference, ranked by likely impact.

The ranking rule (docs/diagnose.md) puts first what the engine's adapter
knows moves performance (`Adapter.impact`, `Adapter.impact_packages`,
beside each engine in specdsl/servers), and among those what the server
chose on its own above what the spec declared; then warnings of the log
that name a risk or a silent choice; then the rest. Each tier is a small
number; the rank is the place in the sorted list.
"""

from __future__ import annotations

from pathlib import Path

from specdsl.diagnose import gpus as gpu_facts
from specdsl.diagnose.arms import Arm, arm_of_run, text
from specdsl.diagnose.model import CATEGORIES, Diagnosis, Difference
from specdsl.facts import engine_flags
from specdsl.servers import adapter_for

# The tiers, best first (docs/diagnose.md has the same table).
T_IMPACT_DEFAULT = 0  # a high-impact effective setting the server chose itself
T_LOG = 1  # a warning (risk or silent choice) on one side only; a flag left out whose value the server then chose
T_IMPACT_DECLARED = 2  # a high-impact setting the spec changed
T_IMPACT_STACK = 3  # the engine, its kernels, torch/CUDA/NCCL
T_WORKLOAD = 4  # the arms measured different loads
T_DEFAULT = 5  # another setting the server chose itself
T_DECLARED = 6  # another server flag, environment variable or declared stack field
T_REST = 7  # other packages, other effective keys, the host block, facts of the log
# the GPU facts of the arms' preflights (diagnose.gpus): a different model or driver, a
# slowdown, another job on the GPU rank with the log's risks; the hardware's class
# (maximum SM clock, memory size) with the stack; the rest last
_GPU_TIERS = {"risk": T_LOG, "class": T_IMPACT_STACK, "rest": T_REST}

_CORE_PACKAGES = ("torch.cuda", "torch.nccl", "python")


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
        import attrs

        base = attrs.evolve(base, workload=cand.workload)  # both arms of a pair ran the experiment's workload
    return compare_arms(base, cand)


def compare_arms(base: Arm, cand: Arm) -> Diagnosis:
    """The ranked differences of two arms."""
    adapter = adapter_for(cand.engine or base.engine)
    impact = dict(adapter.impact)
    packages_impact = dict(adapter.impact_packages)
    dest = _dests(cand.engine or base.engine)
    out: list[Difference] = []

    declared_both = base.declared & cand.declared
    for key in sorted(set(base.effective) | set(cand.effective)):
        b, c = _get(base.effective, key), _get(cand.effective, key)
        # what both declared is a server_args difference; the engine's version is the stack's
        if b == c or key in declared_both or key in ("log_patterns", "version"):
            continue
        # a side's value is the server's own choice when that side has one and did not declare it
        chosen = [a for a, v in ((base, b), (cand, c)) if v is not None and key not in a.declared]
        if not chosen:
            continue  # only what the specs asked for: the server_args difference says it
        silent = True
        if key in impact:
            tier, why = T_IMPACT_DEFAULT, f"{impact[key]}; {_silent_why(chosen)}"
        else:
            tier, why = T_DEFAULT, _silent_why(chosen)
        out.append(Difference("effective", key, b, c, silent_default=silent, why=why, tier=tier))

    defaulted = {d.key for d in out if d.silent_default}
    for key in sorted(set(base.args) | set(cand.args)):
        b, c = base.args.get(key), cand.args.get(key)
        if b == c:
            continue
        d = dest.get(key, key.replace("-", "_"))
        tier, why = (T_IMPACT_DECLARED, impact[d]) if d in impact else (T_DECLARED, "a server flag as given")
        if d in defaulted:  # the flag a side left out, and its server then chose the value itself
            tier, why = T_LOG, f"{why}; unset on one side, where the server chose the value itself"
        out.append(Difference("server_args", key, b, c, why=why, tier=tier, bisectable=key != "model"))

    for key in sorted(set(base.stack) | set(cand.stack)):
        b, c = base.stack.get(key), cand.stack.get(key)
        if b == c:
            continue
        name = key.removeprefix("packages.")
        why = packages_impact.get(name, "a declared stack setting")
        out.append(Difference("stack", key, b, c, why=why, tier=T_DECLARED,
                              bisectable=key.startswith("packages.") or key in ("python", "cuda")))
    for key in sorted(set(base.packages) | set(cand.packages)):
        b, c = base.packages.get(key), cand.packages.get(key)
        if b == c:
            continue
        if key in packages_impact or key in _CORE_PACKAGES:
            tier, why = T_IMPACT_STACK, packages_impact.get(key, _core_why(key))
        else:
            tier, why = T_REST, "resolved version differs"
        out.append(Difference("stack", f"resolved.{key}", b, c, why=why, tier=tier))

    for key in sorted(set(base.env) | set(cand.env)):
        b, c = base.env.get(key), cand.env.get(key)
        if b != c:
            out.append(Difference("env", key, b, c, why="an environment variable of the stack or server",
                                  tier=T_DECLARED, bisectable=True))
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

    seen_base, seen_cand = set(base.warnings), set(cand.warnings)
    for w in cand.warnings:
        if w not in seen_base:
            out.append(Difference("log", w, None, "warned", why=f"only {cand.label}'s server log says so", tier=T_LOG))
    for w in base.warnings:
        if w not in seen_cand:
            out.append(Difference("log", w, "warned", None, why=f"only {base.label}'s server log says so", tier=T_REST))
    if _get(base.effective, "log_patterns") != _get(cand.effective, "log_patterns"):
        out.append(Difference("log", "log_patterns", _get(base.effective, "log_patterns"),
                              _get(cand.effective, "log_patterns"), why="the logs were read with the patterns of their releases",
                              tier=T_REST))

    order = {c: i for i, c in enumerate(CATEGORIES)}
    ranked = sorted(out, key=lambda d: (d.tier, order[d.category], d.key))
    ranked = [_with_rank(d, i) for i, d in enumerate(ranked)]
    names = sorted(set(base.metrics) & set(cand.metrics))
    metrics = tuple((n, base.metrics.get(n), cand.metrics.get(n)) for n in names)
    return Diagnosis(base.label, cand.label, ranked, notes=base.notes + cand.notes + tuple(notes), runs=(base.run_id, cand.run_id),
                     metrics=metrics)


def _with_rank(d: Difference, rank: int) -> Difference:
    import attrs

    return attrs.evolve(d, rank=rank)


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
