"""Config -> DAG of steps, built by an ordered list of small named transforms.

    tracks      a track baseline measured beside its candidate: the track's
                promoted configuration, rebuilt from its stack lock (track_arm)
    arm_only    a baseline that only paired candidates read (no assertion or
                promotion of its own) is measured as their arm alone: no
                launch or benchmark of its own
    preflight   one per host
    provision   one per (machine, stack content)
    launch      one per (provision, server content)
    names       a shared step that is not the first under its name is named
                after the cells it serves (`launch.qwen/sweep[backend=fa3]`)
    benchmark   one per experiment cell (launch + workload)
    baseline    ordering edge: a baseline's benchmark runs before its candidate's
    check       one per assertion (reads the benchmark, and the baseline's)
    promote     one per promoting experiment (needs every check)
    teardown    one per launch not kept running
    users       each step lists the experiment cells it serves (numbers by value)
    edges       adjacency from deps and ordering edges
    acyclic     a cycle becomes a diagnostic

Experiments that share a stack or a server configuration share those steps.
A sensitive value (specdsl.secrets) is in a step's content, and so in its
identity, only as its keyed digest; the payload keeps the real value for apply.
"""

from __future__ import annotations

import heapq
from typing import Any, Callable

import attrs

from specdsl import secrets
from specdsl.diag import Diagnostic
from specdsl.graph.content import server_content, stack_content
from specdsl.graph.steps import KIND_ORDER, Step, canonical_text, digest, step_digest
from specdsl.model import config
from specdsl.model.printer import number_text
from specdsl.names import natural_sorted


@attrs.define
class Graph:
    """The steps by address, the edges between them, and diagnostics.

    Edges are kept as plain adjacency (`succ`, `pred`: address -> sorted
    addresses): planning walks them itself, so `specdsl plan` does not pay
    for importing networkx. `dag` is the same graph as a networkx DiGraph,
    built on first use (apply, `graph`, tests)."""

    steps: dict[str, Step] = attrs.Factory(dict)
    diags: list[Diagnostic] = attrs.Factory(list)
    # experiment cell -> addresses of its steps by kind
    by_experiment: dict[str, dict[str, Any]] = attrs.Factory(dict)
    succ: dict[str, tuple[str, ...]] = attrs.Factory(dict)
    pred: dict[str, tuple[str, ...]] = attrs.Factory(dict)
    _dag: Any = attrs.field(default=None, init=False, repr=False, eq=False)
    _order: Any = attrs.field(default=None, init=False, repr=False, eq=False)
    _rank: Any = attrs.field(default=None, init=False, repr=False, eq=False)

    @property
    def dag(self):
        """The networkx DiGraph over the steps (nodes in address order)."""
        if self._dag is None:
            import networkx as nx

            dag = nx.DiGraph()
            dag.add_nodes_from(self.steps)
            dag.add_edges_from((a, b) for a in self.steps for b in self.succ.get(a, ()))
            self._dag = dag
        return self._dag

    def order(self) -> list[str]:
        """Deterministic topological order: by kind, then address with its
        numbers by value (`natural_key`: `grid[c=4]` before `grid[c=16]`),
        the smallest order under that key. Raises ValueError on a cycle;
        `build_graph` reports one as a diagnostic first."""
        if self._order is None:
            order = _topological(self)
            if len(order) != len(self.steps):
                raise ValueError("the step graph has a cycle")
            self._order = order
        return list(self._order)

    def rank(self) -> dict[str, int]:
        """address -> its place among all addresses sorted by `natural_key`
        (numbers by value): a cheap sort key, computed once."""
        if self._rank is None or len(self._rank) != len(self.steps):
            self._rank = {a: i for i, a in enumerate(natural_sorted(self.steps))}
        return self._rank

    def arm(self, experiment: str) -> str | None:
        """"A" when `experiment`'s benchmark is a paired one that measures it
        as the baseline arm (it has none of its own: `arm_only`), "B" when it
        is the candidate of its paired benchmark, else None."""
        step = self.steps.get(self.by_experiment.get(experiment, {}).get("benchmark", ""))
        if step is None or "paired" not in step.payload:
            return None
        return "A" if step.payload["paired"].name == experiment and step.payload["experiment"].name != experiment else "B"

    def downstream(self, addr: str) -> set[str]:
        """Every step that (transitively) comes after `addr`."""
        return _reach(self.succ, addr)

    def upstream(self, addr: str) -> set[str]:
        """Every step that `addr` (transitively) comes after."""
        return _reach(self.pred, addr)


def _topological(graph: Graph) -> list[str]:
    steps = graph.steps
    indegree = {a: len(graph.pred.get(a, ())) for a in steps}
    rank = graph.rank()
    heap = [(KIND_ORDER[steps[a].kind], rank[a], a) for a, n in indegree.items() if n == 0]
    heapq.heapify(heap)
    out = []
    while heap:
        _, _, addr = heapq.heappop(heap)
        out.append(addr)
        for nxt in graph.succ.get(addr, ()):
            indegree[nxt] -= 1
            if indegree[nxt] == 0:
                heapq.heappush(heap, (KIND_ORDER[steps[nxt].kind], rank[nxt], nxt))
    return out


def _reach(adjacency: dict[str, tuple[str, ...]], addr: str) -> set[str]:
    seen: set[str] = set()
    todo = list(adjacency.get(addr, ()))
    while todo:
        a = todo.pop()
        if a not in seen:
            seen.add(a)
            todo.extend(adjacency.get(a, ()))
    return seen


@attrs.define
class _Work:
    cfg: config.Config
    graph: Graph
    # identity -> address, per kind, to share steps and name them
    seen: dict[tuple[str, str], str] = attrs.Factory(dict)
    # provisional address -> (kind, base name) of each step that is not the
    # first under its name: `shared_names` renames them once their users are known
    qualified: dict[str, tuple[str, str]] = attrs.Factory(dict)
    # address -> the experiment cells it serves (sorted onto the steps at the end)
    users: dict[str, set[str]] = attrs.Factory(dict)
    # (kind, upstream identity, config object) -> (content, identity): cells
    # of a matrix share most of their config objects; hash each once
    memo: dict[tuple, tuple[dict, str]] = attrs.Factory(dict)
    # the stack locks of the tracks that paired track baselines name, and
    # candidate -> its baseline's arm rebuilt from one (graph/track_arm)
    locks: dict = attrs.Factory(dict)
    arms: dict[str, config.Experiment] = attrs.Factory(dict)
    # baseline -> the first candidate that measures it as its paired arm,
    # for each baseline nothing else reads (`arm_only`)
    arm_only: dict[str, str] = attrs.Factory(dict)
    spec_dir: Any = None  # where relative dataset files are (None: the current directory)
    dataset_digests: dict[str, str | None] = attrs.Factory(dict)


Transform = Callable[[_Work], None]


# Not part of what a benchmark measures: `runs` is how many times it is
# measured, `timeout` and `cooldown` how long specdsl waits for a request
# and between runs. Raising them keeps the benchmark's identity, so
# recorded results stay valid and more runs add to the ones recorded
# (plan asks for the missing runs) instead of starting over. `max_failed`
# says which runs count (specdsl.bench.validity), not what is measured.
# The budget (`max_launches`, `max_time`, `launch_estimate`) says how much
# may be spent measuring, not what is measured: raising it continues.
_NOT_MEASURED = ("runs", "timeout", "cooldown", "max_failed", "max_failed_fraction", "max_launches", "max_time",
                 "launch_estimate")
PAIR_DESIGN = "launch-pairs"


def _content_workload(workload: config.Workload, paired: bool = False) -> dict:
    out = config.canonical(workload)
    # `max_runs` (pairs a comparison may reach) and `block` (runs per launch
    # of a pair) shape paired comparisons only: a benchmark on its own
    # launch keeps its identity whatever they are
    for key in ("__kind__", "name", *_NOT_MEASURED, *(() if paired else ("max_runs", "block"))):
        out.pop(key, None)
    return out


def _request_once(work: _Work, server: config.Server, workload: config.Workload) -> tuple[dict, str] | None:
    """(content, canonical text) of what the built-in client sends to
    `server` for `workload`: the body of every request as a template
    (`body`, prompt and length as placeholders) and the client settings
    beside it (`client`: the engine's quirks), from specdsl.facts.client.
    So a change of the request (a default field, `stream_options`, how an
    exact length is asked for) reruns the benchmark, and the plan names the
    field. None for the user's own benchmark command (it sends what it sends)."""
    if workload.command:
        return None
    key = (server.engine, server.model, workload.endpoint, workload.dataset, workload.ignore_eos)

    def make() -> dict:  # once per distinct key, not per cell
        from specdsl.facts.client import BASIC, client_settings, request_template
        from specdsl.facts.engines import QUIRKS

        quirks = QUIRKS.get(server.engine, BASIC)
        body = request_template(quirks, model=server.model, endpoint=workload.endpoint, dataset=workload.dataset,
                                ignore_eos=workload.ignore_eos)
        return {"body": body, "client": client_settings(quirks)}

    return _canonical_once(work, "request", key, make)


def _with_dataset_digest(work: _Work, workload: config.Workload, content: dict) -> dict:
    """`content` with the SHA-256 of the workload's dataset file, when it
    names one that can be read: the prompts are part of what a benchmark
    measures, so an edited file reruns it (a built-in dataset adds nothing,
    so other identities stay as they were). Each file is hashed once."""
    import hashlib

    from specdsl.model.datasets import dataset_file

    found = dataset_file(workload.dataset) if not workload.command else None
    if found is None:
        return content
    path = found.under(work.spec_dir)
    key = str(path)
    if key not in work.dataset_digests:
        try:
            work.dataset_digests[key] = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError:
            work.dataset_digests[key] = None  # plan reports the file before anything runs
    digest_ = work.dataset_digests[key]
    return content if digest_ is None else {**content, "dataset_digest": digest_}


# Identities follow the physical machine, not the host block's name:
# renaming a host block rebuilds nothing, and two blocks that mean the same
# machine share its environments and servers.
def _content_host(host: config.Host) -> dict:
    """The preflight's content: the machine and what it must offer (gpus)."""
    out = {"ssh": host.ssh, "gpus": host.gpus, "workdir": host.workdir}
    if host.gpu_ids:
        out["gpu_ids"] = list(host.gpu_ids)
    if host.allow_busy_gpus:
        out["allow_busy_gpus"] = True
    return {**out, **_content_slurm(host)}


def _content_machine(host: config.Host) -> dict:
    """What locates the machine an environment lives on: its ssh target
    (None: this machine) and the folder specdsl works in there."""
    return {"ssh": host.ssh, "workdir": host.workdir, **_content_slurm(host)}


def _content_slurm(host: config.Host) -> dict:
    """A Slurm host (docs/slurm.md) is other machines: where jobs go and what
    they get. Absent for other hosts, so their identities stay as they were."""
    s = host.slurm
    return {} if s is None else {"slurm": {"partition": s.partition, "gres": s.gres, "workdir": s.workdir}}


def _name(work: _Work, kind: str, base: str, identity: str, user: str) -> str:
    """`kind.base` for the first identity under that name, so addresses stay
    readable and stable when contents change; a later one gets `/user` (the
    first cell that uses it) for now, and its final name from `shared_names`."""
    key = (kind, identity)
    if key in work.seen:
        return work.seen[key]
    addr = f"{kind}.{base}"
    if addr in work.graph.steps:
        addr = f"{kind}.{base}/{user}"
        n = 2
        while addr in work.graph.steps:
            addr = f"{kind}.{base}/{user}#{n}"
            n += 1
        work.qualified[addr] = (kind, base)
    work.seen[key] = addr
    return addr


def _add(work: _Work, step: Step) -> Step:
    """Add a step, or note one more user of a shared one (same address,
    same identity). Users are gathered in sets and sorted onto the steps by
    the `users` transform: re-sorting on every add is quadratic in cells."""
    users = work.users.setdefault(step.addr, set())
    users.update(step.experiments)
    prior = work.graph.steps.get(step.addr)
    if prior is not None:
        return prior
    work.graph.steps[step.addr] = step
    return step


def _identified(work: _Work, kind: str, upstream: str, obj: Any, make: Callable[[], dict]) -> tuple[dict, str]:
    """(content, identity) of a step built from `obj` on `upstream`,
    computed once per distinct (equal) config object."""
    try:
        key = (kind, upstream, obj)
        hit = work.memo.get(key)
    except TypeError:  # an unhashable value somewhere in obj: no memo
        key, hit = None, None
    if hit is None:
        content = secrets.hide(make(), work.cfg.sensitive)  # a secret in content is its keyed digest
        hit = (content, digest([kind, content]))
        if key is not None:
            work.memo[key] = hit
    return hit


def _cells(work: _Work) -> dict:
    return work.graph.by_experiment


def tracks(work: _Work) -> None:
    """Each candidate of a paired track baseline gets its arm: the track's
    promoted configuration, from its stack lock (graph/track_arm)."""
    from specdsl.graph.track_arm import arm_for

    for exp in work.cfg.experiments:
        ref = exp.baseline
        if ref is None or ref.kind != "track" or ref.mode != "paired":
            continue
        lock = work.locks.get(ref.name)
        arm = arm_for(exp, lock, work.graph.diags)
        if arm is None and (lock is None or (lock.doc is None and not lock.error)):
            _promotion_without_lock(work, exp)
        if arm is not None:
            if exp.host.ssh is not None:  # one arm per machine
                arm = attrs.evolve(arm, name=f"{arm.name}@{exp.host.ssh}", group=f"{arm.name}@{exp.host.ssh}")
            work.arms[exp.name] = arm


def _promotion_without_lock(work: _Work, exp: config.Experiment) -> None:
    """An error at `exp` when it promotes to a track with no stack lock
    that it also compares with, and nothing else in the spec promotes to
    that track: its checks that read the baseline can only be ERROR, so
    the promotion could never happen (and the lock never be written)."""
    from specdsl.graph.track_arm import LOCK_DIR
    from specdsl.model.assert_shape import reads_baseline

    track = exp.baseline.name
    reading = [a.name for a in exp.asserts if reads_baseline(a.expr)]
    if not exp.promote or not reading:
        return
    if any(e.promote == track and e.name != exp.name for e in work.cfg.experiments):
        return  # another experiment can write the lock first (a track's first promotion)
    names = ", ".join(f"`{n}`" for n in reading)
    work.graph.diags.append(Diagnostic.error(
        f"Experiment `{exp.name}` can never be promoted: track `{track}` has no stack lock to compare with",
        exp.span,
        f"{LOCK_DIR}/{track}.lock.toml is missing (the track was never promoted, or the file was removed), so {names} "
        f"can only be ERROR and `promote = \"{exp.promote}\"` never happen; give the track its first baseline with "
        f"an experiment whose assertions do not read `baseline` (e.g. `assert \"fast\" {{ output_throughput >= 1000 }}` "
        f"and `promote = \"{track}\"`), or compare with recorded numbers: `baseline_mode = \"recorded\"`"))


def arm_only(work: _Work) -> None:
    """A baseline experiment measured only as its candidates' paired arm:
    it has no assertion and no promotion of its own, its own benchmark
    would be a plain one, and every experiment that names it as its
    baseline is paired with it. Its runs are the pairs' A arm, so it gets
    no launch and no benchmark of its own (that would measure it a second
    time); `by_experiment[NAME]["benchmark"]` is the first such candidate's
    paired benchmark (`Graph.arm` says "A"), which diff, diagnose, report
    and `--target NAME` read."""
    cfg = work.cfg
    readers_of: dict[str, list[config.Experiment]] = {}  # in the spec's order, found in one pass
    for e in cfg.experiments:
        if e.baseline is not None and e.baseline.kind == "experiment":
            readers_of.setdefault(e.baseline.name, []).append(e)
    for exp in cfg.experiments:
        if exp.asserts or exp.promote or paired_with(cfg, exp, work.arms) is not None:
            continue
        readers = readers_of.get(exp.name, [])
        if readers and all(paired_with(cfg, e, work.arms) is not None for e in readers):
            work.arm_only[exp.name] = readers[0].name


def _with_arms(work: _Work):
    """(experiment, the cells it serves): every experiment, then each track
    arm once (serving its candidates)."""
    for exp in work.cfg.experiments:
        yield exp, (exp.name,)
    served: dict[str, list[str]] = {}
    arms: dict[str, config.Experiment] = {}
    for cand, arm in work.arms.items():
        served.setdefault(arm.name, []).append(cand)
        arms.setdefault(arm.name, arm)
    for name, arm in arms.items():
        yield arm, tuple(served[name])


def preflight(work: _Work) -> None:
    for exp in work.cfg.experiments:
        if exp.server.existing:
            _cells(work).setdefault(exp.name, {})  # nothing is started for a server already running: no host to check
            continue
        content, identity = _identified(work, "preflight", "", exp.host, lambda: {"host": _content_host(exp.host)})
        addr = _name(work, "preflight", exp.host.name, identity, exp.name)
        _add(work, Step(addr, "preflight", identity, content, host=exp.host.name, experiments=(exp.name,), payload={"host": exp.host}))
        _cells(work).setdefault(exp.name, {})["preflight"] = addr


def provision(work: _Work) -> None:
    for exp, users_ in _with_arms(work):
        if exp.server.existing:
            continue  # nothing to provision: the server is already running
        if exp.name not in _cells(work):  # a track arm: on its candidates' host
            _cells(work)[exp.name] = {"preflight": _cells(work)[users_[0]]["preflight"]}
        pre = work.graph.steps[_cells(work)[exp.name]["preflight"]]
        machine, machine_text = _canonical_once(work, "machine", exp.host, lambda: _content_machine(exp.host))
        content, identity = _identified(work, "provision", machine_text, exp.stack,
                                        lambda: {"host": machine, "stack": stack_content(exp.stack)})
        addr = _name(work, "provision", exp.stack.name, identity, users_[0])
        step = _add(work, Step(addr, "provision", identity, content, (pre.addr,), host=exp.host.name, experiments=users_,
                               payload={"stack": exp.stack, "host": exp.host}))
        if pre.addr not in step.deps:  # another host block on the same machine: its preflight comes first too
            work.graph.steps[addr] = attrs.evolve(step, deps=tuple(sorted(step.deps + (pre.addr,))))
        _cells(work)[exp.name]["provision"] = addr


def paired_with(cfg: config.Config, exp: config.Experiment, arms: dict | None = None) -> config.Experiment | None:
    """The baseline experiment `exp` is measured beside, arm against arm
    (interleaved on one machine), or None. A baseline experiment of the
    spec on the same machine (the same `ssh`, or both this machine) is
    always paired; elsewhere the two cannot alternate and are measured apart.
    A track baseline is paired when `arms` (the graph's track arms) has one
    for `exp`: its promoted configuration rebuilt from the stack lock."""
    if exp.baseline is not None and exp.baseline.kind == "track":
        return (arms or {}).get(exp.name)
    if exp.baseline is None or exp.baseline.kind != "experiment":
        return None
    base = next((e for e in cfg.experiments if e.name == exp.baseline.name), None)
    if base is None or not config.measured_beside(exp, base):
        return None
    if exp.server.existing != base.server.existing:
        return None  # one launched, one running: an error at validate (validate/endpoint.py)
    return base


def _launch_content(prov: Step, server: config.Server) -> dict:
    return {"provision": prov.identity, "server": server_content(server)}


def launch(work: _Work) -> None:
    for exp in work.cfg.experiments:
        if paired_with(work.cfg, exp, work.arms) is not None or exp.name in work.arm_only or exp.server.existing:
            continue  # its (or its candidate's) paired benchmark starts both arms' servers itself, alternately
        prov = work.graph.steps[_cells(work)[exp.name]["provision"]]
        content, identity = _identified(work, "launch", prov.identity, exp.server,
                                        lambda: _launch_content(prov, exp.server))
        addr = _name(work, "launch", exp.server.name, identity, exp.name)
        _add(work, Step(addr, "launch", identity, content, (prov.addr,), host=exp.host.name, experiments=(exp.name,),
                        payload={"server": exp.server, "host": exp.host, "stack": exp.stack}))
        _cells(work)[exp.name]["launch"] = addr


def shared_names(work: _Work) -> None:
    """Name each shared step that `_name` qualified after what it serves,
    now that all its cells are known: `kind.base/WHAT`, where WHAT is the
    first experiment (in declaration order) among its cells: its name when
    the step serves every cell of it (`launch.qwen/sweep`), the cell's name
    when it serves one (`launch.qwen/sweep[backend=fa3,concurrency=1]`),
    else the matrix values its cells share (`launch.qwen/sweep[backend=fa3]`).
    The first step under the name, left bare by `_name`, is named so too
    when it serves only some cells of a sweep whose other cells' steps are
    labelled. Every reference to the step (deps, the cells' steps) follows."""
    if not work.qualified:
        return
    cells = {exp.name: exp for exp in work.cfg.experiments}
    place = {name: i for i, name in enumerate(cells)}
    group_size: dict[str, int] = {}
    for exp in work.cfg.experiments:
        group_size[exp.group] = group_size.get(exp.group, 0) + 1
    # The first step under a name kept it bare (`launch.llama`); when its
    # siblings carry labels and it serves only some cells of a sweep, it is
    # labelled too (`launch.llama/sweep[seqs=64]`): every cell's steps say
    # which cell they are, the first one's as well.
    for kind, base in sorted(set(work.qualified.values())):
        bare = f"{kind}.{base}"
        users = work.users.get(bare, ())
        served = [cells[name] for name in sorted(users, key=place.__getitem__) if name in cells]
        if served and all(exp.matrix for exp in served) and _serving(served, group_size) != served[0].group:
            work.qualified[bare] = (kind, base)
    taken = {a for a in work.graph.steps if a not in work.qualified}
    renames: dict[str, str] = {}
    for old, (kind, base) in work.qualified.items():
        served = [cells[name] for name in sorted(work.users[old], key=place.__getitem__)]
        addr = wanted = f"{kind}.{base}/{_serving(served, group_size)}"
        n = 2
        while addr in taken:
            addr = f"{wanted}#{n}"
            n += 1
        taken.add(addr)
        renames[old] = addr
    work.qualified = {}
    graph = work.graph
    graph.steps = {  # in the same order, renamed and pointing at the new names
        renames.get(a, a): attrs.evolve(s, addr=renames.get(a, a), deps=tuple(renames.get(d, d) for d in s.deps))
        if a in renames or any(d in renames for d in s.deps) else s
        for a, s in graph.steps.items()
    }
    work.users = {renames.get(a, a): u for a, u in work.users.items()}
    work.seen = {key: renames.get(a, a) for key, a in work.seen.items()}
    for by_kind in graph.by_experiment.values():
        for kind in ("preflight", "provision", "launch"):
            if kind in by_kind:
                by_kind[kind] = renames.get(by_kind[kind], by_kind[kind])


def _serving(served: list[config.Experiment], group_size: dict[str, int]) -> str:
    """What a shared step serves, as a name (see `shared_names`); `served` is in
    declaration order."""
    group = served[0].group
    mine = [exp for exp in served if exp.group == group]
    if len(mine) == group_size[group]:
        return group
    if len(mine) == 1:
        return mine[0].name
    rest = [{k: (type(v), v) for k, v in exp.matrix} for exp in mine[1:]]
    common = [(k, v) for k, v in mine[0].matrix if all(values.get(k) == (type(v), v) for values in rest)]
    if not common:
        return group
    return group + "[" + ",".join(f"{k}={_value_text(v)}" for k, v in common) + "]"


def _value_text(value) -> str:
    """A matrix value as a cell name writes it (the resolver's `cell_name`)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return number_text(value)
    return str(value)


def benchmark(work: _Work) -> None:
    for exp in work.cfg.experiments:
        base = paired_with(work.cfg, exp, work.arms)
        if base is not None:
            _paired_benchmark(work, exp, base)
            continue
        if exp.name in work.arm_only:
            continue  # measured as its candidates' arm (below)
        if exp.server.existing:
            _existing_benchmark(work, exp)
            continue
        lau = work.graph.steps[_cells(work)[exp.name]["launch"]]
        workload, text = _canonical_once(work, "workload", exp.workload, lambda: _content_workload(exp.workload))
        content = _with_dataset_digest(work, exp.workload, {"launch": lau.identity, "workload": workload})
        texts = {"workload": text}
        request = _request_once(work, exp.server, exp.workload)
        if request is not None:
            content["request"], texts["request"] = request
        identity = step_digest("benchmark", content, texts)
        addr = f"benchmark.{exp.name}"
        _add(work, Step(addr, "benchmark", identity, content, (lau.addr,), host=exp.host.name, experiments=(exp.name,),
                        payload={"experiment": exp}))
        _cells(work)[exp.name]["benchmark"] = addr
    for name, reader in work.arm_only.items():
        _cells(work)[name]["benchmark"] = _cells(work)[reader]["benchmark"]


def endpoint_content(server: config.Server) -> dict:
    """What a server already running is, as the spec knows it: its URL
    without credentials (an `api_key` changes nothing measured, and is not
    here), the engine given (None: read from it) and the model. What it
    reports of itself (version, model, max_model_len) is recorded with its
    results and compared at plan (plan.diff), not part of the identity."""
    from specdsl.model.endpoint import shown

    return {"url": shown(server.url), "engine": server.engine or None, "model": server.model}


def _existing_benchmark(work: _Work, exp: config.Experiment) -> None:
    """`benchmark.E` of a server already running at its `url`: no
    provision, launch or teardown before or after it; its identity is the
    endpoint, the workload and the request."""
    workload, text = _canonical_once(work, "workload", exp.workload, lambda: _content_workload(exp.workload))
    content = _with_dataset_digest(work, exp.workload, {"endpoint": endpoint_content(exp.server), "workload": workload})
    texts = {"workload": text}
    request = _request_once(work, exp.server, exp.workload)
    if request is not None:
        content["request"], texts["request"] = request
    content = secrets.hide(content, work.cfg.sensitive)
    identity = step_digest("benchmark", content, texts)
    addr = f"benchmark.{exp.name}"
    _add(work, Step(addr, "benchmark", identity, content, (), host=exp.host.name, experiments=(exp.name,),
                    payload={"experiment": exp, "endpoint": exp.server}))
    _cells(work)[exp.name]["benchmark"] = addr


ENDPOINT_PAIR_DESIGN = "endpoint-runs"


def _existing_pair(work: _Work, exp: config.Experiment, base: config.Experiment) -> None:
    """`benchmark.E` of a candidate and its baseline that are both servers
    already running: no launch to repeat, so the run is the unit; one run
    of each arm a pair, alternating ABBA (apply/steps/endpoint.py). Its
    identity covers both endpoints and the workload."""
    workload = _content_workload(exp.workload, paired=True)
    for key in ("max_runs", "block"):
        workload.pop(key, None)
    content = _with_dataset_digest(work, exp.workload, {
        "arms": {"baseline": {"endpoint": endpoint_content(base.server)}, "candidate": {"endpoint": endpoint_content(exp.server)}},
        "workload": workload, "design": ENDPOINT_PAIR_DESIGN})
    requests = {arm: _request_once(work, server, exp.workload) for arm, server in (("baseline", base.server), ("candidate", exp.server))}
    if requests["candidate"] is not None:
        content["request"] = {arm: request[0] for arm, request in requests.items()}
    content = secrets.hide(content, work.cfg.sensitive)
    identity = digest(["benchmark", content])
    addr = f"benchmark.{exp.name}"
    # one run of each arm a pair, whatever `block` says (its launches are none)
    measured = attrs.evolve(exp, workload=attrs.evolve(exp.workload, block=1))
    _add(work, Step(addr, "benchmark", identity, content, (), host=exp.host.name, experiments=(exp.name,),
                    payload={"experiment": measured, "paired": base, "host": exp.host, "endpoint": exp.server}))
    _cells(work)[exp.name]["benchmark"] = addr


def _paired_benchmark(work: _Work, exp: config.Experiment, base: config.Experiment) -> None:
    """`benchmark.E` of a paired experiment: both arms (the baseline's server
    and the candidate's), launched alternately (ABBA BAAB ...) by the step
    itself; its result holds the pairs. Its identity covers both arms'
    servers and stacks and the workload, with the block size. Both arms
    run the candidate's workload: the baseline's server too is the one it
    measures (its prefix cache turned off for `prefix_cache = "off"`)."""
    from specdsl.model.prefix_cache import server_for

    if exp.server.existing:
        _existing_pair(work, exp, base)
        return
    measured = server_for(base.server, exp.workload, base.stack)
    if measured is not base.server:
        base = attrs.evolve(base, server=measured)
    prov_b = work.graph.steps[_cells(work)[base.name]["provision"]]
    prov_c = work.graph.steps[_cells(work)[exp.name]["provision"]]
    workload = _content_workload(exp.workload, paired=True)
    # `max_runs` is a budget, not what is measured: raising it continues the
    # recorded pairs (plan: "continue"). `design`: pairs of two fresh
    # launches each (graph/pairs.py); pairs of the earlier design, which
    # shared launches, are not continued.
    workload.pop("max_runs", None)
    content = _with_dataset_digest(work, exp.workload, {
        "arms": {"baseline": _launch_content(prov_b, base.server), "candidate": _launch_content(prov_c, exp.server)},
        "workload": workload, "design": PAIR_DESIGN})
    requests = {arm: _request_once(work, server, exp.workload) for arm, server in (("baseline", base.server), ("candidate", exp.server))}
    if requests["candidate"] is not None:
        content["request"] = {arm: request[0] for arm, request in requests.items()}
    # the arms' servers carry their env and args: a secret is in the content
    # (so in the identity and the step recorded in state) only as its keyed
    # digest, as in a launch's; each arm's content is then its launch's
    content = secrets.hide(content, work.cfg.sensitive)
    identity = digest(["benchmark", content])
    addr = f"benchmark.{exp.name}"
    deps = tuple(dict.fromkeys((prov_b.addr, prov_c.addr)))
    payload = {"experiment": exp, "paired": base, "host": exp.host}
    if exp.baseline is not None and exp.baseline.kind == "track":
        payload["track_lock"] = work.locks[exp.baseline.name].path
    _add(work, Step(addr, "benchmark", identity, content, deps, host=exp.host.name, experiments=(exp.name,), payload=payload))
    _cells(work)[exp.name]["benchmark"] = addr


def baseline_order(work: _Work) -> None:
    for exp in work.cfg.experiments:
        if exp.baseline is None or exp.baseline.kind != "experiment" or paired_with(work.cfg, exp, work.arms) is not None:
            continue
        base = _cells(work).get(exp.baseline.name, {}).get("benchmark")
        if base is None:
            continue
        addr = _cells(work)[exp.name]["benchmark"]
        step = work.graph.steps[addr]
        work.graph.steps[addr] = attrs.evolve(step, after=tuple(natural_sorted(set(step.after) | {base})))


def _canonical_once(work: _Work, kind: str, obj: Any, make: Callable[[], Any]) -> tuple[Any, str]:
    """(canonical form, its canonical text) of a config object, computed
    once per distinct (equal) object: matrix cells share most of them."""
    try:
        key = (kind, "", obj)
        hit = work.memo.get(key)
    except TypeError:  # an unhashable value somewhere in obj: no memo
        key, hit = None, None
    if hit is None:
        value = secrets.hide(make(), work.cfg.sensitive)
        hit = (value, canonical_text(value))
        if key is not None:
            work.memo[key] = hit
    return hit


def check(work: _Work) -> None:
    for exp in work.cfg.experiments:
        bench = work.graph.steps[_cells(work)[exp.name]["benchmark"]]
        base_addr = None
        base_content: object = None
        extra: dict = {}
        if paired_with(work.cfg, exp, work.arms) is not None:
            # both arms are in this experiment's benchmark
            base_content = {"paired": exp.baseline.name if exp.baseline.kind == "experiment" else f"track.{exp.baseline.name}"}
        elif exp.baseline is not None and exp.baseline.kind == "experiment":
            base_addr = _cells(work).get(exp.baseline.name, {}).get("benchmark")
            base_content = work.graph.steps[base_addr].identity if base_addr else None
        elif exp.baseline is not None and exp.baseline.mode == "paired":
            from specdsl.graph.track_arm import missing_reason

            base_content = {"track": exp.baseline.name, "arm": None}  # no lock to rebuild it from: an error when checked
            extra = {"baseline_missing": missing_reason(exp, work.locks.get(exp.baseline.name))}
        elif exp.baseline is not None:
            base_content = {"track": exp.baseline.name}
        addrs = []
        for a in exp.asserts:
            expr, text = _canonical_once(work, "assert", a.expr, lambda: config.canonical(a.expr))
            content = {"assert": expr, "benchmark": bench.identity, "baseline": base_content}
            identity = step_digest("check", content, {"assert": text})
            addr = f"check.{exp.name}.{a.name}"
            deps = (bench.addr,) + ((base_addr,) if base_addr else ())
            _add(work, Step(addr, "check", identity, content, deps, host=exp.host.name, experiments=(exp.name,),
                            payload={"experiment": exp, "assertion": a, **extra}))
            addrs.append(addr)
        _cells(work)[exp.name]["checks"] = tuple(addrs)


def promote(work: _Work) -> None:
    for exp in work.cfg.experiments:
        if not exp.promote:
            continue
        checks = _cells(work)[exp.name]["checks"]
        bench = work.graph.steps[_cells(work)[exp.name]["benchmark"]]
        content = {"track": exp.promote, "benchmark": bench.identity, "checks": [work.graph.steps[c].identity for c in checks]}
        identity = digest(["promote", content])
        addr = f"promote.{exp.name}"
        _add(work, Step(addr, "promote", identity, content, tuple(checks) or (bench.addr,), host=exp.host.name,
                        experiments=(exp.name,), payload={"experiment": exp}))
        _cells(work)[exp.name]["promote"] = addr


def teardown(work: _Work) -> None:
    users: dict[str, list[str]] = {}
    for exp in work.cfg.experiments:
        if "launch" not in _cells(work)[exp.name]:
            continue
        users.setdefault(_cells(work)[exp.name]["launch"], []).append(_cells(work)[exp.name]["benchmark"])
    for launch_addr, benches in users.items():
        lau = work.graph.steps[launch_addr]
        if lau.payload["server"].keep_running:
            continue
        content = {"launch": lau.identity}
        addr = "teardown." + launch_addr.split(".", 1)[1]
        _add(work, Step(addr, "teardown", digest(["teardown", content]), content, (launch_addr,), after=tuple(natural_sorted(set(benches))),
                        host=lau.host, experiments=tuple(work.users[launch_addr]), payload={"launch": launch_addr}))


def users(work: _Work) -> None:
    """Each step lists the experiment cells it serves, sorted (numbers by value)."""
    steps = work.graph.steps
    for addr, names in work.users.items():
        experiments = tuple(natural_sorted(names))
        if steps[addr].experiments != experiments:
            steps[addr] = attrs.evolve(steps[addr], experiments=experiments)


def edges(work: _Work) -> None:
    succ: dict[str, set[str]] = {a: set() for a in work.graph.steps}
    pred: dict[str, set[str]] = {a: set() for a in work.graph.steps}
    for addr, step in work.graph.steps.items():
        for dep in step.deps + step.after:
            succ.setdefault(dep, set()).add(addr)
            pred[addr].add(dep)
    rank = work.graph.rank().__getitem__
    work.graph.succ = {a: tuple(sorted(s, key=rank)) for a, s in succ.items()}
    work.graph.pred = {a: tuple(sorted(p, key=rank)) for a, p in pred.items()}


def acyclic(work: _Work) -> None:
    graph = work.graph
    if len(_topological(graph)) == len(graph.steps):
        return
    cycle = _find_cycle(graph)
    path = " -> ".join(cycle + cycle[:1])
    graph.diags.append(
        Diagnostic.error("The steps form a cycle", None, f"{path}: an experiment's baseline cannot depend on the experiment itself")
    )


def _find_cycle(graph: Graph) -> list[str]:
    """One cycle, found deterministically (first by address)."""
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    for root in natural_sorted(graph.steps):
        if root in state:
            continue
        path: list[str] = []
        stack = [(root, iter(graph.succ.get(root, ())))]
        state[root] = 1
        path.append(root)
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                stack.pop()
                path.pop()
                state[node] = 2
            elif state.get(nxt) == 1:
                return path[path.index(nxt):]
            elif nxt not in state:
                state[nxt] = 1
                path.append(nxt)
                stack.append((nxt, iter(graph.succ.get(nxt, ()))))
    return []


TRANSFORMS: tuple[tuple[str, Transform], ...] = (
    ("tracks", tracks),
    ("arm_only", arm_only),
    ("preflight", preflight),
    ("provision", provision),
    ("launch", launch),
    ("names", shared_names),
    ("benchmark", benchmark),
    ("baseline", baseline_order),
    ("check", check),
    ("promote", promote),
    ("teardown", teardown),
    ("users", users),
    ("edges", edges),
    ("acyclic", acyclic),
)


def build_graph(cfg: config.Config, *, spec_dir=None, locks: dict | None = None) -> Graph:
    """The step graph of `cfg`. A track baseline measured beside its
    candidate (`baseline_mode = "paired"`, the default) is rebuilt from the
    track's stack lock under `spec_dir` (`stacks/TRACK.lock.toml`), or from
    `locks` (track -> graph.track_arm.TrackLock) when given; without either
    it has no arm and its checks are errors that say so."""
    from specdsl.graph.track_arm import read_locks

    work = _Work(cfg, Graph(), locks=locks if locks is not None else read_locks(cfg, spec_dir), spec_dir=spec_dir)
    for _name_, transform in TRANSFORMS:
        transform(work)
    return work.graph
