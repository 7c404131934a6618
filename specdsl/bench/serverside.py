"""What the client asks a server beside its API: a reset of its prefix
cache before each run, and its Prometheus counters before and after each
run. `ServerSide` is the value each server adapter (specdsl/servers)
provides, as `ClientQuirks` is; the default asks for nothing.

Counters and gauges are named by the adapter in a small vocabulary of
server-side quantities (`COUNTERS`, `GAUGES`), each mapped to the engine's
own Prometheus metric. A counter gives its increase over the run (summed
over label sets: engines, data-parallel ranks), a gauge its value after the
run (averaged over label sets). From them come the per-run metrics of
`specdsl.model.metrics.SERVER_METRICS`, e.g. the mean acceptance length of
speculative decoding. A server without /metrics (or one that does not name
a counter) is not an error: the run records why nothing was read.
"""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import attrs

# counters: their increase over a run
COUNTERS = (
    "requests",
    "prompt_tokens",
    "generation_tokens",
    "cached_prompt_tokens",  # prompt tokens served from the prefix cache
    "prefix_cache_queries",  # prompt tokens looked up in the prefix cache
    "spec_drafts",  # speculative decoding: drafting steps
    "spec_draft_tokens",  # tokens proposed
    "spec_accepted_tokens",  # tokens accepted
)
# gauges: their value after a run (the engine's own running figure)
GAUGES = ("spec_accept_length", "spec_accept_rate", "prefix_cache_hit_rate")

_TIMEOUT_S = 10.0


@attrs.frozen
class ServerSide:
    """`cache_reset`: (method, path) that empties the server's prefix cache,
    None when the engine has none; `cache_reset_hint`: what to do when the
    server answers 404 there (the endpoint needs a setting). `metrics_path`:
    the Prometheus endpoint (`metrics_hint`: what serves it, when it answers 404). `counters`/`gauges`: vocabulary name (COUNTERS,
    GAUGES) -> the engine's Prometheus metric name (with or without the
    `_total` of a counter's sample)."""

    cache_reset: tuple[str, str] | None = None
    cache_reset_hint: str = ""
    metrics_path: str = "/metrics"
    metrics_hint: str = ""  # the engine's switch that serves metrics_path, said when it answers 404
    counters: tuple[tuple[str, str], ...] = attrs.field(default=(), converter=lambda v: tuple(dict(v).items()))
    gauges: tuple[tuple[str, str], ...] = attrs.field(default=(), converter=lambda v: tuple(dict(v).items()))

    def __attrs_post_init__(self):
        unknown = [n for n, _ in self.counters if n not in COUNTERS] + [n for n, _ in self.gauges if n not in GAUGES]
        if unknown:
            raise ValueError(f"unknown server-side quantities {unknown}: use {COUNTERS} or {GAUGES}")


NOTHING = ServerSide()


def _root(base_url: str) -> str:
    base = base_url.rstrip("/")
    return base[: -len("/v1")] if base.endswith("/v1") else base


def _auth(headers: dict[str, str] | None) -> dict[str, str]:
    """Only the bearer token of the benchmark's requests (a server started
    with an API key guards these endpoints too)."""
    return {k: v for k, v in (headers or {}).items() if k.lower() == "authorization"}


async def reset_cache(session: aiohttp.ClientSession, base_url: str, side: ServerSide,
                      headers: dict[str, str] | None = None) -> str:
    """Ask the server to empty its prefix cache: "done", "not offered" (the
    engine has no such endpoint, or this server answers 404 there) or
    "failed: ..."."""
    if side.cache_reset is None:
        return "not offered"
    method, path = side.cache_reset
    try:
        async with session.request(method, _root(base_url) + path, headers=_auth(headers),
                                   timeout=aiohttp.ClientTimeout(total=_TIMEOUT_S)) as resp:
            text = (await resp.text(errors="replace")).strip()[:120]
            if resp.status == 200:
                return "done"
            if resp.status in (404, 405):
                hint = f"; {side.cache_reset_hint}" if side.cache_reset_hint else ""
                return f"not offered: {method} {path} answered http {resp.status}{hint}"
            return f"failed: {method} {path} answered http {resp.status}" + (f": {text}" if text else "")
    except asyncio.TimeoutError:
        return f"failed: {method} {path} timed out after {_TIMEOUT_S:g}s"
    except (aiohttp.ClientError, OSError) as exc:
        return f"failed: {method} {path}: {type(exc).__name__}"


async def read_metrics(session: aiohttp.ClientSession, base_url: str, side: ServerSide,
                       headers: dict[str, str] | None = None) -> tuple[dict[str, float] | None, str]:
    """(values by vocabulary name, "read") or (None, why not). A quantity
    the server does not report is left out."""
    if not side.counters and not side.gauges:
        return None, "not read: the engine's adapter names no counters"
    url = _root(base_url) + side.metrics_path
    try:
        async with session.get(url, headers=_auth(headers), timeout=aiohttp.ClientTimeout(total=_TIMEOUT_S)) as resp:
            if resp.status != 200:
                hint = f"; {side.metrics_hint}" if side.metrics_hint and resp.status == 404 else ""
                return None, f"unavailable: GET {side.metrics_path} answered http {resp.status}{hint}"
            text = await resp.text(errors="replace")
    except asyncio.TimeoutError:
        return None, f"unavailable: GET {side.metrics_path} timed out after {_TIMEOUT_S:g}s"
    except (aiohttp.ClientError, OSError) as exc:
        return None, f"unavailable: GET {side.metrics_path}: {type(exc).__name__}"
    try:
        samples = parse_samples(text)
    except ValueError as exc:
        return None, f"unavailable: {side.metrics_path} is not Prometheus text ({exc})"
    values: dict[str, float] = {}
    for name, metric in side.counters:
        found = samples.get(metric) or samples.get(metric + "_total")
        if found:
            values[name] = sum(found)
    for name, metric in side.gauges:
        found = samples.get(metric)
        if found:
            values[name] = sum(found) / len(found)
    return values, "read"


def parse_samples(text: str) -> dict[str, list[float]]:
    """Sample name -> its values over label sets, from Prometheus text
    (prometheus_client's parser)."""
    from prometheus_client.parser import text_string_to_metric_families

    out: dict[str, list[float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, []).append(float(sample.value))
    return out


def run_figures(side: ServerSide, before: dict[str, float] | None, after: dict[str, float] | None) -> tuple[dict[str, float], dict[str, Any]]:
    """(metrics, record) of one run from the values read before and after
    it: counters as increases, gauges as read after; the derived metrics
    (model.metrics.SERVER_METRICS) where their inputs are there."""
    record: dict[str, Any] = {"counters": {}, "gauges": {}}
    metrics: dict[str, float] = {}
    if before is None or after is None:
        return metrics, record
    gauges = {n for n, _ in side.gauges}
    for name, value in sorted(after.items()):
        if name in gauges:
            record["gauges"][name] = value
        elif name in before:
            record["counters"][name] = value - before[name]
    c, g = record["counters"], record["gauges"]
    for name, key in (("prompt_tokens", "server_prompt_tokens"), ("generation_tokens", "server_generation_tokens"),
                      ("cached_prompt_tokens", "server_cached_prompt_tokens")):
        if name in c:
            metrics[key] = c[name]
    # vLLM's definitions (vllm/v1/spec_decode/metrics.py): the mean
    # acceptance length counts the bonus token, 1 + accepted / drafts
    # SGLang's gauges (the most recent batch's figures) stand in when there
    # are no counters; a length below 1 means speculative decoding is off
    spec_gauges = g.get("spec_accept_length", 0.0) >= 1.0
    if c.get("spec_drafts"):
        metrics["spec_accept_length"] = 1.0 + c.get("spec_accepted_tokens", 0.0) / c["spec_drafts"]
    elif spec_gauges:
        metrics["spec_accept_length"] = g["spec_accept_length"]
    if c.get("spec_draft_tokens"):
        metrics["spec_accept_rate"] = c.get("spec_accepted_tokens", 0.0) / c["spec_draft_tokens"]
    elif spec_gauges and "spec_accept_rate" in g:
        metrics["spec_accept_rate"] = g["spec_accept_rate"]
    if c.get("prefix_cache_queries"):
        metrics["prefix_cache_hit_rate"] = c.get("cached_prompt_tokens", 0.0) / c["prefix_cache_queries"]
    elif c.get("prompt_tokens") and "cached_prompt_tokens" in c:
        metrics["prefix_cache_hit_rate"] = c["cached_prompt_tokens"] / c["prompt_tokens"]
    elif "prefix_cache_hit_rate" in g:
        metrics["prefix_cache_hit_rate"] = g["prefix_cache_hit_rate"]
    return metrics, record
