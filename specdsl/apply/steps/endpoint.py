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
import os
import threading

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
from specdsl.servers.endpoint import EndpointError, base_url, probe

_KEY_LOCK = threading.Lock()  # the client reads its bearer token from OPENAI_API_KEY (bench.client.request_headers)


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
    adapter = servers.adapter_for(engine) if engine in ("sglang", "vllm", "transformers") else servers.adapter_for("command")
    tokenizer = tokenizer_for(workload, server.model, walk.spec_dir)
    try:
        with _api_key(server.api_key):
            result = bench.run_benchmark(workload, base_url(server), server.model, folder, quirks=adapter.quirks,
                                         tokenizer=tokenizer, progress=ctx.progress, stop=ctx.stop,
                                         server=adapter.server_side(), first_run=len(prior))
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


def _secrets(server) -> list[str]:
    from specdsl.servers.endpoint import split_credentials

    _, auth = split_credentials(server.url)
    return [s for s in (server.api_key, auth[1] if auth else None) if s]


class _api_key:
    """OPENAI_API_KEY set to `key` while the client runs (its worker
    processes inherit it), then put back; one endpoint run at a time sets it."""

    def __init__(self, key: str | None) -> None:
        self.key = key

    def __enter__(self):
        if self.key:
            _KEY_LOCK.acquire()
            self.before = os.environ.get("OPENAI_API_KEY")
            os.environ["OPENAI_API_KEY"] = self.key
        return self

    def __exit__(self, *exc):
        if self.key:
            if self.before is None:
                os.environ.pop("OPENAI_API_KEY", None)
            else:
                os.environ["OPENAI_API_KEY"] = self.before
            _KEY_LOCK.release()
