"""The resolved configuration: what a spec means once every reference,
`extends`, override, variable and matrix cell has been worked out.

These are the objects every later layer (graph, plan, apply, servers, bench)
works from. They hold plain values only (str, int, float, bool, tuples, and
`Mapping`s frozen as sorted tuples of pairs) so that `canonical()` gives the
same bytes on every machine: step identities are hashes of it.

Spans (where in which file a thing was declared) ride along with `eq=False`
so that two configurations compare by meaning, not by layout.
"""

from __future__ import annotations

import json
from typing import Any

import attrs

from specdsl.diag import Span

Pairs = tuple[tuple[str, Any], ...]


def pairs(mapping: dict[str, Any] | Pairs | None) -> Pairs:
    """A mapping frozen as a tuple of (key, value) pairs sorted by key."""
    if not mapping:
        return ()
    items = mapping.items() if isinstance(mapping, dict) else mapping
    return tuple(sorted((str(k), _freeze(v)) for k, v in items))


def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return pairs(value)
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


def canonical(obj: Any) -> Any:
    """A JSON-ready canonical form of a config object (spans left out)."""
    if attrs.has(type(obj)):
        out = {"__kind__": type(obj).__name__}
        for field in attrs.fields(type(obj)):
            if field.eq is False:
                continue
            value = getattr(obj, field.name)
            if value is None and field.metadata.get("omit_none"):
                continue  # a field added later: absent, the form (and every digest) stays what it was
            if value == () and field.metadata.get("omit_empty"):
                continue  # the same, for a collection added later
            out[field.name] = canonical(value)
        return out
    if isinstance(obj, tuple):
        return [canonical(v) for v in obj]
    if isinstance(obj, float) and obj.is_integer():
        return obj  # keep 1.0 distinct from 1 in JSON, it is what the user wrote
    return obj


def canonical_json(obj: Any) -> str:
    return json.dumps(canonical(obj), sort_keys=True, separators=(",", ":"))


@attrs.frozen
class Slurm:
    """A host reached through Slurm (docs/slurm.md): each experiment's chain
    runs as one batch job with these settings. `time` is seconds; `workdir`
    the folder shared by this machine and the compute nodes where job
    folders and environments live; `sbatch_args` extra options, verbatim."""

    partition: str | None = None
    account: str | None = None
    gres: str | None = None
    time: float | None = None
    exclusive: bool = False
    cpus: int | None = None
    mem: str | None = None
    max_parallel: int = 4
    workdir: str | None = None
    sbatch_args: tuple[str, ...] = ()
    # with `ssh` on the host: Slurm's commands run on that login node
    conf: str | None = attrs.field(default=None, metadata={"omit_none": True})
    python: str | None = attrs.field(default=None, metadata={"omit_none": True})
    span: Span | None = attrs.field(default=None, eq=False)
    spans: Pairs = attrs.field(default=(), eq=False)  # setting -> span of its value (preflight errors point there)

    def span_of(self, setting: str) -> Span | None:
        return dict(self.spans).get(setting) or self.span


@attrs.frozen
class Host:
    """Where things run. `ssh` None means this machine; `slurm` set: a
    cluster, through Slurm, submitted from this machine (or, with `ssh`,
    from that login node).

    `gpus` is how many GPUs specdsl may use there; `gpu_ids` the device
    ids when the spec listed them (`gpus = [0, 2]`), else () for
    0..gpus-1. `allow_busy_gpus` lets a benchmark run beside other jobs
    on those GPUs (docs/gpus.md)."""

    name: str
    ssh: str | None = None
    gpus: int = 0
    workdir: str | None = None
    gpu_ids: tuple[int, ...] = ()
    allow_busy_gpus: bool = False
    slurm: Slurm | None = attrs.field(default=None, metadata={"omit_none": True})
    span: Span | None = attrs.field(default=None, eq=False)


@attrs.frozen
class Stack:
    """A software stack: one isolated Python environment.

    `python` is a version ("3.11"), "system" (the interpreter specdsl runs
    under) or a path to an interpreter. `exclude` names dependencies that must
    not be installed (uv: an override with an impossible marker).
    `installer` is "uv" (default), "pip" or "prebuilt" (nothing installed:
    the packages, pinned, are checked in a carried tree on env.PYTHONPATH).
    """

    name: str
    python: str = "3.11"
    cuda: str | None = None
    packages: tuple[str, ...] = ()
    index: tuple[str, ...] = ()
    find_links: tuple[str, ...] = ()
    overrides: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    env: Pairs = ()
    installer: str = "uv"
    span: Span | None = attrs.field(default=None, eq=False)


@attrs.frozen
class Server:
    """A server configuration.

    `engine` is one of "sglang", "vllm", "transformers", "command". `args`
    are the engine's flags without leading dashes, in the order written
    (values: str, int, float, bool; True means a bare flag, False leaves it
    out). For the "command" engine `command` is the argv with `{host}`,
    `{port}`, `{model}` placeholders and `ready_url` a path or URL to poll.
    `ready_timeout` is seconds. `gpus` is how many GPUs the server
    needs (None: read from its args, `specdsl.model.gpus`).
    """

    name: str
    engine: str
    model: str
    args: Pairs = ()
    env: Pairs = ()
    port: int | None = None
    ready_timeout: float = 600.0
    keep_running: bool = False
    command: tuple[str, ...] = ()
    ready_url: str | None = None
    gpus: int | None = None
    # A server that is already running (`url = "http://host:8000"`): nothing
    # is provisioned, launched or stopped; the benchmark reaches it at `url`
    # (docs/language.md, "A server that is already running"). `engine` may
    # then be "" (read from what the server reports). `api_key` is sent as
    # `Authorization: Bearer KEY`; sensitive, never in an identity.
    url: str | None = attrs.field(default=None, metadata={"omit_none": True})
    api_key: str | None = attrs.field(default=None, metadata={"omit_none": True})
    span: Span | None = attrs.field(default=None, eq=False)

    @property
    def existing(self) -> bool:
        """Whether this server is one already running (`url`), not launched."""
        return self.url is not None


@attrs.frozen
class MetricRule:
    """How a metric is read from a user's benchmark script output:
    `regex` (first group, last match) or `json` (a dotted field of the last
    JSON object printed)."""

    name: str
    regex: str | None = None
    json: str | None = None


@attrs.frozen
class Workload:
    """A benchmark.

    Built-in load generator when `command` is empty; otherwise the user's own
    script, run `runs` times, metrics read with `metrics` rules and/or the
    `metrics_preset` of an engine's own client (specdsl.facts.bench_clients:
    the spec's `metrics = "vllm-bench-serve"`). `command_spans` are where
    each argv item was written (plan's located errors; not compared).
    Durations are seconds. `rate` None means closed loop at `concurrency`.
    """

    name: str
    dataset: str = "random"
    input_len: int = 1024
    output_len: int = 128
    requests: int = 64
    concurrency: int = 1
    rate: float | None = None
    burstiness: float = 1.0
    runs: int = 1
    # Paired comparisons (a baseline measured beside its candidate): `runs`
    # runs of each arm first, on launches of `block` runs, at least 2 pairs;
    # while a verdict is undecided, more pairs up to `max_runs` runs of each
    # arm (None: 3 x runs) (plan/economy.py).
    max_runs: int | None = None
    # None: chosen by `specdsl calibrate`'s measured costs and noises, at
    # most `runs` (plan/looks.block_of), `runs` when nothing is calibrated
    block: int | None = attrs.field(default=None, metadata={"omit_none": True})
    warmup: int = 1
    # the most seconds a steady warm-up may take after every launch (slices
    # of the workload until two agree within `warmup_tolerance` and the log
    # shows no compile, docs/verdicts.md); None (and no tolerance): only the
    # `warmup` requests, unchecked. Left out of the identity when unset so
    # that older results stay valid
    warmup_time: float | None = attrs.field(default=None, metadata={"omit_none": True})
    # how far apart two warm-up slices' throughputs may be and agree (a
    # fraction); None: 1% when `warmup_time` is set
    warmup_tolerance: float | None = attrs.field(default=None, metadata={"omit_none": True})
    # seconds a run lasts (closed loop, requests cycling through the prompts
    # of `requests`), instead of a count of requests; None: a count. Left
    # out of the identity when unset.
    duration: float | None = attrs.field(default=None, metadata={"omit_none": True})
    cooldown: float = 0.0
    timeout: float = 600.0
    seed: int = 0
    endpoint: str = "completions"
    ignore_eos: bool | None = None
    command: tuple[str, ...] = ()
    metrics: tuple[MetricRule, ...] = ()
    # The engine client whose result file the command writes (`{result_file}`)
    # and whose fields give the metrics; None: metric rules only (and left
    # out of the identity, so identities made before it existed stay).
    metrics_preset: str | None = attrs.field(default=None, metadata={"omit_none": True})
    command_spans: tuple = attrs.field(default=(), eq=False)
    # Worker processes the built-in client spreads the streams over
    # (specdsl.bench.workers); None is one, the client's own process. Part
    # of the benchmark's identity when set (docs/plan.md); unset, absent
    # from it, so identities made before it existed stay.
    client_processes: int | None = attrs.field(default=None, metadata={"omit_none": True})
    # Failed requests a run may have and still be valid (specdsl.bench.validity):
    # a count, or a fraction of its requests; both None: 0. Not part of the
    # benchmark's identity (it says how runs are read, not what is measured).
    max_failed: int | None = attrs.field(default=None, metadata={"omit_none": True})
    max_failed_fraction: float | None = attrs.field(default=None, metadata={"omit_none": True})
    # Whether prefix-cache hits are part of what is measured: "reset" (the
    # client empties the cache before each run; None means it, and is left
    # out of the identity), "off" (the engine's flag disables the cache),
    # "warm" (left as the earlier runs leave it). See model.prefix_cache.
    prefix_cache: str | None = attrs.field(default=None, metadata={"omit_none": True})
    # A paired comparison's budget (specdsl.plan.budget): at most this many
    # server launches, and this much wall time (seconds) of launches and
    # runs, over all its recorded pairs; `launch_estimate` the user's guess
    # of one launch's cost (start to ready, warm-up and its runs) for the
    # plan when nothing is recorded. None: no limit, no guess. Not part of
    # the benchmark's identity: raising a budget continues the recorded pairs.
    max_launches: int | None = attrs.field(default=None, metadata={"omit_none": True})
    max_time: float | None = attrs.field(default=None, metadata={"omit_none": True})
    launch_estimate: float | None = attrs.field(default=None, metadata={"omit_none": True})
    # What counts prompt tokens (specdsl.bench.tokenizer_choice): "model" (the model's own),
    # a local path (a folder with tokenizer.json, or that file); None: the model's when it is
    # a local folder. Part of the identity when set (it changes the prompts sent).
    tokenizer: str | None = attrs.field(default=None, metadata={"omit_none": True})
    # Per-request SLOs of goodput (model.metrics.GOODPUT_METRICS): (metric, bound in ms)
    # of ttft, tpot, e2el, as written; None: no goodput recorded. Part of the identity
    # when set (the runs record goodput under it); unset, absent from it.
    slo: tuple[tuple[str, float], ...] | None = attrs.field(
        default=None, metadata={"omit_none": True}, converter=lambda v: None if v is None else tuple(tuple(p) for p in v))
    span: Span | None = attrs.field(default=None, eq=False)


@attrs.frozen
class Assertion:
    """`assert "name" { expr }`; `expr` is a model.ast expression node."""

    name: str
    expr: Any
    span: Span | None = attrs.field(default=None, eq=False)


@attrs.frozen
class BaselineRef:
    """The baseline an experiment compares against: another experiment (cell)
    of the same spec, or the promoted baseline of a track in state."""

    kind: str  # "experiment" | "track"
    name: str
    # A track's baseline is rebuilt from its stack lock and measured beside
    # the candidate ("paired", the default), or its recorded numbers are
    # read ("recorded": `baseline_mode = "recorded"`, drift not controlled).
    mode: str = "paired"


@attrs.frozen
class Search:
    """A search over one workload setting (`over`: "concurrency" or
    "rate") between `low` and `high` for the highest value at which every
    assertion of the experiment passes (specdsl.operations.search); values
    are multiples of `step` from `low`."""

    over: str
    low: float
    high: float
    step: float = 1.0
    span: Span | None = attrs.field(default=None, eq=False)


@attrs.frozen
class Experiment:
    """One cell: a host, a stack, a server and a workload, plus checks.

    `name` is the cell address: `upgrade`, or `backends[backend=flashinfer]`
    for a matrix cell (`matrix` then holds that cell's values).
    """

    name: str
    host: Host
    stack: Stack
    server: Server
    workload: Workload
    baseline: BaselineRef | None = None
    asserts: tuple[Assertion, ...] = ()
    promote: str | None = None
    matrix: Pairs = ()
    group: str = ""  # the experiment block the cell came from
    # a search experiment (`search = { over = "concurrency", ... }`): not applied as it is, but
    # probed by `specdsl search`, one experiment a value (Config.searches)
    search: Search | None = attrs.field(default=None, metadata={"omit_none": True})
    span: Span | None = attrs.field(default=None, eq=False)


def measured_beside(exp: Experiment, base: Experiment) -> bool:
    """Whether the baseline experiment `base` is measured beside `exp`, arm
    against arm (ABBA, by `exp`'s benchmark, with `exp`'s workload): both
    on one machine (the same `ssh`, or both this machine) and not the same
    experiment. Otherwise the two cannot alternate and `base` is measured
    apart, with its own workload."""
    return base is not exp and base.host.ssh == exp.host.ssh


@attrs.frozen
class Config:
    """A whole resolved spec: experiments (matrix cells expanded) in
    declaration order, and the named blocks they were made from."""

    experiments: tuple[Experiment, ...] = ()
    # experiments with a `search`: probed by `specdsl search`, one experiment a value, never planned as they are
    searches: tuple[Experiment, ...] = attrs.field(default=(), metadata={"omit_empty": True})
    hosts: tuple[Host, ...] = ()
    stacks: tuple[Stack, ...] = ()
    servers: tuple[Server, ...] = ()
    workloads: tuple[Workload, ...] = ()
    variables: Pairs = ()
    # Every sensitive value the spec holds (specdsl.secrets: values under
    # secret names, URL passwords, the values of `sensitive` variables),
    # sorted. Identities hash them keyed; nothing written shows them.
    sensitive: tuple[str, ...] = attrs.field(default=(), eq=False)
    # the names of the variables declared `sensitive = true`
    sensitive_variables: tuple[str, ...] = attrs.field(default=(), eq=False)

    def experiment(self, name: str) -> Experiment | None:
        for exp in self.experiments:
            if exp.name == name:
                return exp
        return None
