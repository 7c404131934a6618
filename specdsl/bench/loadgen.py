"""The load generator: warmup, then `runs` repetitions of `requests`
streaming requests, closed loop (`concurrency` streams, each sending its
next request as soon as the previous one ends) or open loop (`rate`
requests/s, gamma-distributed gaps with shape `burstiness`: 1 is a Poisson
process; the schedule is seeded and, as in `vllm bench serve`, scaled so
that the last request leaves at `requests / rate` s). Open loop does not
cap the number of streams in flight. With `client_processes` > 1 the
streams (closed loop) or arrivals (open loop) are spread over that many
worker processes, started once for the benchmark, with one start for all
(specdsl.bench.workers); the records and metrics are those one process
gives, the client's load is each worker's.

Every run sends fresh prompts (seeded from the workload's seed and the
run's index; a JSONL file's own prompts excepted: see
specdsl.bench.datasets) on the same schedule. Warmup requests (`warmup` of
them, at most `concurrency` at a time, with prompts of their own) run once
before the first run and are not recorded; with `warmup_time` (or
`warmup_tolerance`) the warm-up is steady: it ramps up to the workload's
concurrency, then sends slices of it until two agree and the server's log
(`jit`, a probe from the caller) shows no compile during them, or raises
`Unsettled` (specdsl.bench.steady). A compile line inside a measured run
makes the run invalid (specdsl.bench.validity). Before each run the server's
prefix cache is reset where its engine offers a way (`ServerSide`, from the
adapter; the workload's `prefix_cache`, "reset" by default: "warm" and
"off" ask nothing, a refused reset makes the run invalid) and its
Prometheus counters are read, and again after the run
(specdsl.bench.serverside); the client's own load is measured during it
(specdsl.bench.monitor: a run it limited is invalid), and the run watches
(specdsl.bench.conditions) are told when it begins and ends. Between runs
the client waits `cooldown` seconds.
Each run's requests go to `run-N.requests.jsonl` in `out_dir` and the whole
result, with the request settings (specdsl.bench.settings), to
`result.json`.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from specdsl import private
from specdsl.bench.client import make_session
from specdsl.bench.conditions import RunWatch
from specdsl.bench.datasets import Prompt, PromptSource, Tokenizer, load_tokenizer
from specdsl.bench.lengths import short_outputs_warning
from specdsl.bench.steady import (DEFAULT_BOUND_S, jit_lines, settled, slice_rate, unsettled_reason,
                                  unsteady_warning)
from specdsl.bench.monitor import (LoopMonitor, achieved_concurrency, achieved_rate, client_limits, lag_warnings, merge_clients,
                                   schedule_lateness_ms)
from specdsl.bench.quirks import BASIC, ClientQuirks, exact_len_fields
from specdsl.bench.serverside import NOTHING, ServerSide, read_metrics, reset_cache, run_figures
from specdsl.bench.settings import request_settings
from specdsl.bench.timings import RequestTiming, write_records
from specdsl.bench.results import BenchError, BenchResult, RunResult, Unsettled, describe_failures, stamped
from specdsl.bench.settings import steady_tolerance
from specdsl.bench.validity import jit_invalid, run_invalid
from specdsl.bench.runner import StreamRunner
from specdsl.bench.stats import compute_metrics
from specdsl.bench.workers import WorkerPool, closed_jobs, open_jobs


def endpoint_url(base_url: str, endpoint: str) -> str:
    """The URL of `endpoint` ("completions" or "chat") under `base_url`
    (with or without a trailing /v1)."""
    base = base_url.rstrip("/")
    if not base.endswith("/v1"):
        base += "/v1"
    if endpoint == "completions":
        return base + "/completions"
    if endpoint == "chat":
        return base + "/chat/completions"
    raise BenchError(f"unknown endpoint {endpoint!r}: use 'completions' or 'chat'")


def request_body(prompt: Prompt, model: str, quirks: ClientQuirks, ignore_eos: bool | None) -> bytes:
    """The JSON body of one streaming request (see `specdsl.bench.quirks`)."""
    body: dict[str, Any] = {"model": model, "stream": True, "max_tokens": prompt.output_len}
    if prompt.messages is not None:
        body["messages"] = prompt.messages
    else:
        body["prompt"] = prompt.prompt
    if quirks.stream_usage:
        body["stream_options"] = {"include_usage": True}
    body.update(exact_len_fields(quirks, ignore_eos, prompt.output_len))
    return json.dumps(body, separators=(",", ":")).encode()


def arrival_offsets(n: int, rate: float, burstiness: float, seed: int) -> list[float]:
    """Seconds from the start of a run at which each of `n` requests leaves:
    cumulative gamma(shape=burstiness, scale=1/(rate*burstiness)) gaps,
    scaled so the last one is at n / rate."""
    if rate <= 0 or burstiness <= 0:
        raise BenchError(f"rate and burstiness must be positive (rate={rate}, burstiness={burstiness})")
    rng = random.Random(seed)
    scale = 1.0 / (rate * burstiness)
    offsets: list[float] = []
    total = 0.0
    for _ in range(n):
        total += rng.gammavariate(burstiness, scale)
        offsets.append(total)
    if offsets and offsets[-1] > 0:
        factor = (n / rate) / offsets[-1]
        offsets = [t * factor for t in offsets]
    return offsets


def _count_tokens(records: list[RequestTiming], texts: dict[int, str], tokenizer: Tokenizer | None) -> None:
    """Output token counts for records whose server sent no usage."""
    for rec in records:
        if rec.tokens_from == "usage":
            continue
        if tokenizer is not None and rec.i in texts:
            rec.output_tokens = len(tokenizer.encode(texts[rec.i]))
            rec.tokens_from = "tokenizer"
        else:
            rec.output_tokens = len(rec.chunks_s)
            rec.tokens_from = "chunks"


def fresh_reuse(records: list[RequestTiming], count: int) -> int:
    """Requests of a run of `duration` that reused one of its `count`
    prompts (request i sends prompt i mod count)."""
    return sum(1 for r in records if r.i >= count)


def _fill_prompt_lens(records: list[RequestTiming], prompts: list[Prompt]) -> None:
    for rec in records:
        if rec.prompt_tokens == 0:
            rec.prompt_tokens = prompts[rec.i % len(prompts)].prompt_len


def run_benchmark(
    workload: Any,
    base_url: str,
    model: str,
    out_dir: Path,
    *,
    quirks: ClientQuirks = BASIC,
    tokenizer: str | None = None,
    progress: Callable[[str], None] | None = None,
    stop: threading.Event | None = None,
    server: ServerSide = NOTHING,
    first_run: int = 0,
    watches: Sequence[RunWatch] = (),
    jit: Callable[[], list] | None = None,
    rate_hint: float = 0.0,
    authorization: str | None = None,
) -> BenchResult:
    """Run the built-in load generator for `workload` (a
    `specdsl.model.config.Workload`) against the server at `base_url`,
    asking for `model`, within what the server accepts (`quirks`, from
    its adapter); `tokenizer` (a folder with tokenizer.json)
    builds exact-length text prompts and counts tokens when the server sends
    no usage. `server` (from the adapter) says how to reset the server's
    prefix cache and which of its Prometheus counters to read. `first_run`
    is the index of the first run made here (runs accumulate: a run's
    prompts follow its index). `watches` are told when each run begins and
    ends (specdsl.bench.conditions: the GPUs sampled); what each saw is kept
    with the run, and a run one of them finds disturbed is invalid. `jit()`
    returns the compile lines the server's log gained since it was last
    called (each with `kind` and `line`: specdsl.servers.jit); None: the
    log is not read. `rate_hint` is the most requests a second this
    server's launch has reached before this call (its warm-up's and
    earlier runs' `peak_rate`, which a caller that makes one call a run
    carries over): a run of `duration` makes its fresh prompts from it
    (`_Bench.prompt_count`). `authorization`: the `Authorization` header's
    value for every request (a secret: sent, never written; to worker
    processes on their stdin). Writes per-request records under `out_dir`.

    Raises BenchError when the workload is invalid, when every warmup
    request or every request of a run failed (with the reasons and their
    counts), or when `stop` is set before the end; the runs that ended
    before it are the error's `runs`. A run whose failures exceed the
    workload's `max_failed`, or whose outputs ended short of an exact
    length, or during which the log shows a compile, is marked invalid
    (specdsl.bench.validity). A steady warm-up that did not settle raises
    `Unsettled` (a BenchError) before any run."""
    _check_workload(workload)
    bench, settings = _prepare(workload, base_url, model, out_dir, quirks, tokenizer, progress, stop, server, first_run, jit,
                               authorization)
    bench.watches = tuple(watches)
    bench.peak_rate = max(0.0, float(rate_hint))
    try:
        runs = _run_loop(bench.session(bench.all_runs))
    except BenchError as exc:
        exc.runs = tuple(bench.done)  # what ended before it: the caller may keep them
        raise
    result = BenchResult(runs=tuple(runs), settings=settings)
    private.write_text(Path(out_dir) / "result.json", json.dumps(stamped(result.to_json()), indent=1, sort_keys=True) + "\n")
    return result


def warm_up(
    workload: Any,
    base_url: str,
    model: str,
    out_dir: Path,
    *,
    quirks: ClientQuirks = BASIC,
    tokenizer: str | None = None,
    progress: Callable[[str], None] | None = None,
    stop: threading.Event | None = None,
    jit: Callable[[], list] | None = None,
    authorization: str | None = None,
) -> dict[str, Any]:
    """Only the warm-up of `workload` (see `_Bench.warm_up`) against the
    server at `base_url`: what a paired benchmark sends once after each
    launch, before the runs of both arms alternate. Nothing is measured or
    written but the folder; returns what `_Bench.warm_up` does. Raises
    BenchError when every warm-up request failed, or on `stop`; Unsettled
    when a steady warm-up did not settle. What it returns holds
    `peak_rate` where a batch of it was timed: the most requests a second
    one reached (a later `run_benchmark` on this launch takes it as its
    `rate_hint`)."""
    _check_workload(workload)
    bench, _ = _prepare(workload, base_url, model, out_dir, quirks, tokenizer, progress, stop, NOTHING, 0, jit, authorization)
    done = _run_loop(bench.session(bench.warm_up))
    return done | {"peak_rate": round(bench.peak_rate, 3)} if bench.peak_rate > 0 else done


def _prepare(workload, base_url, model, out_dir, quirks, tokenizer, progress, stop, server, first_run, jit=None,
             authorization=None):
    """(the _Bench of one call, the request settings it uses)."""
    out_dir = Path(out_dir)
    private.make_dirs(out_dir)
    url = endpoint_url(base_url, workload.endpoint)
    tok = load_tokenizer(tokenizer)
    source = PromptSource(workload, chat=workload.endpoint == "chat", token_ids=quirks.token_ids, tokenizer=tok)
    first_prompts, _ = source.prompts(1, first_run)
    settings = request_settings(workload, url, model, quirks, tokenizer, source,
                                request_body(first_prompts[0], model, quirks, workload.ignore_eos))
    runner = StreamRunner(url, float(workload.timeout), keep_text=tok is not None, stop=stop, authorization=authorization)
    say = progress or (lambda _msg: None)
    bench = _Bench(runner, workload, source, model, quirks, tok, out_dir, say, server, base_url, first_run)
    bench.jit = jit or (lambda: [])
    return bench, settings


class _Bench:
    """The warmup and the runs of one benchmark (see `run_benchmark`)."""

    def __init__(self, runner: StreamRunner, workload: Any, source: PromptSource, model: str, quirks: ClientQuirks, tok,
                 out_dir: Path, say, server: ServerSide, base_url: str, first_run: int):
        self.runner, self.w, self.source, self.model, self.quirks = runner, workload, source, model, quirks
        self.tok, self.out_dir, self.say, self.server, self.base_url, self.first_run = tok, out_dir, say, server, base_url, first_run
        self.pool: WorkerPool | None = None  # the worker processes, when the streams are spread over several
        self.done: list[RunResult] = []  # the runs that ended, in order
        self.peak_rate = 0.0  # the most requests a second any batch of this launch reached (warm-up or run)
        self.watches: tuple[RunWatch, ...] = ()  # told when each run begins and ends (specdsl.bench.conditions)
        self.jit: Callable[[], list] = lambda: []  # the compile lines the server's log gained since the last call

    async def measure(self, bodies: list[bytes], n: int, offsets: list[float] | None,
                      texts: dict[int, str], measured: bool = False,
                      concurrency: int | None = None) -> tuple[list[RequestTiming], float, dict[str, Any]]:
        """Send `n` requests (closed loop at `concurrency`, the workload's
        when None, or open on the schedule `offsets`) in this process or
        spread over the workers: (records, duration, the client's own load)."""
        w, runner = self.w, self.runner
        streams = concurrency or w.concurrency
        if self.pool is not None:
            shares = (closed_jobs(bodies, n, streams, self.pool.count) if offsets is None
                      else open_jobs(bodies, offsets, self.pool.count))
            records, got, duration, workers = await runner.until_stopped(self.pool.run(shares))
            texts.update(got)
            client = merge_clients(workers)
        else:
            if offsets is None:
                coro = runner.closed_loop([(i, bodies[i % len(bodies)]) for i in range(n)], streams, texts,
                                          seconds=getattr(w, "duration", None) if measured else None)
            else:
                coro = runner.open_loop([(i, bodies[i % len(bodies)], t) for i, t in enumerate(offsets)], texts)
            monitor = LoopMonitor()
            monitor.start()
            try:
                records, duration = await runner.until_stopped(coro)
            finally:
                client = monitor.stop()
        if duration > 0:
            self.peak_rate = max(self.peak_rate, len(records) / duration)
        if offsets is not None:
            ordered = sorted(records, key=lambda r: r.i)
            client.update(schedule_lateness_ms([r.start_s for r in ordered], [offsets[r.i] for r in ordered]))
            client.update(achieved_rate([r.start_s for r in records], w.rate))
        elif measured:
            seconds = getattr(w, "duration", None)
            asked = w.concurrency if seconds else min(w.concurrency, n)
            client.update(achieved_concurrency([(r.start_s, r.end_s) for r in records], asked, seconds))
        return records, duration, client

    async def session(self, work):
        """`work()` (a coroutine function) with the HTTP session open, and
        the worker processes when the streams are spread over several."""
        runner, w = self.runner, self.w
        runner.session = make_session(limit=0)
        try:
            if processes(w) == 1:
                return await work()
            async with WorkerPool(processes(w), self.out_dir, runner.url, float(w.timeout), self.tok is not None,
                                  runner.authorization) as pool:
                self.say(f"client: {pool.count} processes (pids {', '.join(map(str, pool.pids))})")
                self.pool = pool
                return await work()
        finally:
            await runner.session.close()

    def bodies(self, prompts: list[Prompt]) -> list[bytes]:
        return [request_body(p, self.model, self.quirks, self.w.ignore_eos) for p in prompts]

    async def all_runs(self) -> list[RunResult]:
        w, runner = self.w, self.runner
        await self.warm_up()
        for k in range(w.runs):
            if k > 0 and w.cooldown > 0:
                await runner.until_stopped(asyncio.sleep(w.cooldown))
            self.done.append(await self.one_run(self.first_run + k, k))
        return list(self.done)

    async def warm_up(self) -> dict[str, Any]:
        """The warm-up after a launch; none of it is measured, and a warm-up
        whose every request failed ends the benchmark. `warmup = 0` (and no
        `warmup_time`) sends none.

        Without `warmup_time` and `warmup_tolerance`: `warmup` requests at
        the workload's concurrency, at least one full wave (one request
        alone left a server cold, its first measured run slow by 1.6-2.4x,
        docs/verdicts.md). With either, a steady warm-up (`steady`).
        Returns {"requests", "ok", "seconds"}, and for a steady one its
        slices' rates, its compile lines and `settled`."""
        w = self.w
        if steady_tolerance(w) is not None:
            return await self.steady()
        if w.warmup <= 0:
            return {"requests": 0, "ok": 0, "seconds": 0.0}
        count = warmup_requests(w)
        self.say(f"warmup: {count} requests at concurrency {w.concurrency}")
        start = time.monotonic()
        records = await self.warm_batch(count, "warmup", w.concurrency)
        return {"requests": len(records), "ok": sum(1 for r in records if r.ok), "seconds": round(time.monotonic() - start, 3)}

    async def warm_batch(self, count: int, label: str, concurrency: int) -> list[RequestTiming]:
        """`count` warm-up requests of prompts of their own (`label`: a
        prefix cache must not make the warm-up cheap) at `concurrency`."""
        prompts, _ = self.source.prompts(count, label)
        records, _, _ = await self.measure(self.bodies(prompts), count, None, {}, concurrency=concurrency)
        if records and not any(r.ok for r in records):
            reasons = describe_failures(_reasons(records))
            raise BenchError(f"warmup: all {len(records)} requests to {self.runner.url} failed: {reasons}")
        return records

    async def steady(self) -> dict[str, Any]:
        """The steady warm-up (specdsl.bench.steady): a ramp of waves at
        concurrency 1, 2, 4, ... below the workload's, then slices of
        `slice_requests` requests at its concurrency, until the last two
        slices' output throughputs agree within the tolerance and the
        server's log gained no compile line during either; raises
        Unsettled when `warmup_time` (the most it may take; unset: 300 s)
        passes first."""
        w = self.w
        tolerance, bound = steady_tolerance(w), float(w.warmup_time or DEFAULT_BOUND_S)
        size = slice_requests(w)
        self.say(f"warmup: ramp to concurrency {w.concurrency}, then slices of {size} requests until two agree within "
                 f"{tolerance:.2%} with no compile in the server's log (at most {bound:g}s)")
        start = time.monotonic()
        sent = ok = 0
        self.jit()  # what the log says before the warm-up (the startup) is not the warm-up's
        seen: list = []
        for level in ramp_levels(w.concurrency):
            records = await self.warm_batch(level, f"warmup-ramp-{level}", level)
            sent, ok = sent + len(records), ok + sum(1 for r in records if r.ok)
        seen += self.jit()
        rates: list[float] = []
        events: list[list] = []
        while True:
            began = time.monotonic()
            records = await self.warm_batch(size, f"warmup-{len(rates)}", w.concurrency)
            took = time.monotonic() - began
            sent, ok = sent + len(records), ok + sum(1 for r in records if r.ok)
            rates.append(slice_rate(records, took))
            events.append(self.jit())
            seen += events[-1]
            done = {"requests": sent, "ok": ok, "seconds": round(time.monotonic() - start, 3),
                    "slices": [round(r, 3) for r in rates], "tolerance": tolerance,
                    "jit": [f"{e.kind}: {e.line[:300]}" for e in seen[:10]], "jit_lines": len(seen)}
            if settled(rates, events, tolerance):
                self.say(f"warmup: settled after {len(rates)} slices in {done['seconds']:.1f}s ({ok} of {sent} requests; "
                         f"last two {rates[-2]:.4g}, {rates[-1]:.4g} tok/s)"
                         + (f"; {jit_lines(seen)} before it" if seen else ""))
                return done | {"settled": True}
            if time.monotonic() - start >= bound:
                reason = unsettled_reason(rates, events, tolerance, bound)
                self.say(f"warmup: {reason}")
                raise Unsettled(reason, tuple(e.line for e in seen[-10:]), done | {"settled": False})

    async def one_run(self, index: int, k: int) -> RunResult:
        w, runner, session = self.w, self.runner, self.runner.session
        seconds = getattr(w, "duration", None)
        self.say(f"run {k + 1}/{w.runs}: " + (f"{seconds:g}s of requests at concurrency {w.concurrency}" if seconds
                                              else f"{w.requests} requests"))
        count = self.prompt_count()
        prompts, prompt_record = self.source.prompts(count, index)
        bodies = self.bodies(prompts)
        cache = await self.reset(session)
        before, status = await read_metrics(session, self.base_url, self.server, runner.headers)
        texts: dict[int, str] = {}
        offsets = None if w.rate is None else arrival_offsets(w.requests, w.rate, w.burstiness, w.seed)
        self.jit()  # the log's lines before the run are not the run's
        conditions, disturbed = await self.watched(index, self.measure(bodies, count, offsets, texts, measured=True))
        records, duration, client = conditions.pop(None)
        reused = fresh_reuse(records, count) if seconds and self.source.fresh else 0
        if count != w.requests or reused:
            prompt_record = prompt_record | {"count": count, "reused": reused}
        compiled = self.jit()
        after = None
        if before is not None:
            after, status = await read_metrics(session, self.base_url, self.server, runner.headers)
        _count_tokens(records, texts, self.tok)
        _fill_prompt_lens(records, prompts)
        path = self.out_dir / f"run-{index}.requests.jsonl"
        window = float(seconds) if seconds and offsets is None else None  # a closed loop for a time: read over its window
        header = {"run": index, "duration_s": duration, "url": runner.url, "prompts": prompt_record, "cache_reset": cache}
        if window:
            header["window_s"] = window
        write_records(path, header, records)
        metrics, samples, failures = compute_metrics(records, duration, getattr(w, "slo", None), window)
        if metrics["completed"] == 0:
            raise BenchError(f"run {index}: all {len(records)} requests to {runner.url} failed: {describe_failures(failures)}")
        server_metrics, server_record = run_figures(self.server, before, after)
        metrics.update(server_metrics)
        # one process: its own figures; several: each worker's (the run is client-bound if any is).
        # Its CPU, concurrency or schedule short of the workload's: invalid; its timers late: a warning
        bound = client_limits(client, metrics)
        warnings = lag_warnings(client, metrics)
        short = short_outputs_warning(records, [p.output_len for p in prompts],
                                      bool(exact_len_fields(self.quirks, w.ignore_eos, 1)))
        if short:
            warnings.append(short)
        if reused:
            warnings.append(f"prompts: {reused} of {len(records)} requests reused a prompt this run had already sent (it "
                            f"outran its {count} fresh prompts; a prefix cache may have served them): raise `requests` "
                            f"to at least {len(records)}")
        sent = [r.chunks_s[0] * 1000.0 for r in sorted(records, key=lambda r: r.start_s) if r.ok and r.chunks_s]
        unsteady = unsteady_warning(sent, w.concurrency) if offsets is None else None
        if unsteady:
            warnings.append(unsteady)
        if status.startswith("unavailable"):  # a warning, not a failed run: the run has no server metrics
            warnings.append(f"no server metrics: {status}")
        if cache.startswith("not offered:"):  # the engine has a cache this server will not empty
            warnings.append(f"prefix-cache: not emptied before the run ({cache}): it started from the cache the earlier"
                            " runs left")
        failed_reset = (f'prefix-cache: not emptied before the run (prefix_cache = "reset"): {cache}'
                        if cache.startswith("failed") else "")
        invalid = "; ".join(x for x in (run_invalid(metrics, w, short), *bound, failed_reset, *disturbed, jit_invalid(compiled)) if x)
        for warning in warnings:
            self.say(f"run {k + 1}/{w.runs}: {warning}")
        if invalid:
            self.say(f"run {k + 1}/{w.runs}: INVALID: {invalid}")
        self.say(
            f"run {k + 1}/{w.runs}: {int(metrics['completed'])} completed, {int(metrics['failed'])} failed,"
            f" {metrics.get('output_throughput', 0.0):.1f} tok/s"
        )
        return RunResult(index=index, metrics=metrics, samples=samples, failures=failures, records_file=str(path),
                         prompts=prompt_record, cache_reset=cache, server={"metrics": status, **server_record},
                         client=client, conditions=conditions, warnings=warnings, invalid=invalid)

    def prompt_count(self) -> int:
        """Prompts to make for a run: `requests`; for a run of `duration`
        with fresh prompts, enough that none is sent twice (a request that
        reuses a prompt of its own run meets the prefix cache, and how many
        do depends on the run's own speed: on the H200 a run that cycled 64
        prompts had 56-63% of its prompt tokens cached): FRESH_MARGIN times
        the most requests a second this launch has reached, plus a wave."""
        w = self.w
        seconds = getattr(w, "duration", None)
        if not seconds or not self.source.fresh or w.rate is not None:
            return w.requests
        return max(w.requests, math.ceil(FRESH_MARGIN * self.peak_rate * float(seconds)) + w.concurrency)

    async def reset(self, session) -> str:
        """What became of the server's prefix cache before a run: emptied
        for `prefix_cache = "reset"` (the default; a refusal while the last
        run's requests are still let go is asked again, twice, 0.5 s apart),
        else not asked."""
        mode = getattr(self.w, "prefix_cache", None) or "reset"
        if mode != "reset":
            return f'not asked (prefix_cache = "{mode}")'
        for attempt in range(_RESET_TRIES):
            cache = await reset_cache(session, self.base_url, self.server, self.runner.headers)
            if not cache.startswith("failed") or attempt == _RESET_TRIES - 1:
                return cache
            await self.runner.until_stopped(asyncio.sleep(_RESET_WAIT_S))
        return cache

    async def watched(self, index: int, coro) -> tuple[dict, list[str]]:
        """Await `coro` (a run's requests) between the watches' begin and
        end: ({None: what `coro` gave, key: each watch's record}, their
        reasons). A watch is ended even when `coro` raises (a sampler must
        not outlive its run); what it says then is dropped."""
        began = []
        try:
            for watch in self.watches:
                await asyncio.to_thread(watch.begin, index)
                began.append(watch)
            value = await coro
        except BaseException:
            coro.close()  # not started when a watch's begin failed
            for watch in began:
                try:
                    await asyncio.to_thread(watch.end, index)
                except Exception:  # the run's own error is the one to report
                    pass
            raise
        out: dict = {None: value}
        reasons = []
        for watch in began:
            record, why = await asyncio.to_thread(watch.end, index)
            out[watch.key] = record
            reasons.append(why)
        return out, reasons


FRESH_MARGIN = 2.0  # prompts made for a run of `duration`, over the requests the launch's fastest batch would send
_RESET_TRIES = 3
_RESET_WAIT_S = 0.5


def slice_requests(workload: Any) -> int:
    """The requests of one slice of a steady warm-up: `warmup`, at least
    two waves of `concurrency` (one wave's throughput is mostly its tail)."""
    return max(workload.warmup, 2 * workload.concurrency)


def ramp_levels(concurrency: int) -> list[int]:
    """The concurrencies a steady warm-up ramps through before its slices:
    1, 2, 4, ... below `concurrency` (none for 1)."""
    out, level = [], 1
    while level < concurrency:
        out.append(level)
        level *= 2
    return out


def warmup_requests(workload: Any) -> int:
    """The warm-up's first count: `warmup`, at least one full wave of
    `concurrency` (0 when `warmup` is 0)."""
    return 0 if workload.warmup <= 0 else max(workload.warmup, workload.concurrency)


def _reasons(records: list[RequestTiming]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in records:
        if not r.ok:
            out[r.reason or "unknown"] = out.get(r.reason or "unknown", 0) + 1
    return out


def _check_workload(workload: Any) -> None:
    problems = []
    if workload.requests < 1:
        problems.append(f"requests must be at least 1 (got {workload.requests})")
    if workload.concurrency < 1:
        problems.append(f"concurrency must be at least 1 (got {workload.concurrency})")
    if workload.runs < 1:
        problems.append(f"runs must be at least 1 (got {workload.runs})")
    if workload.rate is not None and workload.rate <= 0:
        problems.append(f"rate must be positive (got {workload.rate})")
    if processes(workload) < 1:
        problems.append(f"client_processes must be at least 1 (got {workload.client_processes})")
    if workload.timeout <= 0:
        problems.append(f"timeout must be positive (got {workload.timeout})")
    if problems:
        raise BenchError(f"workload {workload.name!r}: " + "; ".join(problems))


def processes(workload: Any) -> int:
    """How many client processes drive the streams (`client_processes`; unset: 1)."""
    value = getattr(workload, "client_processes", None)
    return 1 if value is None else int(value)


def _run_loop(coro):
    """Run `coro` on a fresh event loop; from a thread that already runs a
    loop, on a helper thread (run_benchmark is a blocking call)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=target, name="specdsl-bench", daemon=True)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]
