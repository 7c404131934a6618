"""Bisect a regression by experiment: which differences between a baseline
and its failed candidate reproduce the failure.

The differences are the bisectable ones of the diagnosis (server flags,
environment variables, declared packages and stack fields; workload
settings when the arms are measured apart). An intermediate experiment is
the baseline with some of the candidate's differences applied, built in
code (`intermediate`), planned against state and run through `apply_plan`
(results recorded, reused when their identity matches: an interrupted
bisect resumes from what was recorded), and judged by the candidate's own
assertions with the verdicts of a check. The search is `ddmin.minimize`.
"""

from __future__ import annotations

import hashlib
import re
from typing import Callable

import attrs

from specdsl.diagnose.ddmin import FAIL, PASS, UNRESOLVED, Search, minimize
from specdsl.model import config


class BisectError(Exception):
    """Why a bisect cannot start (a user's problem)."""


@attrs.frozen
class Trial:
    """One intermediate experiment: the differences applied, the verdicts,
    the answer, and whether its results were reused from state."""

    experiment: str
    applied: tuple[str, ...]
    answer: str
    reused: bool
    verdicts: tuple[tuple[str, str, str], ...] = ()  # (assertion, status, detail)
    failure: str = ""  # a step that failed: "ADDR: first line"

    @property
    def unbuildable(self) -> bool:
        """Its environment cannot be built (pins that conflict): no experiment
        of these differences can exist, so rerunning cannot decide it. Any other
        failed step (a launch, a benchmark) is an error: undecided."""
        return self.failure.startswith("provision.")


@attrs.define
class Bisection:
    candidate: str
    baseline: str
    differences: tuple[str, ...]
    trials: list = attrs.Factory(list)
    search: Search | None = None
    unapplicable: list = attrs.Factory(list)  # (difference label, why)

    @property
    def experiments_run(self) -> int:
        return sum(1 for t in self.trials if not t.reused)

    def trial_of(self, subset) -> Trial | None:
        return next((t for t in self.trials if set(t.applied) == set(subset)), None)

    @property
    def undecided(self) -> list:
        """The undecided subsets the answer rests on (`Search.undecided`),
        less those that cannot be built: the answer is the smallest among the
        experiments that can exist, and these could have changed it."""
        if self.search is None:
            return []
        return [s for s in self.search.undecided if not ((t := self.trial_of(s)) is not None and t.unbuildable)]


def intermediate(base: config.Experiment, cand: config.Experiment, applied, *, paired: bool) -> config.Experiment:
    """The baseline with the candidate's values of `applied` (Differences)
    put in. Everything of the candidate applied is the candidate's own
    configuration (the same identities, so its recorded result is reused).
    Named `CANDIDATE~bisect-HASH` after what it applies; baseline = the
    baseline experiment; the candidate's assertions; never promoted."""
    keys = sorted(d.label for d in applied)
    tag = hashlib.sha256("\n".join(keys).encode()).hexdigest()[:8]
    name = f"{cand.name}~bisect-{tag}"
    ref = config.BaselineRef("experiment", base.name)
    if _covers_all(base, cand, applied):
        return attrs.evolve(cand, name=name, baseline=ref, promote=None)
    server, stack, workload = base.server, base.stack, base.workload
    for d in applied:
        if d.category == "server_args":
            server = attrs.evolve(server, args=_set_pair(server.args, d.key, dict(cand.server.args).get(d.key)))
        elif d.category == "env":
            if d.key in dict(cand.server.env) or (d.key in dict(server.env) and d.key not in dict(cand.stack.env)):
                server = attrs.evolve(server, env=_set_pair(server.env, d.key, dict(cand.server.env).get(d.key)))
                stack = attrs.evolve(stack, env=_set_pair(stack.env, d.key, None))
            else:
                stack = attrs.evolve(stack, env=_set_pair(stack.env, d.key, dict(cand.stack.env).get(d.key)))
        elif d.category == "stack" and d.key.startswith("packages."):
            wanted = next((p for p in cand.stack.packages if _req_name(p) == d.key.removeprefix("packages.")), None)
            kept = tuple(p for p in stack.packages if _req_name(p) != d.key.removeprefix("packages."))
            stack = attrs.evolve(stack, packages=kept + ((wanted,) if wanted else ()))
        elif d.category == "stack" and d.key in ("python", "cuda"):
            stack = attrs.evolve(stack, **{d.key: getattr(cand.stack, d.key)})
        elif d.category == "workload":
            workload = attrs.evolve(workload, **{d.key: getattr(cand.workload, d.key)})
    if paired:
        workload = cand.workload  # both arms of a pair run the experiment's workload: the candidate's
    stack = attrs.evolve(stack, name=f"{stack.name}~{tag}") if stack != base.stack else stack
    return attrs.evolve(base, name=name, server=server, stack=stack, workload=workload, baseline=ref,
                        asserts=cand.asserts, promote=None, host=cand.host)


def _covers_all(base, cand, applied) -> bool:
    from specdsl.diagnose.arms import _env_of, _stack_of, text

    wanted = {("server_args", k) for k in set(dict(base.server.args)) | set(dict(cand.server.args))
              if text(dict(base.server.args).get(k)) != text(dict(cand.server.args).get(k))}
    b_env, c_env = _env_of(base), _env_of(cand)
    wanted |= {("env", k) for k in set(b_env) | set(c_env) if b_env.get(k) != c_env.get(k)}
    b_st, c_st = _stack_of(base), _stack_of(cand)
    wanted |= {("stack", k) for k in set(b_st) | set(c_st) if b_st.get(k) != c_st.get(k)}
    have = {(d.category, d.key) for d in applied}
    return wanted <= have and base.server.model == cand.server.model and base.server.command == cand.server.command


def _set_pair(pairs, key: str, value):
    kept = [(k, v) for k, v in pairs if k != key]
    if value is not None:
        kept.append((key, value))
    return tuple(kept)


def _req_name(req: str) -> str:
    m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", req)
    return (m.group(1) if m else req).lower().replace("_", "-")


def answer_of(verdicts) -> str:
    """FAIL when a verdict of the experiment failed, PASS when all passed,
    else UNRESOLVED (inconclusive, an error, nothing judged)."""
    statuses = [v.status for v in verdicts]
    if "fail" in statuses:
        return FAIL
    if statuses and all(s == "pass" for s in statuses):
        return PASS
    return UNRESOLVED


def bisect(cfg: config.Config, cand: config.Experiment, base: config.Experiment, differences, *, paired: bool,
           run: Callable[[config.Config, str, bool], tuple[bool, list, str]], budget: int | None = None) -> Bisection:
    """Search the differences (Differences, bisectable) for the smallest
    set that reproduces `cand`'s failure. `run(config, experiment,
    may_run)` plans and applies the experiment of that config and returns
    (reused, its verdicts, a failed step's first line or ""); when its
    results are not recorded and `may_run` is False it raises
    `ddmin.OutOfBudget` instead. `budget` bounds the experiments run
    (reused results are free)."""
    labels = tuple(d.label for d in differences)
    out = Bisection(cand.name, base.name, labels)
    by_label = {d.label: d for d in differences}

    def test(subset: tuple[str, ...]) -> str:
        exp = intermediate(base, cand, [by_label[x] for x in subset], paired=paired)
        others = tuple(e for e in cfg.experiments if e.name == base.name)
        trial_cfg = attrs.evolve(cfg, experiments=others + (exp,))
        reused, verdicts, failure = run(trial_cfg, exp.name, budget is None or out.experiments_run < budget)
        answer = answer_of(verdicts) if not failure else UNRESOLVED
        out.trials.append(Trial(exp.name, subset, answer, reused,
                                tuple((v.name, v.status, v.detail) for v in verdicts), failure))
        if out.trials[-1].unbuildable:
            out.unapplicable.append((", ".join(subset), failure))
        return answer

    out.search = minimize(labels, test)
    return out


__all__ = ["Bisection", "BisectError", "Trial", "answer_of", "bisect", "intermediate"]
