"""Config -> DAG of steps, built by an ordered list of small named transforms.

    preflight   one per host
    provision   one per (host, stack content)
    launch      one per (provision, server content)
    benchmark   one per experiment cell (launch + workload)
    baseline    ordering edge: a baseline's benchmark runs before its candidate's
    check       one per assertion (reads the benchmark, and the baseline's)
    promote     one per promoting experiment (needs every check)
    teardown    one per launch not kept running
    acyclic     a cycle becomes a diagnostic

Experiments that share a stack or a server configuration share those steps.
"""

from __future__ import annotations

from typing import Callable

import attrs
import networkx as nx

from specdsl.diag import Diagnostic
from specdsl.graph.steps import KIND_ORDER, Step, digest
from specdsl.model import config


@attrs.define
class Graph:
    """The steps by address, the networkx DAG over them, and diagnostics."""

    steps: dict[str, Step] = attrs.Factory(dict)
    dag: nx.DiGraph = attrs.Factory(nx.DiGraph)
    diags: list[Diagnostic] = attrs.Factory(list)
    # experiment cell -> addresses of its steps by kind
    by_experiment: dict[str, dict[str, str]] = attrs.Factory(dict)

    def order(self) -> list[str]:
        """Deterministic topological order: by kind, then address."""
        return list(nx.lexicographical_topological_sort(self.dag, key=lambda a: (KIND_ORDER[self.steps[a].kind], a)))

    def downstream(self, addr: str) -> set[str]:
        return nx.descendants(self.dag, addr)


@attrs.define
class _Work:
    cfg: config.Config
    graph: Graph
    # identity -> address, per kind, to share steps and name them
    seen: dict[tuple[str, str], str] = attrs.Factory(dict)


Transform = Callable[[_Work], None]


def _content_stack(stack: config.Stack) -> dict:
    return {
        "python": stack.python,
        "cuda": stack.cuda,
        "packages": list(stack.packages),
        "index": list(stack.index),
        "find_links": list(stack.find_links),
        "overrides": list(stack.overrides),
        "exclude": list(stack.exclude),
        "env": dict(stack.env),
        "installer": stack.installer,
    }


def _content_server(server: config.Server) -> dict:
    # ready_timeout and keep_running change how specdsl waits and cleans up,
    # not the server: they are left out so changing them relaunches nothing.
    out = {"engine": server.engine, "model": server.model, "args": {k: _jsonable(v) for k, v in server.args}, "env": dict(server.env)}
    if server.port is not None:
        out["port"] = server.port
    if server.command:
        out["command"] = list(server.command)
        out["ready_url"] = server.ready_url
    return out


def _content_workload(workload: config.Workload) -> dict:
    out = config.canonical(workload)
    out.pop("__kind__", None)
    out.pop("name", None)
    return out


def _content_host(host: config.Host) -> dict:
    return {"name": host.name, "ssh": host.ssh, "gpus": host.gpus, "workdir": host.workdir}


def _jsonable(v):
    return list(v) if isinstance(v, tuple) else v


def _name(work: _Work, kind: str, base: str, identity: str, user: str) -> str:
    """`kind.base` for the first identity under that name; later ones get
    `/user` (the experiment that uses them) so addresses stay readable and
    stable when contents change."""
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
    work.seen[key] = addr
    return addr


def _add(work: _Work, step: Step) -> Step:
    prior = work.graph.steps.get(step.addr)
    if prior is not None:
        step = attrs.evolve(prior, experiments=tuple(sorted(set(prior.experiments) | set(step.experiments))))
    work.graph.steps[step.addr] = step
    return step


def _cells(work: _Work) -> dict:
    return work.graph.by_experiment


def preflight(work: _Work) -> None:
    for exp in work.cfg.experiments:
        content = {"host": _content_host(exp.host)}
        identity = digest(["preflight", content])
        addr = _name(work, "preflight", exp.host.name, identity, exp.name)
        _add(work, Step(addr, "preflight", identity, content, host=exp.host.name, experiments=(exp.name,), payload={"host": exp.host}))
        _cells(work).setdefault(exp.name, {})["preflight"] = addr


def provision(work: _Work) -> None:
    for exp in work.cfg.experiments:
        pre = work.graph.steps[_cells(work)[exp.name]["preflight"]]
        content = {"host": pre.identity, "stack": _content_stack(exp.stack)}
        identity = digest(["provision", content])
        addr = _name(work, "provision", exp.stack.name, identity, exp.name)
        _add(work, Step(addr, "provision", identity, content, (pre.addr,), host=exp.host.name, experiments=(exp.name,),
                        payload={"stack": exp.stack, "host": exp.host}))
        _cells(work)[exp.name]["provision"] = addr


def launch(work: _Work) -> None:
    for exp in work.cfg.experiments:
        prov = work.graph.steps[_cells(work)[exp.name]["provision"]]
        content = {"provision": prov.identity, "server": _content_server(exp.server)}
        identity = digest(["launch", content])
        addr = _name(work, "launch", exp.server.name, identity, exp.name)
        _add(work, Step(addr, "launch", identity, content, (prov.addr,), host=exp.host.name, experiments=(exp.name,),
                        payload={"server": exp.server, "host": exp.host, "stack": exp.stack}))
        _cells(work)[exp.name]["launch"] = addr


def benchmark(work: _Work) -> None:
    for exp in work.cfg.experiments:
        lau = work.graph.steps[_cells(work)[exp.name]["launch"]]
        content = {"launch": lau.identity, "workload": _content_workload(exp.workload)}
        identity = digest(["benchmark", content])
        addr = f"benchmark.{exp.name}"
        _add(work, Step(addr, "benchmark", identity, content, (lau.addr,), host=exp.host.name, experiments=(exp.name,),
                        payload={"experiment": exp}))
        _cells(work)[exp.name]["benchmark"] = addr


def baseline_order(work: _Work) -> None:
    for exp in work.cfg.experiments:
        if exp.baseline is None or exp.baseline.kind != "experiment":
            continue
        base = _cells(work).get(exp.baseline.name, {}).get("benchmark")
        if base is None:
            continue
        addr = _cells(work)[exp.name]["benchmark"]
        step = work.graph.steps[addr]
        work.graph.steps[addr] = attrs.evolve(step, after=tuple(sorted(set(step.after) | {base})))


def check(work: _Work) -> None:
    for exp in work.cfg.experiments:
        bench = work.graph.steps[_cells(work)[exp.name]["benchmark"]]
        base_addr = None
        base_content: object = None
        if exp.baseline is not None and exp.baseline.kind == "experiment":
            base_addr = _cells(work).get(exp.baseline.name, {}).get("benchmark")
            base_content = work.graph.steps[base_addr].identity if base_addr else None
        elif exp.baseline is not None:
            base_content = {"track": exp.baseline.name}
        addrs = []
        for a in exp.asserts:
            expr = config.canonical(a.expr)
            content = {"assert": expr, "benchmark": bench.identity, "baseline": base_content}
            identity = digest(["check", content])
            addr = f"check.{exp.name}.{a.name}"
            deps = (bench.addr,) + ((base_addr,) if base_addr else ())
            _add(work, Step(addr, "check", identity, content, deps, host=exp.host.name, experiments=(exp.name,),
                            payload={"experiment": exp, "assertion": a}))
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
        users.setdefault(_cells(work)[exp.name]["launch"], []).append(_cells(work)[exp.name]["benchmark"])
    for launch_addr, benches in users.items():
        lau = work.graph.steps[launch_addr]
        if lau.payload["server"].keep_running:
            continue
        content = {"launch": lau.identity}
        addr = "teardown." + launch_addr.split(".", 1)[1]
        _add(work, Step(addr, "teardown", digest(["teardown", content]), content, (launch_addr,), after=tuple(sorted(set(benches))),
                        host=lau.host, experiments=lau.experiments, payload={"launch": launch_addr}))


def edges(work: _Work) -> None:
    dag = work.graph.dag
    for addr in work.graph.steps:
        dag.add_node(addr)
    for addr, step in work.graph.steps.items():
        for dep in step.deps + step.after:
            dag.add_edge(dep, addr)


def acyclic(work: _Work) -> None:
    try:
        cycle = nx.find_cycle(work.graph.dag)
    except nx.NetworkXNoCycle:
        return
    path = " -> ".join([a for a, _ in cycle] + [cycle[0][0]])
    work.graph.diags.append(
        Diagnostic.error("The steps form a cycle", None, f"{path}: an experiment's baseline cannot depend on the experiment itself")
    )


TRANSFORMS: tuple[tuple[str, Transform], ...] = (
    ("preflight", preflight),
    ("provision", provision),
    ("launch", launch),
    ("benchmark", benchmark),
    ("baseline", baseline_order),
    ("check", check),
    ("promote", promote),
    ("teardown", teardown),
    ("edges", edges),
    ("acyclic", acyclic),
)


def build_graph(cfg: config.Config) -> Graph:
    work = _Work(cfg, Graph())
    for _name_, transform in TRANSFORMS:
        transform(work)
    return work.graph
