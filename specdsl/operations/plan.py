"""Plan as a library operation: a resolved spec and its state in, the step
graph and its plan out, or the `Problems` that stop it (said by the CLI as
it always said them). Nothing here prints."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from specdsl.diag import Diagnostic
from specdsl.graph.build import build_graph
from specdsl.names import cell_parts, natural_sorted, target_matches
from specdsl.plan.diff import make_plan
from specdsl.plan.model import Refresh

REFRESH_HINT = ("  = hint: the plan needs to ask each host what still runs there; check the host and your ssh "
                "config, or plan offline from recorded state with --no-refresh (-refresh=false)")


@attrs.frozen
class Problems:
    """Why an operation stopped before anything ran: diagnostics (with the
    texts of the files their spans point into, for their lines), then
    one-line errors, then hints, said in that order."""

    diags: tuple[Diagnostic, ...] = ()
    sources: dict[str, str] = attrs.field(factory=dict)
    errors: tuple[str, ...] = ()
    hints: tuple[str, ...] = ()

    @classmethod
    def located(cls, diags) -> Problems:
        """`diags` with the texts of their spec files (read now)."""
        sources: dict[str, str] = {}
        for d in diags:
            if d.span is not None and d.span.file not in sources:
                try:
                    sources[d.span.file] = Path(d.span.file).read_text()
                except OSError:
                    pass
        return cls(diags=tuple(diags), sources=sources)


@attrs.frozen
class Planned:
    """A plan of a spec against its state, or why there is none."""

    graph: Any = None
    plan: Any = None
    problems: Problems | None = None
    # hosts refresh could not reach where state records nothing: the plan
    # stands (their environments taken as missing), each {"kind", "host", "detail"}
    refresh_errors: tuple[dict, ...] = ()

    @property
    def ok(self) -> bool:
        return self.problems is None


class Session:
    """What one operation shares: one `HostRegistry` for everything it asks
    of hosts (refresh, the login nodes, the recorded servers, the walk),
    made when first needed (a plan from recorded state imports none of the
    host layer) and closed with the session."""

    def __init__(self, registry=None) -> None:
        self._registry = registry
        self._own = registry is None

    @property
    def registry(self):
        if self._registry is None:
            from specdsl.hosts import HostRegistry

            self._registry = HostRegistry()
        return self._registry

    def close(self) -> None:
        if self._own and self._registry is not None:
            self._registry.close()
            self._registry = None

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _sharing(session: Session | None) -> Session:
    """A session on `session`'s registry (left open: it is the caller's), or one of its own."""
    return Session(session.registry) if session is not None else Session()


def spec_graph(cfg, spec: str | Path):
    """The step graph of `cfg`, the configuration of the spec at `spec`:
    a track baseline's lock (`stacks/TRACK.lock.toml`) and a relative
    dataset file are the spec's folder's, whatever the current directory,
    so every command that finds results by identity finds apply's."""
    return build_graph(cfg, spec_dir=Path(spec).parent)


def plan_spec(cfg, spec: str, state, state_dir: Path, *, digest: str, variables: dict, targets=(), rerun: bool = False,
              more: int = 0, refresh: bool = True, session: Session | None = None, max_launches: int | None = None,
              max_time: float | None = None) -> Planned:
    """The plan of the spec at `spec` (resolved to `cfg`) against `state`:
    its graph, the targets checked, the hosts asked what still runs there
    (unless not `refresh`), each cost timed from the durations recorded in
    `state_dir`, and each dataset file a benchmark to run reads checked."""
    graph = spec_graph(cfg, spec)
    if graph.diags:
        return Planned(problems=Problems(diags=tuple(graph.diags)))
    unknown = _unknown_targets(cfg, spec, targets)
    if unknown:
        return Planned(problems=Problems(errors=tuple(unknown)))
    refresh_errors: tuple[dict, ...] = ()
    if not refresh:
        fresh = Refresh.from_state(state)
    else:  # asks hosts over HTTP: imported only when used (requests is slow to import)
        from specdsl.apply.refresh import Unreachable
        from specdsl.apply.refresh import refresh as ask

        names = {h.name: h for h in cfg.hosts} | {e.host.name: e.host for e in cfg.experiments}
        wanted = {s.identity: s.payload["host"] for s in graph.steps.values() if s.kind == "provision"}
        with _sharing(session) as hosts:
            try:
                fresh = ask(state, hosts.registry, names=names, wanted=wanted, strict=True)
            except Unreachable as exc:
                recorded = _recorded_hosts(state, names)
                if exc.fresh is None or any(h in recorded for h in exc.hosts):
                    # records there would be trusted unchecked: a plan that says "changes pending" for the wrong reason
                    return Planned(problems=Problems(errors=tuple(f"cannot refresh: {cause}" for cause in exc.causes),
                                                     hints=(REFRESH_HINT,)))
                fresh = exc.fresh  # nothing recorded there: nothing to check, its environments are to be made
                refresh_errors = tuple({"kind": "unreachable", "host": h, "detail": c} for h, c in zip(exc.hosts, exc.causes))

    if refresh:
        fresh = attrs.evolve(fresh, endpoints=ask_endpoints(graph))

    def planned(durations=None):
        return make_plan(graph, state, fresh, spec=spec, spec_digest=digest, variables=variables, rerun=rerun,
                         targets=tuple(targets), more=more, durations=durations, max_launches=max_launches,
                         max_time=max_time)

    plan = planned()
    # the costs' times: the durations recorded for what this plan runs or
    # leaves undecided, read from the state folder (only those run folders),
    # then the same plan with them (planning is pure and takes 0.04 s)
    wanted_costs = {c.addr for c in plan.costs} | {graph.steps[u.check].deps[0] for u in plan.undecided}
    if wanted_costs and state is not None and state.runs:
        from specdsl.plan.durations import recorded_durations

        plan = planned(recorded_durations(state, state_dir, graph, wanted_costs))
    problems = dataset_problems(graph, plan, Path(spec).parent)
    return Planned(graph, plan, problems, refresh_errors)


def ask_endpoints(graph) -> tuple:
    """Each server already running (`url`) that a benchmark of the graph
    measures, asked what it is now (servers.endpoint.probe): (url shown,
    identity, "") or (url shown, None, why it did not answer). Nothing is
    launched; a server that does not answer leaves the spec valid and the
    plan says so."""
    servers = {}
    for step in graph.steps.values():
        if step.kind == "benchmark" and "endpoint" in step.payload:
            if "paired" in step.payload:  # both arms servers already running
                servers.setdefault(step.content["arms"]["baseline"]["endpoint"]["url"], step.payload["paired"].server)
                servers.setdefault(step.content["arms"]["candidate"]["endpoint"]["url"], step.payload["experiment"].server)
            else:
                servers.setdefault(step.content["endpoint"]["url"], step.payload["endpoint"])
    if not servers:
        return ()
    from specdsl.servers.endpoint import EndpointError, probe

    out = []
    for url, server in sorted(servers.items()):
        try:
            out.append((url, probe(server).identity, ""))
        except EndpointError as exc:
            text = str(exc)
            out.append((url, None, text[len(url) + 1:] if text.startswith(url + " ") else text))
    return tuple(out)


def _recorded_hosts(state, names: dict) -> set[str]:
    """The host keys (and block names, as earlier versions wrote them) that
    `state` records an environment or a server on."""
    from specdsl.hosts import host_key

    found = {e.host for e in state.environments} | {s.host for s in state.servers} if state is not None else set()
    return found | {host_key(names[n]) for n in found if n in names}


def plan_saved(cfg, spec: str, saved) -> Planned:
    """A saved plan (already checked against the spec and state) with the
    graph it walks, and the dataset files it reads checked."""
    graph = spec_graph(cfg, spec)
    return Planned(graph, saved, dataset_problems(graph, saved, Path(spec).parent))


def plan_config(cfg, spec: str, state, *, digest: str, variables: dict | None = None, targets=(),
                rerun: bool = False) -> Planned:
    """The plan of a configuration built in code from the spec at `spec`
    (bisect's intermediate experiments, calibrate's A/A pairs) against
    recorded state, asking no host."""
    graph = spec_graph(cfg, spec)
    plan = make_plan(graph, state, Refresh.from_state(state), spec=spec, spec_digest=digest, variables=variables,
                     rerun=rerun, targets=tuple(targets))
    return Planned(graph, plan)


def _unknown_targets(cfg, spec: str, targets) -> list[str]:
    """An error for each `--target` no experiment of `cfg` matches."""
    experiments = cfg.experiments
    unknown = [t for t in targets if not any(target_matches(t, e.name) for e in experiments)]
    if not unknown:
        return []
    from specdsl.diag import did_you_mean

    known = {e.name for e in experiments} | {e.group for e in experiments}
    groups = natural_sorted({e.group for e in experiments})
    errors = []
    for target in unknown:
        parts = cell_parts(target)
        cells = [e for e in experiments if parts is not None and e.group == parts[0] and e.matrix]
        if cells and parts[1]:  # a slice no cell matches: say the keys and values there are
            shown = "; ".join(f"{k}: {', '.join(natural_sorted({str(dict(e.matrix)[k]) for e in cells}))}"
                              for k in dict(cells[0].matrix))
            errors.append(f"--target {target}: no cell of {parts[0]} has those values in {spec}; its matrix: {shown}")
            continue
        if any(e.name == target for e in getattr(cfg, "searches", ())):
            errors.append(f"--target {target}: a search experiment, not applied by apply: run `specdsl search {target} {spec}`")
            continue
        hint = did_you_mean(target, known) or "experiments: " + ", ".join(groups)
        errors.append(f"--target {target}: no experiment of that name in {spec}; {hint}")
    return errors


def dataset_problems(graph, plan, spec_dir: Path) -> Problems | None:
    """Each dataset file a benchmark to run cannot use, as an error at its
    workload block, and each script its command names that is not there
    (`script_diagnostics`), before any server starts; None when there is none."""
    from specdsl.bench.datasets import check_dataset

    diags, seen = [], set()
    for change in plan.changes:
        step = graph.steps[change.addr]
        if change.kind != "benchmark" or change.action.word != "run":
            continue
        exp = step.payload["experiment"]
        workload = exp.workload
        if (workload, exp.host.ssh) in seen:
            continue
        seen.add((workload, exp.host.ssh))
        why = check_dataset(workload, spec_dir)
        if why:
            diags.append(Diagnostic.error(f"Workload `{workload.name}`: its dataset cannot be used", workload.span,
                                          f"{why}; fix the file or `dataset` (nothing was started)"))
        if exp.host.ssh is None:  # elsewhere the script is the host's (a login node's copies are checked apart)
            diags += script_diagnostics(workload, spec_dir)
        from specdsl.bench.tokenizer_choice import missing_tokenizer

        why = missing_tokenizer(workload, spec_dir)
        if why:
            diags.append(Diagnostic.error(f"Workload `{workload.name}`: its tokenizer cannot be used", workload.span,
                                          f'{why}; give a folder with tokenizer.json, or `tokenizer = "model"` (nothing was started)'))
    return Problems.located(diags) if diags else None


def script_diagnostics(workload, spec_dir: Path) -> list[Diagnostic]:
    """An error at each item of a command workload's argv that names a
    script of the spec's folder that is not there (plan.files.command_scripts)."""
    from specdsl.plan.files import command_scripts

    diags = []
    for i, word, path in command_scripts(workload.command, Path(spec_dir)):
        if path.exists():
            continue
        span = workload.command_spans[i] if i < len(workload.command_spans) else workload.span
        diags.append(Diagnostic.error(
            f"Workload `{workload.name}`: its command names `{word}`, which is not there", span or workload.span,
            f"looked for {path} (a relative path in `command` is the spec's folder's); fix the path or add the "
            "file (nothing was started)"))
    return diags


def login_node_copies(graph, plan, spec_dir: Path) -> tuple[list, Problems | None]:
    """The files the plan's jobs on login-node hosts (`ssh` with `slurm`)
    will have copied to the login node (`plan.files.planned_copies`), or the
    problem of each one not on this machine (an error at the block that
    names it), as apply's preflight finds it."""
    from specdsl.plan.files import job_files, missing_detail, missing_files, planned_copies
    from specdsl.plan.slurm import slurm_jobs

    jobs = [j for j in slurm_jobs(graph, plan) if getattr(j.host, "ssh", None)]
    if not jobs:
        return [], None
    files = [f for name in sorted({j.host.name for j in jobs}) for f in job_files(graph, jobs, name, spec_dir)]
    gone = missing_files(files)
    if gone:
        return [], Problems.located([
            Diagnostic.error(f"{f.what[0].upper()}{f.what[1:]}: a file to copy to the login node is missing", f.span,
                             missing_detail(f) + " (nothing was started)") for f in gone])
    return planned_copies(graph, jobs, spec_dir), None


def slurm_problems(graph, plan, session: Session | None = None,
                   state=None) -> tuple[Problems | None, tuple[dict, ...]]:
    """What the cluster says of each Slurm host the plan submits jobs to,
    asked as apply's preflight asks it and read-only (`preflight.for_plan`:
    nothing is submitted, `sbatch --test-only` at most): each problem an
    error at the host's block, the setting the cause is about named in the
    hint; a cluster that does not answer also gets the hint of a host
    refresh cannot reach. (problems or None, refresh errors): a cluster
    that does not answer where `state` records nothing is not an error of
    the plan, as a host refresh cannot reach is not (plan_spec): nothing
    there needs checking, its environments are planned as new, and it is
    a refresh error ({"kind": "unreachable", "host", "detail"}) that apply
    must get past."""
    from specdsl.apply.slurm.preflight import for_plan
    from specdsl.hosts import host_key
    from specdsl.plan.slurm import slurm_jobs

    hosts = {j.host.name: j.host for j in slurm_jobs(graph, plan)}
    recorded = _recorded_hosts(state, hosts)
    diags, unreachable, refresh_errors = [], False, []
    with _sharing(session) as s:
        for name in sorted(hosts):
            said = for_plan(hosts[name], s.registry)
            if said and all(p.unreachable for p in said) and not ({name, host_key(hosts[name])} & recorded):
                refresh_errors += [{"kind": "unreachable", "host": host_key(hosts[name]), "detail": p.text} for p in said]
                continue
            for problem in said:
                diags.append(_slurm_diagnostic(hosts[name], problem))
                unreachable = unreachable or problem.unreachable
    if not diags:
        return None, tuple(refresh_errors)
    return attrs.evolve(Problems.located(diags), hints=(REFRESH_HINT,) if unreachable else ()), tuple(refresh_errors)


def _slurm_diagnostic(host, problem) -> Diagnostic:
    """A preflight `Problem` of `host` as plan says it: at the host block,
    the place of the setting that is the cause in the hint."""
    text = problem.text
    for lead, head in ((f"host {host.name}: ", ": "), (f"host {host.name} ", " ")):
        if text.startswith(lead):
            text = head + text[len(lead):]
            break
    else:
        text = ": " + text
    span = dict(host.slurm.spans).get(problem.setting) if problem.setting else None
    where = f"`slurm.{problem.setting}` is set at {span}; " if span is not None else ""
    how = ("the cluster did not answer plan, which asks it as apply's preflight does" if problem.unreachable
           else "found by plan, which asks the cluster as apply's preflight does")
    return Diagnostic.error(f"Host `{host.name}`{text}", host.span, f"{where}{how} (nothing was submitted)")


def ask_login_nodes(graph, plan, copies: list, session: Session | None = None) -> tuple[list, dict]:
    """`copies` with what each login node says: "already there" or "will
    copy", asked in the one command apply's stage asks
    (`apply.slurm.files.present`); a login node that cannot be reached leaves its
    copies "copied unless already there", with why (host -> why)."""
    from specdsl.apply.slurm.files import present
    from specdsl.hosts import HostError
    from specdsl.plan.files import COPY, THERE
    from specdsl.plan.slurm import slurm_jobs

    decls = {j.host.name: j.host for j in slurm_jobs(graph, plan)}
    out, notes = [], {}
    with _sharing(session) as hosts:
        for name in sorted({c.host for c in copies}):
            mine = [c for c in copies if c.host == name]
            # the login shell starts in the home folder: a workdir under ~ is asked relative to it
            root = Path(mine[0].workdir.removeprefix("~/"))
            try:
                there = present(hosts.registry.get(decls[name]), sorted({root / c.folder for c in mine}))
            except (HostError, OSError) as exc:
                notes[name] = f"the login node was not reached: {str(exc).strip()[-200:]}"
                out += mine
                continue
            out += [attrs.evolve(c, status=THERE if str(root / c.folder) in there else COPY) for c in mine]
    return out, notes


def stale_servers(graph, state, *, refresh: bool, session: Session | None = None) -> list:
    """The recorded servers apply will stop or drop before its walk (left by
    an apply that was killed, or no longer in the spec): `orphans.for_plan`."""
    if state is None or not state.servers:
        return []
    from specdsl.apply.orphans import for_plan
    from specdsl.operations.recorded_servers import graph_hosts, launch_identities

    with _sharing(session) as hosts:
        return for_plan(state, launch_identities(graph), refresh=refresh, registry=hosts.registry,
                        decls=graph_hosts(graph))
