"""Graph + state + refresh -> Plan. Pure: no clock, no network, no disk.

Each step gets an action and a reason, decided in dependency order so a
step knows what happens upstream:
- benchmark: `=` when a completed result with its identity is recorded
  with at least the workload's `runs` (an unrecorded count is enough),
  else `>` (with the fields that changed since the recorded run, or how
  many more runs are needed);
- launch: needed only while one of its benchmarks runs (or `keep_running`):
  `=` when a server with its identity answers, `-/+` when the recorded server
  at its address has another identity, else `+`;
- provision: needed only for a launch that starts a server: `=` when the
  environment exists, `-/+` / `+` as for launch;
- preflight: `>` when its host starts a server, else `=`;
- check: `?` always (cheap, re-evaluated);
- promote: from the recorded verdicts of its checks' identities: `!` when
  they will be new (a benchmark it reads runs, a check has none recorded) or
  all passed unseen by the track's latest promotion; `=` when one did not
  pass or that promotion saw them (nothing to do until something changes),
  and `=` (held) for each of two or more candidates of one track that would
  pass on recorded verdicts alone;
- teardown: `-` when a server will be running at the end of the walk and
  is not kept.
"""

from __future__ import annotations

import attrs

import json
from typing import Any

from specdsl import secrets
from specdsl.graph.build import Graph
from specdsl.graph.pairs import launches, share_key, sharing_groups
from specdsl.model.gpus import plan_note
from specdsl.names import natural_sorted
from specdsl.plan.budget import Limit, budget_advice, limit_of, own_fit, plan_worsts
from specdsl.plan.looks import block_of, first_pairs, max_runs
from specdsl.plan.model import Action, Change, FieldChange, Plan, Refresh
from specdsl.plan.reasons import Why, render
from specdsl.state.promotions import Index, verdict_of
from specdsl.stats import significant
from specdsl.verdict.decision import Status as VerdictStatus

_DECIDE = {"benchmark": 0, "launch": 1, "provision": 2, "preflight": 3, "check": 4, "promote": 5, "teardown": 6}
_UPSTREAM_KEYS = {"host": "preflight", "provision": "provision", "launch": "launch", "benchmark": "benchmark"}


def flatten(content: Any, prefix: str = "") -> dict[str, Any]:
    """Nested dicts -> {"a.b": value}; lists and empty maps stay whole values."""
    if isinstance(content, dict) and content:
        out: dict[str, Any] = {}
        for key in sorted(content):
            out.update(flatten(content[key], f"{prefix}.{key}" if prefix else key))
        return out
    return {prefix: content}


def field_changes(before: dict, after: dict) -> tuple[FieldChange, ...]:
    a, b = flatten(before), flatten(after)
    out = []
    for path in sorted(set(a) | set(b)):
        if a.get(path) != b.get(path):
            out.append(FieldChange(_short(path), a.get(path), b.get(path)))
    return tuple(out)


def _short(path: str) -> str:
    # "server.args.attention-backend" -> "args.attention-backend"
    head, _, rest = path.partition(".")
    return rest if head in ("server", "stack", "workload") and rest else path


def fmt_value(value: Any) -> str:
    if value is None:
        return "(none)"
    return json.dumps(value, ensure_ascii=False)


def describe(fields: tuple[FieldChange, ...], upstream: dict[str, str]) -> str:
    """`args.attention-backend: "triton" -> "flashinfer"`, or the upstream
    step that changes, when that is the trigger."""
    parts = []
    # a benchmark recorded before its identity held the request template
    # (specdsl.facts.client): one line for it, not one per field
    unrecorded = sorted(f.path[: -len(".body.model")] for f in fields if f.before is None and f.after is not None
                        and f.path.startswith("request") and f.path.endswith(".body.model"))
    if unrecorded and all(f.before is None for f in fields if f.path.startswith("request.")):
        unrecorded = ["request"]  # no part of it was recorded (both arms of a paired one)
    if unrecorded:
        fields = tuple(f for f in fields if not any(f.path.startswith(p + ".") for p in unrecorded))
        parts += [f"{p}: not in the recorded step (recorded before specdsl kept the request template)" for p in unrecorded]
    for f in fields:
        if f.path in _UPSTREAM_KEYS:
            parts.append(f"{upstream.get(f.path, f.path)} changes")
        elif isinstance(f.before, list) and isinstance(f.after, list):
            added = [x for x in f.after if x not in f.before]
            removed = [x for x in f.before if x not in f.after]
            # a sensitive item is named, never shown (its digest neither)
            bits = [f"+{fmt_value(x)}" for x in added if not secrets.is_marked(x)]
            bits += [f"-{fmt_value(x)}" for x in removed if not secrets.is_marked(x)]
            if any(secrets.is_marked(x) for x in added + removed):
                bits.insert(0, SENSITIVE_CHANGED)
            parts.append(f"{f.path}: " + (" ".join(bits) if bits else "reordered"))
        elif secrets.is_marked(f.before) and secrets.is_marked(f.after):
            parts.append(f"{f.path}: {SENSITIVE_CHANGED}")
        else:
            parts.append(f"{f.path}: {fmt_value(secrets.shown(f.before))} -> {fmt_value(secrets.shown(f.after))}")
    return ", ".join(parts)


SENSITIVE_CHANGED = "(sensitive value changed)"


def make_plan(
    graph: Graph,
    state,
    refresh: Refresh,
    *,
    spec: str,
    spec_digest: str,
    variables: dict[str, str] | None = None,
    rerun: bool = False,
    targets: tuple[str, ...] = (),
    more: int = 0,
    durations=None,
    max_launches: int | None = None,
    max_time: float | None = None,
) -> Plan:
    """`durations` (cost.Durations, read by specdsl.plan.durations): the
    recorded launch and run durations the costs are estimated from; None:
    none known (every time is unknown). `max_launches`, `max_time`: the
    apply-wide budget of paired comparisons (specdsl.plan.budget)."""
    from specdsl.plan.cost import Durations

    d = _Deciding(graph, state, refresh, durations if durations is not None else Durations(), rerun, more, spec,
                  _select(graph, targets))
    order = graph.order()
    # Decide bottom-up needs: benchmarks first (they decide what must run).
    for addr in order:
        if graph.steps[addr].kind == "benchmark" and addr in d.selected:
            _benchmark_need(d, addr)
    d.shared = shared_blocks(graph, [a for a in order if a in d.bench_runs and a not in d.going_on and a not in d.more_runs],
                             state)
    # Decide in need order (a launch needs to know its benchmarks, a
    # provision its launches); emit in topological order below.
    for addr in sorted((a for a in order if a in d.selected), key=lambda a: (_DECIDE[graph.steps[a].kind], a)):
        step = graph.steps[addr]
        prior, fields = d.changed_fields(step)
        action, why, facts, note, endpoint = _DECIDERS[step.kind](d, step, prior, fields)
        d.actions[addr] = action
        d.changes[addr] = Change(addr, step.kind, action, render(why, **facts) + note, step.identity, fields, step.deps,
                                 step.after, step.experiments, step.host, endpoint=endpoint, why=why,
                                 shares=d.shared.get(addr, ()) if action is Action.RUN else ())
    # promotions of one track are decided together: two candidates that
    # would pass on recorded verdicts alone are held, as apply would hold them
    for addr, (action, reason) in _promote_actions(graph, d.candidacy).items():
        d.actions[addr] = action
        d.changes[addr] = attrs.evolve(d.changes[addr], action=action, reason=reason)
    _decide_preflights(d)
    costs = _costs(graph, [a for a in order if a in d.bench_runs], d.more_runs, d.actions, d.durations, d.going_on, state,
                   d.shared)
    worsts, apply_worst = plan_worsts(graph, costs, state, d.durations, d.run_counts, d.results,
                                      Limit(max_launches, max_time), rerun=rerun)
    return Plan(
        spec=spec,
        spec_digest=spec_digest,
        variables=tuple(sorted((variables or {}).items())),
        lineage=state.lineage if state is not None else None,
        serial=state.serial if state is not None else 0,
        changes=tuple(d.changes[a] for a in order if a in d.changes),
        drift=tuple(refresh.drift),
        rerun=rerun,
        targets=tuple(targets),
        more=more,
        costs=costs,
        undecided=tuple(d.undecided),
        max_launches=max_launches,
        max_time=max_time,
        worsts=worsts,
        apply_worst=apply_worst,
    )


@attrs.define
class _Deciding:
    """What `make_plan` knows and has decided so far: the inputs, and what
    each step's decision leaves for the steps decided after it."""

    graph: Graph
    state: Any
    refresh: Refresh
    durations: Any
    rerun: bool
    more: int
    spec: str
    selected: set
    results: dict = attrs.field(init=False)
    steps_recorded: dict = attrs.field(init=False)
    # run id -> how many runs its metrics summarize (None: not recorded, as
    # in states written before the count was)
    run_counts: dict = attrs.field(init=False)
    bench_runs: set = attrs.Factory(set)
    more_runs: dict = attrs.Factory(dict)  # benchmark addr -> (runs recorded, runs wanted)
    capped: dict = attrs.Factory(dict)  # benchmark addr -> the budget that caps its first pairs
    going_on: dict = attrs.Factory(dict)  # paired benchmark addr -> (pairs recorded, budget, undecided checks)
    shared: dict = attrs.Factory(dict)  # paired benchmark addr -> its group sharing the baseline's launches
    running_at_end: set = attrs.Factory(set)
    candidacy: dict = attrs.Factory(dict)  # promote addr -> (new | ready | stop, reason)
    undecided: list = attrs.Factory(list)
    actions: dict = attrs.Factory(dict)
    changes: dict = attrs.Factory(dict)
    _index: Index | None = None  # the state's verdict runs, indexed when a step needs them
    _noise_runs: dict | None = None  # check address -> its latest verdict run that recorded its pairs' noise

    def __attrs_post_init__(self) -> None:
        state = self.state
        self.results = dict(state.results) if state is not None else {}
        self.steps_recorded = {s.addr: s for s in getattr(state, "steps", ())} if state is not None else {}
        self.run_counts = {r.id: getattr(r, "runs", None) for r in getattr(state, "runs", ())} if state is not None else {}

    def index(self) -> Index:
        if self._index is None:
            self._index = Index(self.state)
        return self._index

    def noise_runs(self) -> dict:
        if self._noise_runs is None:
            self._noise_runs = measured_noise_runs(self.state)
        return self._noise_runs

    def upstream_names(self, step) -> dict[str, str]:
        names = {}
        for dep in step.deps:
            names[self.graph.steps[dep].kind if self.graph.steps[dep].kind != "preflight" else "host"] = dep
        return names

    def changed_fields(self, step):
        prior = self.steps_recorded.get(step.addr)
        if prior is None or prior.identity == step.identity:
            return prior, ()
        return prior, field_changes(prior.content_dict(), step.content)


def _benchmark_need(d: _Deciding, addr: str) -> None:
    """Whether benchmark `addr` runs (d.bench_runs), and why: more runs
    wanted (d.more_runs, d.capped), an undecided comparison going on
    (d.going_on)."""
    step = d.graph.steps[addr]
    if d.rerun or step.identity not in d.results:
        d.bench_runs.add(addr)
        return
    # `runs` is not part of the identity: a result with fewer runs than
    # the workload wants asks for the rest. An unknown count is enough.
    recorded = d.run_counts.get(d.results[step.identity])
    workload = step.payload["experiment"].workload
    paired = "paired" in step.payload
    per_launch = block_of(workload, d.state, step.payload["experiment"].name) if paired else None
    wanted = first_pairs(workload, block=per_launch) if paired else workload.runs
    if paired and recorded is not None and recorded < wanted:
        # its own budget (max_launches, max_time) may stop it before its first look
        fit = own_fit(step, d.state, d.durations, done=recorded, most=wanted)
        if fit < wanted:
            d.capped[addr], wanted = limit_of(workload).text(), fit
    if recorded is not None and recorded < wanted:
        d.bench_runs.add(addr)
        d.more_runs[addr] = (recorded, wanted)
    elif paired and recorded is not None:
        # an undecided comparison goes on where its budget allows: its
        # recorded pairs are kept, only new pairs launch servers
        open_checks = _undecided_checks(d.graph, addr, d.index())
        budget = max_runs(workload, per_launch) + max(0, d.more)
        # its own budget (max_launches, max_time) reached: nothing more is measured
        budget = min(budget, own_fit(step, d.state, d.durations, done=recorded, most=budget))
        if open_checks and recorded < budget:
            d.bench_runs.add(addr)
            d.going_on[addr] = (recorded, budget, open_checks)


def _decide_benchmark(d: _Deciding, step, prior, fields):
    addr, run = step.addr, d.results.get(step.identity)
    changes = describe(fields, d.upstream_names(step))
    facts: dict = {}
    if addr not in d.bench_runs:
        action, why, facts = Action.REUSE, Why.RESULTS_RECORDED, {"run": run}
    elif d.rerun and step.identity in d.results:
        action, why, facts = Action.RUN, Why.RERUN, {"run": run}
    elif addr in d.more_runs:
        have, want = d.more_runs[addr]
        action, why, facts = Action.RUN, Why.MORE_RUNS, {"have": have, "want": want, "within": d.capped.get(addr)}
    elif addr in d.going_on:
        have, budget, checks = d.going_on[addr]
        action, why = Action.RUN, Why.CONTINUE
        facts = {"have": have, "budget": budget, "checks": checks, "run": run, "more": d.more,
                 "launches": launches(budget - have)}
    else:
        action, why = Action.RUN, (Why.FIELDS_CHANGED if changes else Why.NO_RESULTS)
        facts = {"changes": changes}
    note = _benchmark_note(d, step, action)
    endpoint = None
    if "endpoint" in step.payload:  # what refresh heard the servers say
        changed, said, endpoint = _existing(step, d.refresh, d.state, d.results)
        if changed and action is Action.REUSE and not d.rerun:
            action, why, facts, note = Action.RUN, Why.SERVER_CHANGED, {"run": run, "changed": changed}, ""
        note += "; " + said
        if action is Action.RUN:
            d.bench_runs.add(step.addr)
    return action, why, facts, note, endpoint


def _benchmark_note(d: _Deciding, step, action: Action) -> str:
    """What the plan adds to a running benchmark's reason: the cost of its
    pairs, the GPUs both arms take, the command a command workload runs."""
    note = ""
    if action is Action.RUN and "paired" in step.payload and "endpoint" in step.payload:
        note += "" if step.addr in d.going_on else "; " + endpoint_pairs_text(step, d.state)
    elif action is Action.RUN and "paired" in step.payload:
        note += "" if step.addr in d.going_on else "; " + paired_cost(step, d.state, d.shared.get(step.addr, ()))
        gpus = plan_note(step.payload["host"], [step.payload["paired"].server, step.payload["experiment"].server])
        note += f"; both arms on {gpus}" if gpus else ""
    if action is Action.RUN and step.payload["experiment"].workload.command:
        note += "; runs " + command_preview(step.payload["experiment"])
    return note


def _decide_launch(d: _Deciding, step, prior, fields):
    addr = step.addr
    needed = any(b in d.bench_runs for b in d.graph.succ[addr]) or step.payload["server"].keep_running
    if step.identity in d.refresh.servers:  # running now; its teardown (unless kept) stops it
        d.running_at_end.add(addr)
        return Action.REUSE, Why.SERVER_RUNNING, {}, "", None
    if not needed:
        return Action.REUSE, Why.SERVER_NOT_NEEDED, {}, "", None
    d.running_at_end.add(addr)
    if fields:
        action, why = Action.REPLACE, Why.FIELDS_CHANGED
    else:
        action, why = Action.CREATE, (Why.SERVER_NOT_RUNNING if prior is not None else Why.NEW_SERVER)
    gpus = plan_note(step.payload["host"], [step.payload["server"]])
    return action, why, {"changes": describe(fields, d.upstream_names(step))}, f"; {gpus}" if gpus else "", None


def _decide_provision(d: _Deciding, step, prior, fields):
    users = d.graph.succ[step.addr]
    needed = any(d.actions.get(u) in (Action.CREATE, Action.REPLACE) for u in users if d.graph.steps[u].kind == "launch") \
        or any(u in d.bench_runs for u in users if "paired" in d.graph.steps[u].payload)
    if step.identity in d.refresh.environments:
        return Action.REUSE, Why.ENV_EXISTS, {}, "", None
    if not needed:
        return Action.REUSE, Why.ENV_NOT_NEEDED, {}, "", None
    if fields:
        return Action.REPLACE, Why.FIELDS_CHANGED, {"changes": describe(fields, d.upstream_names(step))}, "", None
    if prior is not None:
        return Action.CREATE, Why.ENV_MISSING, {}, "", None
    return Action.CREATE, Why.NEW_ENV, {"summary": _stack_summary(step)}, "", None


def _decide_preflight(d: _Deciding, step, prior, fields):
    return Action.REUSE, Why.NOTHING_TO_START, {}, "", None  # until what its host starts is known: _decide_preflights


def _decide_check(d: _Deciding, step, prior, fields):
    reads = list(step.deps)
    base = step.content.get("baseline")
    if isinstance(base, dict) and "track" in base:
        if "arm" in base:  # paired, but no lock to rebuild the track from
            reads.append(f"track {base['track']} baseline (no stack lock to rebuild it from: its comparisons are errors)")
        else:
            reads.append(f"track {base['track']}'s recorded result (baseline_mode = \"recorded\": drift not controlled)")
    noise = noise_note(step, d.state, d.spec, d.noise_runs())
    gone = _undecided(d.graph, step, d.state, d.index(), d.bench_runs, d.durations, d.spec)
    if gone is not None:
        d.undecided.append(gone)
    return Action.CHECK, Why.READS, {"reads": reads, "noise": noise}, "", None


def _decide_promote(d: _Deciding, step, prior, fields):
    d.candidacy[step.addr] = _promote_candidacy(d.graph, step, d.state, d.index(), d.bench_runs, d.results)
    return Action.REUSE, Why.PROMOTION, {"text": d.candidacy[step.addr][1]}, "", None  # decided per track after


def _decide_teardown(d: _Deciding, step, prior, fields):
    if step.payload["launch"] in d.running_at_end:
        return Action.DESTROY, Why.STOP_SERVER, {}, "", None
    return Action.REUSE, Why.NOTHING_RUNNING, {}, "", None


_DECIDERS = {"benchmark": _decide_benchmark, "launch": _decide_launch, "provision": _decide_provision,
             "preflight": _decide_preflight, "check": _decide_check, "promote": _decide_promote,
             "teardown": _decide_teardown}


def _decide_preflights(d: _Deciding) -> None:
    """A preflight runs before what its host starts: decided last."""
    graph = d.graph
    for addr, change in list(d.changes.items()):
        if change.kind != "preflight":
            continue
        starts = [s for s in graph.downstream(addr)
                  if graph.steps[s].kind in ("provision", "launch") and d.actions.get(s) in (Action.CREATE, Action.REPLACE)
                  or s in d.bench_runs and "paired" in graph.steps[s].payload]
        if starts:
            d.changes[addr] = attrs.evolve(change, action=Action.RUN, why=Why.BEFORE_STARTS, fields=(),
                                           reason=render(Why.BEFORE_STARTS, starts=natural_sorted(starts)))


def _status(run) -> VerdictStatus | None:
    """The status of a verdict run's verdict; None for no run, or a run without one."""
    verdict = verdict_of(run)
    return verdict.status if verdict is not None else None


def _undecided_checks(graph: Graph, addr: str, index: Index) -> list[str]:
    """The checks of benchmark `addr` whose current verdict is inconclusive."""
    out = []
    for dep in graph.succ[addr]:
        check = graph.steps[dep]
        if check.kind == "check" and _status(index.verdict(dep, check.identity)) is VerdictStatus.INCONCLUSIVE:
            out.append(dep)
    return natural_sorted(out)


def shared_blocks(graph: Graph, fresh: list[str], state=None) -> dict[str, tuple[str, ...]]:
    """The paired benchmarks of `fresh` (measured from nothing in this
    plan, in plan order) that share their baseline's launches, each with
    its group (specdsl.graph.pairs.sharing_groups; the first leads). The
    plan carries each group in its changes (`Change.shares`), which the walk
    measures as planned (apply/steps/paired.py:sharing_followers)."""
    keys = {}
    for addr in fresh:
        step = graph.steps[addr]
        if "paired" in step.payload and "endpoint" not in step.payload:  # servers already running share nothing
            exp = step.payload["experiment"]
            keys[addr] = share_key(step, step.payload["host"].name, block_of(exp.workload, state, exp.name))
    return sharing_groups(keys)


def _costs(graph: Graph, running: list[str], more_runs: dict, actions: dict, durations, going_on: dict, state=None,
           shared: dict | None = None) -> tuple:
    """The cost of each benchmark that runs, in plan order (specdsl.plan.cost);
    an undecided comparison that goes on measures one pair before its next
    look (past the horizon, every pair is a look) and at most its budget,
    with the runs per launch the walk will use (plan.looks.block_of: a
    calibrated suggestion when the workload declares none). A benchmark
    that shares its baseline's launches with one before it in `shared`
    counts only its candidate's launches and runs for the pairs they share."""
    from specdsl.plan.cost import Cost, plain_cost
    from specdsl.plan.cost import paired_cost as cost_of_pairs

    out, launched, said = [], set(), set()  # said: (host, environment) whose cold first launch a cost names
    for addr in running:
        step = graph.steps[addr]
        workload = step.payload["experiment"].workload
        have, want = more_runs.get(addr, (0, None))
        block = block_of(workload, state, step.payload["experiment"].name) if "paired" in step.payload else None
        if "paired" in step.payload and addr in going_on:
            have, budget, _ = going_on[addr]
            out.append(cold(cost_of_pairs(addr, step.content, workload, done=have, first=1, most=budget, durations=durations,
                                          block=block), graph, step, durations, said))
            continue
        if "paired" in step.payload and "endpoint" in step.payload:  # runs alternate on two running servers: no launch
            first = (want - have) if want is not None else first_pairs(workload, block=1)
            most = max_runs(workload, 1)
            out.append(Cost(addr, 2 * first, 2 * most, 0, 0, first, most, None, None,
                            "no recorded run of this workload on these servers"))
            continue
        if "paired" in step.payload:
            first = (want - have) if want is not None else first_pairs(workload, block=block)
            group = (shared or {}).get(addr, ())
            out.append(cold(cost_of_pairs(addr, step.content, workload, done=have, first=first, most=max_runs(workload, block),
                                          durations=durations, block=block,
                                          shares_with=group[0] if group and group[0] != addr else None), graph, step, durations, said))
            continue
        if "endpoint" in step.payload:  # a server already running: no launch to count
            runs = (want - have) if want is not None else workload.runs
            out.append(plain_cost(addr, step.content, workload, runs=runs, launch=None, durations=durations))
            continue
        launch = step.deps[0]
        starts = actions.get(launch) in (Action.CREATE, Action.REPLACE) and launch not in launched
        launched.add(launch)
        runs = (want - have) if want is not None else workload.runs
        cost = plain_cost(addr, step.content, workload, runs=runs,
                          launch=graph.steps[launch].identity if starts else None, durations=durations)
        out.append(cold(cost, graph, step, durations, said) if starts else cost)
    return tuple(out)


def _host_key(decl) -> str:
    """The machine a host declaration means, as its `Host.key` reads
    (specdsl.hosts.registry.host_key; planning imports no host)."""
    ssh = getattr(decl, "ssh", None)
    return f"ssh:{ssh}" if ssh else "local"


def cold(cost, graph: Graph, step, durations, said: set):
    """`cost` with the note of the benchmark's launches that find their JIT
    caches empty (specdsl.plan.cost.cold_note): the first benchmark, in plan
    order, to launch a stack on a host says it (`said`: those said)."""
    from specdsl.plan.cost import cold_note

    if "paired" in step.payload:
        host = _host_key(step.payload["host"])
        names = [step.payload["paired"].name, step.payload["experiment"].name]
        provisions = [graph.by_experiment[n]["provision"] for n in names if n in graph.by_experiment]
    else:
        launch = graph.steps[step.deps[0]]
        host, provisions = _host_key(launch.payload["host"]), [launch.deps[0]]
    stacks = [(p.split(".", 1)[-1], host, graph.steps[p].identity) for p in provisions if p in graph.steps]
    stacks = [x for x in stacks if (x[1], x[2]) not in said]
    said.update((x[1], x[2]) for x in stacks)
    note = cold_note(stacks, durations.caches)
    return attrs.evolve(cost, cold=note) if note else cost


def _undecided(graph: Graph, step, state, index: Index, bench_runs: set[str], durations, spec: str):
    """An `Undecided` (specdsl.plan.cost) when the check's current verdict
    is INCONCLUSIVE and nothing in this plan measures it again; else None."""
    from specdsl.plan.cost import undecided_of

    bench_addr = step.deps[0]
    if bench_addr in bench_runs:
        return None
    run = index.verdict(step.addr, step.identity)
    if _status(run) is not VerdictStatus.INCONCLUSIVE:
        return None
    exp = step.payload["experiment"]
    not_promoted = ""
    if exp.promote:
        not_promoted = f"nothing was promoted to track {exp.promote}: {step.addr} was inconclusive, and a promotion needs every check to pass"
    gone = undecided_of(step, run, graph.steps[bench_addr], not_promoted=not_promoted, durations=durations,
                        calibrated=_calibrated(step, state), spec=spec, block=block_of(exp.workload, state, exp.name))
    return budget_advice(gone, graph.steps[bench_addr], state, durations)


def _calibrated(step, state) -> float | None:
    """The noise `specdsl calibrate` recorded for a ratio check's metric, or None."""
    from specdsl.model.assert_shape import noise_key, shape_of

    shape = shape_of(step.payload["assertion"].expr)
    if shape.kind != "ratio":
        return None
    exp = step.payload["experiment"]
    runs = [r for r in getattr(state, "runs", ()) if r.step == f"calibrate.{exp.name}" and r.status == "completed"]
    return dict(runs[-1].metrics).get(f"noise.{noise_key(shape.candidate)}") if runs else None


def measured_noise_runs(state) -> dict:
    """Check address -> its latest verdict run that recorded the noise of its
    pairs (its verdict's `noise`, the sd of their log ratios), indexed once."""
    out = {}
    for run in getattr(state, "runs", ()):
        if run.status == "completed" and run.verdict is not None and run.verdict.noise is not None:
            out[run.step] = run
    return out


def noise_note(step, state, spec: str, noise_runs: dict | None = None) -> str:
    """For a ratio assertion: the smallest effect it can detect, from the
    noise `specdsl calibrate` recorded, or how to measure that noise."""
    from specdsl.model.assert_shape import noise_key, shape_of

    exp = step.payload["experiment"]
    shape = shape_of(step.payload["assertion"].expr)
    if shape.kind != "ratio":
        return ""
    metric = noise_key(shape.candidate)
    runs = [r for r in getattr(state, "runs", ()) if r.step == f"calibrate.{exp.name}" and r.status == "completed"]
    sd = dict(runs[-1].metrics).get(f"noise.{metric}") if runs else None
    source = f"calibrated {runs[-1].finished}" if sd is not None else ""
    if noise_runs is None:
        noise_runs = measured_noise_runs(state)
    measured = noise_runs.get(step.addr) if sd is None else None
    if measured is not None:  # the pairs of an earlier verdict measured it: no calibration needed
        sd = measured.verdict.noise
        pairs = measured.verdict.decision.n if measured.verdict.decision is not None else 0
        source = f"measured by the {pairs} pairs of verdict run {measured.id}"
    if sd is None:
        return f"; noise of {metric} unknown: measure it with `specdsl calibrate {exp.name} {spec}`"
    from specdsl.verdict import mde_ratio

    block = block_of(exp.workload, state, exp.name)
    first, most = first_pairs(exp.workload, block=block), max_runs(exp.workload, block)
    at = f"{mde_ratio(sd, first) - 1:.1%} at {first} pairs"
    if most > first:
        at += f", {mde_ratio(sd, most) - 1:.1%} at {most}"
    return f"; detectable effect {at} (noise {significant(sd, 3)}, {source})"


def command_preview(exp) -> str:
    """A command workload's argv as it will run: `{model}`, `{host}` and
    `{base_url}` expanded, `{port}` left as written (a free port is picked at
    launch), as are `{python}`, `{bin}` (the stack's environment, known once
    provisioned) and `{result_file}` (one per run); each argument quoted as a shell would need it, a sensitive
    value (`--api-key VALUE`) shown as `(sensitive)`."""
    import shlex

    from specdsl.model.placeholders import expand_argv

    server = exp.server
    values = {"host": "127.0.0.1", "model": server.model}
    if server.port is not None:
        values["port"] = str(server.port)
        values["base_url"] = f"http://127.0.0.1:{server.port}"
    else:
        values["base_url"] = "http://127.0.0.1:{port}"
    return shlex.join(secrets.redact_argv(expand_argv(exp.workload.command, values)))


def paired_cost(step, state=None, group: tuple[str, ...] = ()) -> str:
    """What a paired benchmark measured from nothing will cost, as its
    plan line says: pairs to the first look, launches, runs (with the runs
    per launch the walk will use: plan.looks.block_of), and the budget
    adaptive pairs may use (an undecided one that goes on says its own:
    "continue: ..."). In a `group` that shares the baseline's launches
    (`shared_blocks`), the first counts them and says who else reads
    them; the others count their candidate's launches only."""
    workload = step.payload["experiment"].workload
    block = block_of(workload, state, step.payload["experiment"].name)
    pairs = first_pairs(workload, block=block)
    most = max_runs(workload, block)
    against = step.payload["paired"].name
    if "track_lock" in step.payload:
        against = f"track {step.payload['experiment'].baseline.name} rebuilt from {step.payload['track_lock']}"
    others = [a for a in group if a != step.addr]
    if group and group[0] != step.addr:
        text = (f"paired with {against}, each pair's baseline launch shared with {group[0]}: "
                f"{pairs} pair{'s' if pairs != 1 else ''} to the first look, {pairs} launch{'es' if pairs != 1 else ''} "
                f"of its own, {pairs * block} runs")
    else:
        text = (f"paired with {against} (two fresh launches a pair): {pairs} pair{'s' if pairs != 1 else ''} "
                f"to the first look, {launches(pairs)} launches, {2 * pairs * block} runs")
        if others:
            text += f"; each baseline launch also serves {', '.join(others)}"
    if most > pairs:
        text += f"; up to {most - pairs} more pairs while undecided"
    return text


HELD = "held:"  # the reason of a promotion held because several candidates of its track passed


def _promote_candidacy(graph: Graph, step, state, index: Index, bench_runs: set[str], results: dict) -> tuple[str, str]:
    """What a promote step would do, from recorded verdicts of its checks'
    identities: `new` (verdicts will be new: a benchmark it reads runs, or a
    check has none recorded), `ready` (every recorded verdict passed and
    none is known to the track's latest promotion) or `stop` (a recorded
    verdict did not pass, or the track's latest promotion saw these
    verdicts: nothing to do until something changes)."""
    exp = step.payload["experiment"]
    track = step.content["track"]
    when = f"to track {track} when every check passes"
    bench_addr = graph.by_experiment[exp.name]["benchmark"]
    checks = [d for d in step.deps if graph.steps[d].kind == "check"]
    if not checks:
        return "stop", f"not promoted: {exp.name} has no gating assertion"
    reads = [bench_addr]
    if exp.baseline is not None and exp.baseline.kind == "experiment":
        reads.append(graph.by_experiment.get(exp.baseline.name, {}).get("benchmark"))
    if any(a in bench_runs for a in reads):
        return "new", when
    result = results.get(graph.steps[bench_addr].identity)
    latest = state.latest_promotion(track) if state is not None else None
    if latest is not None and latest.run == result and latest.experiment == exp.name:
        return "stop", f"track {track} already has this result (promoted {latest.time})"
    verdicts = [index.verdict(c, graph.steps[c].identity) for c in checks]
    if any(v is None for v in verdicts):
        return "new", when
    for c, v in zip(checks, verdicts):
        status = _status(v)
        if status is not VerdictStatus.PASS:
            word = {VerdictStatus.FAIL: "failed", VerdictStatus.INCONCLUSIVE: "was inconclusive",
                    VerdictStatus.ERROR: "could not be decided"}.get(status, "did not pass")
            return "stop", f"not promoted: {c} {word} (run {v.id}); nothing changed since"
    if not index.new_to([result, *(v.id for v in verdicts)], latest):
        return "stop", f"not promoted: track {track} went to {latest.experiment} (run {latest.run}) after these verdicts"
    return "ready", when


def _promote_actions(graph: Graph, candidacy: dict[str, tuple[str, str]]) -> dict[str, tuple[Action, str]]:
    """Per track: every pending candidate is `!`, except when two or more
    would pass on recorded verdicts alone (apply would hold them again):
    then each is `=`, held, until the user chooses one (`--target`)."""
    by_track: dict[str, list[str]] = {}
    for addr in sorted(candidacy):
        by_track.setdefault(graph.steps[addr].content["track"], []).append(addr)
    out: dict[str, tuple[Action, str]] = {}
    for track, addrs in by_track.items():
        pending = [a for a in addrs if candidacy[a][0] != "stop"]
        held = len(pending) > 1 and all(candidacy[a][0] == "ready" for a in pending)
        names = ", ".join(graph.steps[a].payload["experiment"].name for a in pending)
        for addr in addrs:
            kind, reason = candidacy[addr]
            if kind == "stop":
                out[addr] = (Action.REUSE, reason)
            elif held:
                out[addr] = (Action.REUSE, f"{HELD} {names} passed for track {track}; promote one with --target NAME")
            else:
                out[addr] = (Action.PROMOTE, reason)
    return out


def _existing(step, refresh: Refresh, state, results: dict):
    """(what no longer matches, the words, endpoint) of the benchmark of a
    server already running (`url`): said in words (nothing is launched or
    stopped); a recorded result whose server now reports another identity
    (engine, version, model, max_model_len) than it was recorded against no
    longer matches (each such change: the benchmark runs again, Why.SERVER_CHANGED);
    a server refresh could not reach is said (the spec stays valid; apply
    fails that step)."""
    from specdsl.model.endpoint import identity_changes, identity_text, recorded_identity

    from specdsl.model.endpoint import BASELINE_PREFIX, EFFECTIVE_PREFIX

    if "arms" in step.content:  # both arms servers already running
        arms = [(BASELINE_PREFIX, "baseline", step.content["arms"]["baseline"]["endpoint"]["url"]),
                (EFFECTIVE_PREFIX, "candidate", step.content["arms"]["candidate"]["endpoint"]["url"])]
    else:
        arms = [(EFFECTIVE_PREFIX, None, step.content["endpoint"]["url"])]
    run_id = results.get(step.identity)
    run = state.run(run_id) if state is not None and run_id is not None else None
    endpoints, notes, changed = [], [], []
    for prefix, arm, url in arms:
        asked = refresh.endpoint(url)
        endpoint: dict = {"url": url, "launched": False} | ({"arm": arm} if arm else {})
        note = f"existing server at {url}" + (f" ({arm})" if arm else "") + ": nothing is launched or stopped"
        if asked is None:
            note += " (not asked: --no-refresh)"
        else:
            identity, error = asked
            if error:
                endpoint["refresh_error"] = error
                note += f"; refresh: it {error} (the spec is valid; apply fails this step unless the server answers then)"
            else:
                endpoint["reported"] = identity
                note += f"; it reports {identity_text(identity)}"
                recorded = recorded_identity(run.effective, prefix) if run is not None and run.effective else {}
                if recorded and identity_changes(recorded, identity):
                    changed.append(f"the server at {url} now reports " + ", ".join(identity_changes(recorded, identity)))
        endpoints.append(endpoint)
        notes.append(note)
    return changed, "; ".join(notes), endpoints[0] if len(endpoints) == 1 else {"arms": endpoints}


def endpoint_pairs_text(step, state=None) -> str:
    """The plan's words for a comparison of two servers already running:
    the run is the unit (no launch to repeat), one run of each arm a pair,
    in ABBA order."""
    workload = step.payload["experiment"].workload
    pairs = first_pairs(workload, block=1)
    against = step.payload["paired"].name
    return (f"paired with {against}, both servers already running: runs alternate ABBA (no launch: the run is the "
            f"unit), {pairs} pair{'s' if pairs != 1 else ''} of runs to the first look, {2 * pairs} runs, "
            f"at most {max_runs(workload, 1)} pairs")


def _stack_summary(step) -> str:
    stack = step.content["stack"]
    bits = [f"python {stack['python']}"]
    if stack.get("cuda"):
        bits.append(f"cuda {stack['cuda']}")
    n = len(stack["packages"])
    bits.append(f"{n} package{'s' if n != 1 else ''}")
    return "new environment: " + ", ".join(bits)


def _select(graph: Graph, targets: tuple[str, ...]) -> set[str]:
    """Every step, or with --target only the targets' steps and what they need."""
    if not targets:
        return set(graph.steps)
    from specdsl.names import target_matches

    chosen: set[str] = set()
    for exp, addrs in graph.by_experiment.items():
        if any(target_matches(t, exp) for t in targets):  # an experiment, a cell, or a slice of its matrix
            for a in addrs.values():
                for addr in (a if isinstance(a, tuple) else (a,)):
                    chosen.add(addr)
                    chosen |= graph.upstream(addr)
    # the teardown of a chosen launch
    for addr, step in graph.steps.items():
        if step.kind == "teardown" and step.payload["launch"] in chosen:
            chosen.add(addr)
    return chosen

