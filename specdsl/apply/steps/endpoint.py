"""benchmark of a server that is already running (`url`): nothing is
provisioned, launched or stopped. The server is asked what it is first
(servers.endpoint.probe: its identity and effective configuration); one
that does not answer fails the step with the reason. Then the built-in
client runs the workload against the URL, and the run is recorded with
what the server reported (`endpoint.*` in its effective: what the plan
compares the next time it is asked).

The prefix cache of a server others use is not emptied unless the
workload says `prefix_cache = "reset"`: unset means "warm" here
(docs/language.md)."""

from __future__ import annotations

import json

import attrs

from specdsl import bench, secrets, servers
from specdsl.apply import validity
from specdsl.apply.context import StepContext, StepFailed
from specdsl.apply.outcome import Outcome
from specdsl.apply.steps.common import completed, medians_of, prior_runs
from specdsl.bench.datasets import local_dataset
from specdsl.bench.tokenizer_choice import tokenizer_for
from specdsl.hosts import Cancelled
from specdsl.model.endpoint import identity_changes, recorded_identity, shown
from specdsl.paired_result import PairedResult
from specdsl.servers.endpoint import EndpointError, authorization, base_url, probe


def run(ctx: StepContext) -> Outcome:
    walk, step = ctx.walk, ctx.step
    exp = step.payload["experiment"]
    server = step.payload["endpoint"]
    url = shown(server.url)
    ctx.begin()
    ctx.progress(f"asking the server at {url} what it is (nothing is launched)")
    try:
        report = probe(server)
    except EndpointError as exc:
        raise StepFailed(f"existing server: {exc}") from None
    engine = server.engine or report.identity.get("engine") or ""
    recorded = ctx.writer.state.result(step.identity)
    same = recorded is not None and not identity_changes(recorded_identity(recorded.effective or {}), report.identity)
    prior = [] if walk.plan.rerun or not same else prior_runs(ctx, exp.workload.runs)
    workload = exp.workload
    if workload.prefix_cache is None:
        workload = attrs.evolve(workload, prefix_cache="warm")  # a server others use: its cache is not emptied
    if prior:
        workload = attrs.evolve(workload, runs=workload.runs - len(prior))
    workload = attrs.evolve(workload, dataset=local_dataset(workload.dataset, walk.spec_dir))
    folder = ctx.new_run()
    adapter = _adapter(engine)
    tokenizer = tokenizer_for(workload, server.model, walk.spec_dir)
    try:
        result = bench.run_benchmark(workload, base_url(server), server.model, folder, quirks=adapter.quirks,
                                     tokenizer=tokenizer, progress=ctx.progress, stop=ctx.stop,
                                     server=adapter.server_side(), first_run=len(prior),
                                     authorization=authorization(server))
    except bench.BenchError as exc:
        raise StepFailed(f"existing server at {url}: {secrets.redact(str(exc), _secrets(server))}", str(folder)) from None
    except Cancelled:
        raise
    if prior:
        result = bench.BenchResult(runs=tuple(prior) + tuple(attrs.evolve(r, index=len(prior) + i) for i, r in enumerate(result.runs)),
                                   settings=result.settings)
        (folder / "result.json").write_text(json.dumps(bench.stamped(result.to_json()), indent=1, sort_keys=True) + "\n")
    effective = report.recorded()
    (folder / "effective.json").write_text(json.dumps(secrets.redact_tree(effective, _secrets(server)), sort_keys=True,
                                                      default=str))
    for w in result.warnings():
        walk.result.warn(f"{ctx.addr}: {w}")
    metrics = medians_of(validity.valid(result.runs))
    run_ = attrs.evolve(ctx.writer.run_record(step, ctx.run_id, folder, ctx.started, "completed", metrics=metrics,
                                              effective=effective),
                        runs=len(validity.valid(result.runs)), invalid=validity.invalid_of(result.runs))
    ctx.writer.step_done(step, run_)
    summary = ", ".join(f"{k} {metrics[k]:.4g}" for k in ("output_throughput", "median_ttft_ms") if k in metrics)
    bad = validity.note_invalid(ctx, result.runs, exp.workload.runs)
    return completed(ctx, ", ".join(x for x in (f"existing server at {url}, nothing launched", summary, bad) if x),
                     str(folder))


def _adapter(engine: str):
    """The adapter whose client quirks and server side fit what the server
    reported itself as: an engine specdsl knows, else the plain OpenAI one
    (`command`)."""
    from specdsl.facts.engines import BY_NAME

    return servers.adapter_for(engine if engine in BY_NAME else "command")


def _secrets(server) -> list[str]:
    from specdsl.servers.endpoint import split_credentials

    _, auth = split_credentials(server.url)
    return [s for s in (server.api_key, auth[1] if auth else None) if s]


def run_pairs(ctx: StepContext, decide_more) -> Outcome:
    """A candidate and its baseline that are both servers already running:
    no launch to repeat, so the run is the unit. Both are asked what they
    are, each warmed up once (`warmup` requests), then pair after pair one
    run of each arm, alternating ABBA BAAB (graph.pairs.arm_order) so that
    drift of the machines or the network falls on both arms alike; each
    pair's two runs send the same prompts. After the first pairs, more
    while a gating verdict is undecided (`decide_more`) and `max_runs`
    allows. The result has the paired design's form (pairs of blocks of
    one run each, no launches), read by the verdicts as any pairs are.
    Recorded pairs are continued only while both servers still report
    what they were recorded against."""
    from specdsl.graph.build import ENDPOINT_PAIR_DESIGN
    from specdsl.graph.pairs import BASELINE, CANDIDATE, arm_order
    from specdsl.plan.looks import first_pairs, looks_of, schedule_for

    walk, step = ctx.walk, ctx.step
    exp, base = step.payload["experiment"], step.payload["paired"]
    arms = {BASELINE: base.server, CANDIDATE: exp.server}
    names = {BASELINE: base.name, CANDIDATE: exp.name}
    ctx.begin()
    reports = _reports(ctx, arms, names)
    prior, got = _continued(ctx, reports)
    workload = exp.workload
    if workload.prefix_cache is None:
        workload = attrs.evolve(workload, prefix_cache="warm")  # servers others use: their caches are not emptied
    w_run = attrs.evolve(workload, runs=1, warmup=0, warmup_time=None, warmup_tolerance=None,
                         dataset=local_dataset(workload.dataset, walk.spec_dir))
    looks = dict(got.looks or looks_of(workload, 1))
    budget = schedule_for(workload, looks, max(0, walk.plan.more)).max
    first = first_pairs(workload, looks)
    runs = [bench.RunResult.from_json(r) for r in got.runs]
    pairs = [p.to_json() for p in got.complete_pairs()]
    folder = ctx.new_run()
    warned: list[str] = []
    adapters = {}
    rates: dict[str, float] = {}  # arm -> the most requests a second it has reached (a duration run's fresh prompts)
    for letter, server in arms.items():
        engine = server.engine or reports[letter].identity.get("engine") or ""
        adapters[letter] = _adapter(engine)

    def doc() -> dict:
        from specdsl import __version__

        keep = {i for p in pairs for b in p["blocks"] for i in b["runs"]}
        return {"runs": [r.to_json() for r in runs if r.index in keep], "pairs": pairs, "arms": names, "launches": [],
                "effective": secrets.redact_tree({k: reports[k].effective for k in arms}, _all_secrets(arms)),
                "design": ENDPOINT_PAIR_DESIGN, "looks": looks, "side_by_side": False, "specdsl": __version__,
                "unit": "run"} | ({"continued": len(got.pairs)} if prior else {})

    def measure(letter: str, i: int, sub: str, wl) -> list:
        server = arms[letter]
        tokenizer = tokenizer_for(wl, server.model, walk.spec_dir)
        say = lambda m: ctx.progress(f"pair {i + 1} arm {letter} ({names[letter]}): {m}")  # noqa: E731
        try:
            result = bench.run_benchmark(wl, base_url(server), server.model, folder / sub,
                                         quirks=adapters[letter].quirks, tokenizer=tokenizer, progress=say,
                                         stop=ctx.stop, server=adapters[letter].server_side(), first_run=i,
                                         authorization=authorization(server), rate_hint=rates.get(letter, 0.0))
        except bench.BenchError as exc:
            raise StepFailed(f"pair {i + 1} arm {letter}, existing server at {shown(server.url)}: "
                             f"{secrets.redact(str(exc), _secrets(server))}", str(folder)) from None
        warned.extend(f"{ctx.addr} pair {i + 1} arm {letter} ({names[letter]}): {w}" for w in result.warnings())
        rates[letter] = max(rates.get(letter, 0.0), result.peak_rate())
        return list(result.runs)

    try:
        if workload.warmup > 0:  # once per server: there is no launch to warm up after
            rates.update(_warm_up(ctx, arms, names, adapters, attrs.evolve(w_run, warmup=workload.warmup), folder))
        i = len(pairs)
        while i < first or (i < budget and decide_more(doc())):
            blocks = []
            for letter in arm_order(i, (BASELINE, CANDIDATE)):
                made = measure(letter, i, f"pair-{i}-{letter}", w_run)
                start = len(runs)
                runs.extend(attrs.evolve(r, index=start + k) for k, r in enumerate(made))
                blocks.append({"arm": letter, "runs": list(range(start, len(runs))), "launch": None})
            pairs.append({"pair": i, "blocks": blocks})
            i += 1
    except Cancelled:
        if pairs:
            _record_pairs(ctx, doc(), reports)
        raise
    for w in warned:
        walk.result.warn(w)
    metrics = _record_pairs(ctx, doc(), reports)
    summary = ", ".join(f"{k} {metrics[k]:.4g}" for k in ("output_throughput", "median_ttft_ms") if k in metrics)
    return completed(ctx, f"{len(pairs)} pairs of runs (ABBA) on two servers already running, nothing launched; "
                          f"candidate {summary}", str(folder))


def _reports(ctx: StepContext, arms: dict, names: dict) -> dict:
    """What each arm's server already running says it is (nothing is launched)."""
    reports = {}
    for letter, server in arms.items():
        ctx.progress(f"asking the server at {shown(server.url)} (arm {letter}, {names[letter]}) what it is (nothing is launched)")
        try:
            reports[letter] = probe(server)
        except EndpointError as exc:
            raise StepFailed(f"existing server (arm {letter}, {names[letter]}): {exc}") from None
    return reports


def _continued(ctx: StepContext, reports: dict) -> tuple[dict, PairedResult]:
    """(the recorded result to continue, as its document and typed): the
    pairs an earlier apply recorded, while both servers still report what
    they were recorded against and no --rerun; else ({}, no pairs)."""
    from specdsl.apply.steps import paired
    from specdsl.graph.build import ENDPOINT_PAIR_DESIGN
    from specdsl.graph.pairs import BASELINE, CANDIDATE
    from specdsl.model.endpoint import BASELINE_PREFIX, EFFECTIVE_PREFIX

    recorded = ctx.writer.state.result(ctx.step.identity)
    same = recorded is not None and not any(
        identity_changes(recorded_identity(recorded.effective, prefix), reports[letter].identity)
        for letter, prefix in ((BASELINE, BASELINE_PREFIX), (CANDIDATE, EFFECTIVE_PREFIX)))
    prior = paired.prior_pairs(ctx) if same and not ctx.walk.plan.rerun else {}
    got = PairedResult.of(prior)
    if got is None or got.design != ENDPOINT_PAIR_DESIGN:
        return {}, PairedResult((), ())
    return prior, got


def _warm_up(ctx: StepContext, arms: dict, names: dict, adapters: dict, w_warm, folder) -> dict[str, float]:
    """Each arm's server warmed up once, baseline first (`w_warm`'s warm-up
    requests): arm -> the most requests a second it reached."""
    from specdsl.graph.pairs import BASELINE, CANDIDATE

    rates = {}
    for letter in (BASELINE, CANDIDATE):
        server = arms[letter]
        ctx.progress(f"arm {letter} ({names[letter]}): warming up, {w_warm.warmup} requests")
        try:
            got = bench.warm_up(w_warm, base_url(server), server.model, folder / f"warmup-{letter}",
                                quirks=adapters[letter].quirks, tokenizer=tokenizer_for(w_warm, server.model, ctx.walk.spec_dir),
                                stop=ctx.stop, authorization=authorization(server))
            rates[letter] = float(got.get("peak_rate") or 0.0)
        except bench.BenchError as exc:
            raise StepFailed(f"arm {letter}, existing server at {shown(server.url)}: warm-up: "
                             f"{secrets.redact(str(exc), _secrets(server))}", str(folder)) from None
    return rates


def _record_pairs(ctx: StepContext, doc: dict, reports: dict) -> dict:
    from specdsl.apply.steps import paired
    from specdsl.graph.pairs import BASELINE, CANDIDATE
    from specdsl.model.endpoint import BASELINE_PREFIX

    effective = reports[CANDIDATE].recorded() | {BASELINE_PREFIX + k: v for k, v in reports[BASELINE].identity.items()}
    return paired.record(ctx, doc, effective, [])


def _all_secrets(arms: dict) -> list[str]:
    return [s for server in arms.values() for s in _secrets(server)]
