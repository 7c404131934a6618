"""Steps on Slurm hosts: each job of `plan.slurm.slurm_jobs` is one batch
job, submitted with `sbatch --parsable` from this machine or, for a host
with `ssh`, on that login node (`site`), followed with
`scontrol`/`sacct` and its events file, cancelled with `scancel` when the
walk stops (Ctrl-C). See docs/slurm.md.

`SlurmExecutor` is a batch executor of the scheduler (apply/executor.py):
it claims the plan's steps on Slurm hosts, and the scheduler runs it
before its local steps. It runs the preflight of each Slurm host here
(nothing is submitted when one fails), then the jobs, at most
`slurm.max_parallel` of a host at once, reporting each step's start,
progress and end as the job's events arrive and Slurm's job states as they
change. When a job ends, what it recorded (runs, their folders,
environments, step records) is imported into the state through the walk's
`StateWriter`, each run carrying its job id; the steps it did not finish
are recorded as failed with why the job ended (time limit, cancelled, node
failure). Each step's end goes to the scheduler (`Report.finish`), whose
one rule skips the dependants of a step that ended badly, the local checks
and promotions among them; what it skipped shows in `Report.finished`,
which this executor reads before it runs or fails a step.

Shared filesystem: required between the submit host and the compute
nodes. Submitting from this machine, the job folder (under
`slurm.workdir`, by default the state folder), the environments, the
spec's folder and the interpreter running specdsl must be visible at the
same paths on the nodes. Through a login node, only the login node's
`slurm.workdir` must be (this machine shares nothing: results come back
over SSH). A job that cannot see its folder fails with that said.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import time
from pathlib import Path

import attrs

from specdsl import private
from specdsl.apply.context import Walk
from specdsl.apply.executor import Report
from specdsl.apply.outcome import Outcome, Reason, Status
from specdsl.apply.slurm import files as slurm_files
from specdsl.apply.slurm import folder as job_folder
from specdsl.apply.slurm.preflight import check as preflight_check
from specdsl.apply.slurm.preflight import check_python
from specdsl.apply.slurm.site import LocalSite, SshSite
from specdsl.hosts.base import HostError
from specdsl.hosts.slurm import JobInfo, SlurmClient, SlurmError
from specdsl.plan.files import job_files
from specdsl.plan.slurm import SlurmJob, on_slurm, resources, slurm_jobs
from specdsl.state import load_state, new_run_id, utc_now

POLL_S = 1.0
UNRUNNABLE_S = 20.0  # a job pending for a reason no wait cures (its nodes are down) is cancelled after this
CANCEL_WAIT_S = 60.0
_UNRUNNABLE = ("ReqNodeNotAvail", "NodeDown", "PartitionDown", "PartitionInactive", "Nodes_required_for_job_are_DOWN",
               "PartitionNodeLimit", "PartitionConfig", "InvalidAccount", "BadConstraints")


def slurm_steps(walk: Walk) -> set[str]:
    return {c.addr for c in walk.plan.changes if c.addr in walk.graph.steps and on_slurm(walk.graph, c.addr)}


class SlurmExecutor:
    """The steps of Slurm hosts, run as batch jobs (docs/slurm.md)."""

    name = "slurm"

    def __init__(self, client: SlurmClient | None = None) -> None:
        self.client = client  # for every host (tests); else each site's own

    def claims(self, walk: Walk) -> set[str]:
        """The preflights of Slurm hosts and the steps of the jobs to submit.
        A Slurm host's step no job runs (reused: its environment exists, its
        server is not needed) is the local executor's, whose handler says
        so without touching the cluster."""
        preflights = {a for a in slurm_steps(walk) if walk.graph.steps[a].kind == "preflight"}
        return preflights | {a for job in slurm_jobs(walk.graph, walk.plan) for a in job.steps}

    def run(self, walk: Walk, steps: frozenset[str], report: Report) -> None:
        SlurmRun(walk, steps, report, self.client).run()


@attrs.define
class Active:
    """A job submitted and not yet imported."""

    job: SlurmJob
    folder: Path  # on the submit host
    id: str
    submitted: float
    site: object = None
    local: Path | None = None  # the folder here: `folder` itself, or where a login node's is brought back
    state: str = ""
    reason: str = ""
    pending_bad_since: float | None = None
    events_read: int = 0  # bytes of the events file read
    started: set = attrs.Factory(set)
    finished: dict = attrs.Factory(dict)  # addr -> Outcome (as the job reported it)
    cancelled_by_us: bool = False
    why: str = ""  # set when we cancel it for a reason of ours


class SlurmRun:
    """One walk's Slurm steps (`steps`): preflights, then the jobs."""

    def __init__(self, walk: Walk, steps: frozenset[str], report: Report, client: SlurmClient | None = None) -> None:
        self.walk = walk
        self.steps = steps
        self.report = report
        self.client = client  # for every host (tests); else each site's own
        self.graph = walk.graph
        self.jobs = slurm_jobs(walk.graph, walk.plan)
        self.rank = {a: i for i, a in enumerate(walk.graph.order())}
        self.handled = report.finished  # addr -> its outcome, every step of the walk that has ended
        self.sites: dict[str, LocalSite | SshSite] = {}
        self.staged: dict[str, slurm_files.Staged] = {}  # host -> its files' copies on the login node

    def site(self, decl) -> LocalSite | SshSite:
        """Where host `decl`'s jobs are submitted (`HostError` when its
        login node cannot be reached)."""
        site = self.sites.get(decl.name)
        if site is None:
            if decl.ssh:
                site = SshSite(decl, self.walk, self.walk.registry.get(decl), self.client)
            else:
                site = LocalSite(decl, self.walk, self.client)
            self.sites[decl.name] = site
        return site

    # -- reporting --------------------------------------------------------------
    def _finish(self, outcome: Outcome) -> None:
        """A step's end, to the scheduler, once: it records the outcome and,
        when it ended badly, skips its dependants (in the jobs and on this
        machine) by its one rule."""
        if outcome.addr not in self.handled:
            self.report.finish(outcome)

    def _progress(self, addr: str, message: str) -> None:
        self.walk.hooks.progress(addr, message)

    def _note(self, addr: str, message: str) -> None:
        """A job's own news (submitted, its Slurm state changed): always
        shown where the hooks can (the console's notes), else as progress."""
        note = getattr(self.walk.hooks, "note", None)
        if note is not None:
            note("    " + message.replace("[", "\\["))  # a note is console markup: brackets literal
        else:
            self.walk.hooks.progress(addr, message)

    # -- the walk ---------------------------------------------------------------
    def _folder_of(self, job: SlurmJob) -> Path:
        safe = re.sub(r"[^A-Za-z0-9._=-]+", "_", job.name)[:80]
        return self.sites[job.host.name].root / "jobs" / f"{new_run_id()}-{safe}"

    def run(self) -> None:
        hosts = {}
        for addr in sorted(self.steps):
            step = self.graph.steps[addr]
            if step.kind == "preflight":
                hosts.setdefault(step.payload["host"].name, (step.payload["host"], []))[1].append(addr)
        for job in self.jobs:
            hosts.setdefault(job.host.name, (job.host, []))
        failed_hosts = set()
        for name, (host, preflights) in sorted(hosts.items()):
            problems = self._preflight(host)
            for addr in preflights:
                self.walk.hooks.start(addr, "preflight")
                if problems:
                    self._finish(Outcome(addr, "preflight", Status.FAILED, Reason.ERROR, "\n".join(problems)))
                else:
                    opts = " ".join(resources(host.slurm)) or "the cluster's defaults"
                    self._finish(Outcome(addr, "preflight", Status.COMPLETED, Reason.DONE, f"slurm ready ({opts})"))
            if problems:
                failed_hosts.add(name)
        pending = []
        for job in self.jobs:
            if job.host.name in failed_hosts:
                root = job.preflight or job.steps[0]
                for addr in job.steps:
                    if addr not in self.handled:
                        self._finish(Outcome(addr, self.graph.steps[addr].kind, Status.SKIPPED, Reason.UPSTREAM_FAILED,
                                             f"skipped because {root} failed", root=root))
            else:
                pending.append(job)
        self._loop(pending)

    def _preflight(self, host) -> list[str]:
        """What only the cluster and the login node can say (the language's
        checks, `keep_running` on a Slurm host among them, are validate's:
        a spec that fails them never gets here)."""
        files = self._files(host) if host.ssh else []
        problems = slurm_files.missing(files)
        try:
            site = self.site(host)
            site.prepare()
            script = site.root / "preflight.sh"
            site.write_text(script, "#!/bin/sh\ntrue\n", mode=0o700)
        except HostError as exc:
            return problems + [str(exc) if str(exc).startswith("host ") else f"host {host.name}: {exc}"]
        problems += preflight_check(host, site.client, script)
        if not problems and (site.remote or host.slurm.python):
            problems += check_python(host, site.client, site.python, site.package)
        if not problems and site.remote and files:
            problems += self._stage(host, site, files)
        return problems

    def _files(self, host) -> list:
        """The files of this machine that host `host`'s jobs name, as plan
        lists them (`plan.files.job_files`)."""
        return job_files(self.graph, self.jobs, host.name, Path(self.walk.spec_dir))

    def _stage(self, host, site, files: list) -> list[str]:
        """Copy `files` to the login node; the problems (a copy that failed)."""
        try:
            staged = slurm_files.stage(site.host, site.root, files)
        except HostError as exc:
            return [f"host {host.name}: copying the spec's files to the login node: {exc}"]
        self.staged[host.name] = staged
        lead_addr = next((lead(self.graph, j) for j in self.jobs if j.host.name == host.name), None)
        for f, digest, remote in staged.copied + staged.kept:
            verb = "copied" if (f, digest, remote) in staged.copied else "already there"
            if lead_addr is not None:
                self._note(lead_addr, f"{f.what}: {f.text} (sha256 {digest[:12]}) {verb}: {remote} on the login node")
        return []

    def _loop(self, pending: list[SlurmJob]) -> None:
        active: list[Active] = []
        while pending or active:
            if self.walk.stop.is_set():
                self._stop_all(active, pending)
                return
            for job in list(pending):
                cap = job.host.slurm.max_parallel
                if sum(1 for a in active if a.job.host.name == job.host.name) >= cap:
                    continue
                pending.remove(job)
                submitted = self._submit(job)
                if submitted is not None:
                    active.append(submitted)
            for a in list(active):
                self._pump(a)
                info = self._poll(a)
                if info is not None and info.ended:
                    self._pump(a)
                    self._end(a, info)
                    active.remove(a)
            if active:
                self.walk.stop.wait(POLL_S)

    # -- one job ----------------------------------------------------------------
    def _description(self, job: SlurmJob, folder: Path) -> dict:
        from specdsl.graph.build import Graph

        local: dict = {}
        steps = {}
        staged = self.staged.get(job.host.name)
        files: dict = {}
        for addr in job.steps:
            step = self.graph.steps[addr]
            payload = {k: _here(v, local) for k, v in step.payload.items()}
            if staged is not None:
                payload = {k: staged.rewrite(v, Path(self.walk.spec_dir), files) for k, v in payload.items()}
            steps[addr] = attrs.evolve(step, payload=payload)
        keep = set(steps)
        graph = Graph(steps=steps, succ={a: tuple(s for s in self.graph.succ.get(a, ()) if s in keep) for a in keep},
                      pred={a: tuple(p for p in self.graph.pred.get(a, ()) if p in keep) for a in keep})
        plan = attrs.evolve(self.walk.plan, changes=tuple(c for c in self.walk.plan.changes if c.addr in keep))
        site = self.sites[job.host.name]
        return {"plan": plan, "graph": graph, "state": self.walk.writer.state, "variables": dict(self.walk.variables),
                "spec_dir": site.spec_dir or str(folder), "env_root": str(site.env_root),
                "first": lead(self.graph, job), "name": job.name, "steps": list(job.steps)}

    def _script(self, job: SlurmJob, folder: Path) -> Path:
        site = self.sites[job.host.name]
        path = folder / "job.sh"
        site.write_text(path, batch_script(folder, site.python, site.package, site.shares), mode=0o700)
        return path

    def _submit(self, job: SlurmJob) -> Active | None:
        site = self.sites[job.host.name]
        folder = self._folder_of(job)
        first = lead(self.graph, job)
        try:
            site.make_dirs(folder)
            site.write_text(folder / job_folder.DESCRIPTION, job_folder.description_text(self._description(job, folder)))
            script = self._script(job, folder)
        except HostError as exc:
            self.walk.hooks.start(first, self.graph.steps[first].kind)
            self._fail_job_steps(job, None, f"writing the job folder {folder}: {exc}", "")
            return None
        options = [f"--job-name=specdsl-{job.name}"[:120], f"--output={folder / 'slurm.out'}", "--no-requeue",
                   f"--chdir={folder}", *resources(job.host.slurm)]
        self.walk.hooks.start(first, self.graph.steps[first].kind)
        try:
            job_id = site.client.submit(options, script, cwd=folder)
        except SlurmError as exc:
            self._fail_job_steps(job, None, f"{exc}", str(folder / "slurm.out"))
            return None
        local = site.local_of(folder)
        private.write_text(local / "slurm-job-id", job_id + "\n")
        self._note(first, f"slurm job {job_id} submitted ({' '.join(resources(job.host.slurm)) or 'defaults'}), "
                              f"steps: {', '.join(job.steps)}")
        return Active(job, folder, job_id, time.monotonic(), site=site, local=local)

    def _pump(self, a: Active) -> None:
        """Forward the job's new events to the walk's hooks."""
        try:
            data = a.site.read_from(a.folder / job_folder.EVENTS, a.events_read)
        except HostError as exc:
            self._progress(lead(self.graph, a.job), f"slurm job {a.id}: cannot read its events ({exc}); asking again")
            return
        complete = data[: data.rfind(b"\n") + 1]  # a line still being written waits for the next read
        a.events_read += len(complete)
        for line in complete.decode("utf-8", errors="replace").splitlines():
            try:
                doc = json.loads(line)
            except ValueError:
                continue
            event = doc.get("event")
            if event == "start" and doc.get("addr") in self.graph.steps:
                if doc["addr"] != lead(self.graph, a.job):
                    self.walk.hooks.start(doc["addr"], doc.get("kind", ""))
                a.started.add(doc["addr"])
            elif event == "progress" and doc.get("addr") in self.graph.steps:
                self._progress(doc["addr"], f"[job {a.id}] {doc.get('message', '')}")
            elif event == "finish":
                outcome = job_folder.outcome_of(doc["outcome"])
                a.finished[outcome.addr] = outcome
                a.started.add(outcome.addr)
                if outcome.status in (Status.COMPLETED, Status.REUSED) and outcome.addr in a.job.steps:
                    self._finish(outcome)  # a failure or interruption waits: the job's end may be its cause

    def _poll(self, a: Active) -> JobInfo | None:
        try:
            info = a.site.client.job(a.id)
        except SlurmError as exc:
            self._progress(lead(self.graph, a.job), f"slurm job {a.id}: cannot ask Slurm ({exc}); asking again")
            return None
        if info is None:
            return None
        if (info.state, info.reason) != (a.state, a.reason):
            a.state, a.reason = info.state, info.reason
            where = f" on {info.nodes}" if info.nodes and info.state != "PENDING" else ""
            why = f" ({info.reason})" if info.reason and info.reason != "None" else ""
            self._note(self._current(a), f"slurm job {a.id} ({a.job.name}): {info.state}{where}{why}")
        if info.state == "PENDING" and any(r in info.reason for r in _UNRUNNABLE):
            a.pending_bad_since = a.pending_bad_since or time.monotonic()
            if time.monotonic() - a.pending_bad_since > UNRUNNABLE_S:
                a.why = (f"slurm job {a.id} cannot start: Slurm says {info.reason} (its partition's nodes are down or "
                         "unavailable); cancelled it")
                self._cancel(a)
        else:
            a.pending_bad_since = None
        return info

    def _current(self, a: Active) -> str:
        running = [s for s in a.job.steps if s in a.started and s not in a.finished]
        return running[0] if running else lead(self.graph, a.job)

    def _cancel(self, a: Active) -> None:
        a.cancelled_by_us = True
        try:
            a.site.client.cancel(a.id)
        except SlurmError as exc:
            self._progress(lead(self.graph, a.job), str(exc))

    def _stop_all(self, active: list[Active], pending: list[SlurmJob]) -> None:
        for a in active:
            if not a.why:
                a.why = f"slurm job {a.id} cancelled: apply was interrupted"
            self._cancel(a)
        deadline = time.monotonic() + CANCEL_WAIT_S
        while active and time.monotonic() < deadline:
            for a in list(active):
                self._pump(a)
                info = self._poll(a)
                if info is not None and info.ended:
                    self._pump(a)
                    self._end(a, info, interrupted=True)
                    active.remove(a)
            time.sleep(0.5)
        for a in active:  # Slurm did not confirm in time: record what we know
            self._end(a, JobInfo(a.id, "CANCELLED", "not confirmed"), interrupted=True)
        for job in pending:
            for addr in job.steps:
                self._finish(Outcome(addr, self.graph.steps[addr].kind, Status.SKIPPED, Reason.NOT_STARTED,
                                     Reason.NOT_STARTED.text))
        self.walk.result.interrupted = True

    def _why_ended(self, a: Active, info: JobInfo) -> str:
        if a.why:
            return a.why
        state = info.state
        if state == "COMPLETED":
            return f"slurm job {a.id} ended before its steps did"
        if state == "TIMEOUT":
            limit = f" ({info.time_limit})" if info.time_limit else ""
            return f"slurm job {a.id} reached its time limit{limit}: raise `slurm.time` of host {a.job.host.name}"
        if state == "CANCELLED":
            return f"slurm job {a.id} was cancelled outside specdsl (scancel)"
        if state == "NODE_FAIL":
            return f"slurm job {a.id} lost its node {info.nodes or ''} (NODE_FAIL: the node went down)".replace("  ", " ")
        if state == "OUT_OF_MEMORY":
            return f"slurm job {a.id} ran out of memory: raise `slurm.mem` of host {a.job.host.name}"
        if not (a.local / job_folder.EVENTS).exists():
            tail = _tail(a.local / "slurm.out")
            return (f"slurm job {a.id} {state.lower()} (exit {info.exit_code}) before specdsl started in it: is {a.folder} "
                    f"on a filesystem the node shares with {a.site.shares}?" + (f"\n{tail}" if tail else ""))
        tail = _tail(a.local / "slurm.out")
        return f"slurm job {a.id} {state.lower()} (exit {info.exit_code})" + (f"\n{tail}" if tail else "")

    def _end(self, a: Active, info: JobInfo, interrupted: bool = False) -> None:
        try:
            a.site.bring_back(a.folder, a.local)
        except HostError as exc:
            self._progress(lead(self.graph, a.job), f"slurm job {a.id}: its folder could not be brought back ({exc})")
        self._import(a)
        clean = info.state == "COMPLETED" and (a.local / job_folder.DONE).exists()
        if clean and all(s in a.finished for s in a.job.steps):
            self._note(self._current(a), f"slurm job {a.id} ({a.job.name}): results imported")
            # in graph order: a step's cause is recorded before what it skipped
            # (the job's events name a skipped step before its failed cause)
            for outcome in sorted(a.finished.values(), key=lambda o: self.rank.get(o.addr, 0)):
                self._finish(outcome)
            return
        why = self._why_ended(a, info)
        log = str(a.local / "slurm.out")
        if interrupted:
            for addr in a.job.steps:
                outcome = a.finished.get(addr)
                if outcome is not None:
                    self._finish(outcome)
                elif addr in a.started:
                    self._finish(Outcome(addr, self.graph.steps[addr].kind, Status.INTERRUPTED, Reason.CANCELLED, why, log=log))
                else:
                    self._finish(Outcome(addr, self.graph.steps[addr].kind, Status.SKIPPED, Reason.NOT_STARTED,
                                         Reason.NOT_STARTED.text))
            return
        self._fail_job_steps(a.job, a, why, log)

    def _fail_job_steps(self, job: SlurmJob, a: Active | None, why: str, log: str) -> None:
        """A job that ended badly: what it completed stands; a step it saw
        fail fails with `why` first (the job's end is the cause, what the
        step saw follows); else the step it was in (or its first) fails with
        `why`, a failed run recorded with the job id; the rest are skipped
        because of it."""
        finished = a.finished if a is not None else {}
        started = a.started if a is not None else set()
        for addr in job.steps:
            outcome = finished.get(addr)
            if outcome is not None and outcome.status in (Status.COMPLETED, Status.REUSED):
                self._finish(outcome)
        failed = [s for s in job.steps if s in finished and finished[s].status is Status.FAILED and s not in self.handled]
        for addr in failed:
            outcome = finished[addr]
            self._finish(attrs.evolve(outcome, detail=f"{why}\n{outcome.detail}"))
        if failed:
            root = failed[0]
        else:
            # the step it was in; a shared provision another job finished is not it
            mine = [s for s in job.steps if s not in self.handled]
            culprits = [s for s in mine if s in started][-1:] or mine[:1]
            if not culprits:
                return
            root = culprits[0]
            step = self.graph.steps[root]
            self._record_failed(step, a, why)
            self._finish(Outcome(root, step.kind, Status.FAILED, Reason.ERROR, why, log=log))
        for addr in job.steps:
            if addr not in self.handled:
                self._finish(Outcome(addr, self.graph.steps[addr].kind, Status.SKIPPED, Reason.UPSTREAM_FAILED,
                                     f"skipped because {root} failed", root=root))

    def _record_failed(self, step, a: Active | None, why: str) -> None:
        if step.kind == "preflight":
            return
        writer = self.walk.writer
        run_id, folder = writer.new_run()
        if a is not None and (a.local / "slurm.out").exists():
            shutil.copy2(a.local / "slurm.out", folder / "slurm.out")
        run = writer.run_record(step, run_id, folder, utc_now(), "failed", reason=why.splitlines()[0][:500])
        if a is not None:
            run = attrs.evolve(run, job=a.id)
        writer.step_done(step, run)

    def _import(self, a: Active) -> None:
        """What the job recorded, into the walk's state: new runs (with their
        folders, and the job id), environments and step records."""
        try:
            done = load_state(a.local / job_folder.STATE)
        except Exception as exc:  # a state the job left half-written is reported, not fatal
            self._progress(lead(self.graph, a.job), f"slurm job {a.id}: its state could not be read ({exc})")
            return
        if done is None:
            return
        before = self.walk.writer.state
        known = {r.id for r in before.runs}
        runs = [attrs.evolve(r, job=a.id) for r in done.runs if r.id not in known]
        state_dir = Path(self.walk.writer.state_dir)
        for run in runs:
            if run.folder:
                src, dest = a.local / job_folder.STATE / run.folder, state_dir / run.folder
                if src.is_dir() and not dest.exists():
                    shutil.copytree(src, dest)
                    private.tighten(dest)
        envs = [e for e in done.environments if e not in before.environments]
        steps = [s for s in done.steps if before.step(s.addr) != s]

        def fn(state):
            for run in runs:
                state = state.with_run(run)
            for env in envs:
                state = state.with_environment(env)
            for record in steps:
                state = state.with_step(record)
            return state

        if runs or envs or steps:
            self.walk.writer.change(fn)


def batch_script(folder: Path, python: str, package: Path, shares: str) -> str:
    """The batch script of a job: into its folder (or say the node cannot
    see it), then this specdsl's job runner with `python`."""
    q = shlex.quote
    return "\n".join([
        "#!/bin/sh",
        "# written by specdsl: one chain of steps, run inside this allocation (docs/slurm.md)",
        f"cd {q(str(folder))} || {{ echo \"specdsl: the job folder \"{q(str(folder))}\" is not visible on $(hostname):"
        f" Slurm hosts need a filesystem the compute nodes share with {shares} (slurm.workdir)\" >&2; exit 3; }}",
        f"PYTHONPATH={q(str(package))}${{PYTHONPATH:+:$PYTHONPATH}}",
        "export PYTHONPATH",
        f"exec {q(python)} -m specdsl.apply.slurm.job {q(str(folder))}",
        "",
    ])


def lead(graph, job: SlurmJob) -> str:
    """The step a job's own messages go to: its first that is not a
    provision (an environment's step is shared by several jobs)."""
    return next((a for a in job.steps if graph.steps[a].kind != "provision"), job.steps[0])


def _here(value, memo: dict):
    """A payload value with Slurm hosts made this machine (inside the
    allocation the node is the local host, also when it was submitted
    through a login node)."""
    from specdsl.model import config

    if isinstance(value, config.Host) and value.slurm is not None:
        return _node(value)
    if isinstance(value, config.Experiment) and value.host.slurm is not None:
        key = id(value)
        if key not in memo:
            memo[key] = attrs.evolve(value, host=_node(value.host))
        return memo[key]
    return value


def _node(host):
    """A Slurm host as the job sees it: the compute node it runs on (its
    login node and the cluster are the controller's business)."""
    return attrs.evolve(host, slurm=None, ssh=None, workdir=None)


def _tail(path: Path, lines: int = 15) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


__all__ = ["SlurmExecutor"]
