"""The walker: runs a plan's steps on the hosts and records what happened.

Order and overlap:
- preflights first; every needed environment is provisioned in a small
  thread pool as soon as the walk starts, so the next stack installs while
  a benchmark runs;
- each host runs its servers one at a time (a server occupies the host's
  GPUs): launch, every benchmark that server serves, teardown, then the next
  launch. Launches are ordered by where their benchmarks fall in the plan
  (baselines first), so a sweep of S server configurations launches exactly
  S times;
- checks and promotions run last, on recorded results.
A failed step abandons its dependants (recorded as skipped because of it) and
the rest goes on. `stop` (Ctrl-C, SIGTERM) starts no new step; servers are
torn down; state holds what completed.
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import os
import threading
import time
from pathlib import Path
from typing import Any, Protocol

import attrs

from specdsl import bench, servers, provision
from specdsl.apply import checks, steps_io
from specdsl.apply.state_writer import StateWriter, write_stack_lock
from specdsl.hosts import Cancelled, LocalHost
from specdsl.plan.model import Action
from specdsl.state import utc_now

COMPLETED, REUSED, FAILED, SKIPPED = "completed", "reused", "failed", "skipped"


class Hooks(Protocol):
    def start(self, addr: str, kind: str) -> None: ...
    def progress(self, addr: str, message: str) -> None: ...
    def finish(self, outcome: "Outcome") -> None: ...


@attrs.frozen
class Outcome:
    addr: str
    kind: str
    status: str
    detail: str = ""
    elapsed: float = 0.0
    log: str = ""


@attrs.define
class ApplyResult:
    outcomes: list[Outcome] = attrs.Factory(list)
    verdicts: list[tuple[str, checks.Verdict]] = attrs.Factory(list)  # (experiment, verdict)
    warnings: list[str] = attrs.Factory(list)
    interrupted: bool = False
    launches: int = 0
    wall: float = 0.0
    busy: float = 0.0  # time when at least one step was running

    @property
    def overhead(self) -> float:
        """Wall time spent outside every step: the engine's own cost."""
        return max(0.0, self.wall - self.busy)

    def exit_code(self) -> int:
        if self.interrupted:
            return 130
        if any(o.status == FAILED for o in self.outcomes):
            return 5
        if any(v.status == checks.FAIL for _, v in self.verdicts):
            return 3
        if any(v.status == checks.INCONCLUSIVE for _, v in self.verdicts):
            return 4
        return 0


class Walk:
    def __init__(self, plan, graph, recorder: StateWriter, *, spec_dir: Path, env_root: Path, hooks: Hooks,
                 stop: threading.Event | None = None, variables: dict[str, Any] | None = None) -> None:
        self.plan = plan
        self.graph = graph
        self.rec = recorder
        self.spec_dir = Path(spec_dir)
        self.env_root = Path(env_root)
        self.hooks = hooks
        self.stop = stop or threading.Event()
        self.changes = {c.addr: c for c in plan.changes}
        self.order = [c.addr for c in plan.changes]
        self.result = ApplyResult()
        self.failed: dict[str, str] = {}  # addr -> root cause addr
        self.envs: dict[str, cf.Future] = {}
        self.env_records: dict[str, Any] = {}
        self.handles: dict[str, servers.ServerHandle] = {}
        self.argvs: dict[str, tuple[str, ...]] = {}  # launch -> argv it ran (for the stack lock)
        self.variables = dict(variables or {})
        self._intervals: list[tuple[float, float]] = []
        self._mutex = threading.Lock()

    # ---- bookkeeping
    def action(self, addr: str) -> Action | None:
        change = self.changes.get(addr)
        return change.action if change else None

    def finish(self, outcome: Outcome) -> None:
        with self._mutex:
            now = time.monotonic()
            if outcome.elapsed:
                self._intervals.append((now - outcome.elapsed, now))
            self.result.outcomes.append(outcome)
            if outcome.status in (FAILED, SKIPPED):
                self.failed.setdefault(outcome.addr, outcome.addr)
        self.hooks.finish(outcome)

    def blocked_by(self, addr: str) -> str | None:
        step = self.graph.steps[addr]
        for dep in step.deps:
            if dep in self.failed:
                return self.failed[dep]
        return None

    def skip(self, addr: str, why: str, root: str | None = None) -> None:
        with self._mutex:
            self.failed[addr] = root or addr
        step = self.graph.steps[addr]
        self.finish(Outcome(addr, step.kind, SKIPPED, why))

    def interrupted_skip(self, addr: str) -> None:
        self.result.interrupted = True
        self.skip(addr, "not started: apply was interrupted")

    def may_start(self, addr: str, root: str | None = None) -> bool:
        """True when `addr` may start; otherwise it is recorded as skipped,
        because apply was interrupted or because `root` (by default the
        first failed step it depends on) failed."""
        root = root or self.blocked_by(addr)
        if self.stop.is_set():
            self.interrupted_skip(addr)
            return False
        if root:
            self.skip(addr, f"skipped because {root} failed", root)
            return False
        return True

    def fail(self, step, run_id: str, folder: Path, started: str, t0: float, detail: str, log: str) -> None:
        """Record a step that failed while executing: a failed run in state
        (with the reason) and the outcome (with where its log is)."""
        self.rec.step_done(step, self.rec.run_record(step, run_id, folder, started, FAILED, reason=detail))
        self.finish(Outcome(step.addr, step.kind, FAILED, detail, time.monotonic() - t0, log))

    # ---- the walk
    def run(self) -> ApplyResult:
        started = time.monotonic()
        pool = cf.ThreadPoolExecutor(max_workers=2, thread_name_prefix="provision")
        try:
            for addr in self._of_kind("preflight"):
                self._preflight(addr)
            for addr in self._needed_provisions():
                self.envs[addr] = pool.submit(self._provision, addr)
            hosts: dict[str, list[str]] = {}
            for addr in self._launch_order():
                hosts.setdefault(self.graph.steps[addr].host, []).append(addr)
            threads = [threading.Thread(target=self._host_loop, args=(launches,), name=f"host-{h}") for h, launches in hosts.items()]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            for fut in self.envs.values():
                fut.result()
            reported = {o.addr for o in self.result.outcomes}
            for addr in self._of_kind("benchmark"):
                if addr not in reported and self.action(addr) is Action.REUSE:
                    self.finish(Outcome(addr, "benchmark", REUSED, self.changes[addr].reason))
            self._checks_and_promotions()
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            # Servers still up: stop them, but a kept one only on interrupt.
            for addr, handle in list(self.handles.items()):
                if self.stop.is_set() or not self.graph.steps[addr].payload["server"].keep_running:
                    self._teardown_handle(addr, handle, quiet=True)
        self.result.wall = time.monotonic() - started
        self.result.busy = _union_length(self._intervals)
        return self.result

    def _of_kind(self, kind: str) -> list[str]:
        return [a for a in self.order if self.graph.steps[a].kind == kind]

    def _benchmarks_of(self, launch: str) -> list[str]:
        succ = set(self.graph.succ[launch])
        return [a for a in self.order if a in succ and self.graph.steps[a].kind == "benchmark"]

    def _launch_needed(self, launch: str) -> bool:
        if self.action(launch) in (Action.CREATE, Action.REPLACE):
            return True
        return any(self.action(b) is Action.RUN for b in self._benchmarks_of(launch))

    def _launch_order(self) -> list[str]:
        pos = {a: i for i, a in enumerate(self.order)}
        launches = [a for a in self._of_kind("launch") if self._launch_needed(a) or self.action(f"teardown.{a.split('.', 1)[1]}") is Action.DESTROY]
        return sorted(launches, key=lambda a: min([pos[b] for b in self._benchmarks_of(a)] or [pos[a]]))

    def _needed_provisions(self) -> list[str]:
        needed = []
        for launch in self._launch_order():
            if self._launch_needed(launch) and not self._running(launch):
                prov = self.graph.steps[launch].deps[0]
                if prov not in needed:
                    needed.append(prov)
        return needed

    def _running(self, launch: str) -> bool:
        return self.action(launch) is Action.REUSE and self.rec.state.server(self.graph.steps[launch].identity) is not None

    # ---- steps
    def _preflight(self, addr: str) -> None:
        if self.action(addr) is not Action.RUN:
            return
        step = self.graph.steps[addr]
        self.hooks.start(addr, "preflight")
        t0 = time.monotonic()
        problem = steps_io.preflight(step.payload["host"])
        if problem:
            self.finish(Outcome(addr, "preflight", FAILED, problem, time.monotonic() - t0))
        else:
            self.finish(Outcome(addr, "preflight", COMPLETED, "host ready", time.monotonic() - t0))

    def _provision(self, addr: str):
        try:
            return self._provision_step(addr)
        except Exception as exc:  # never let a thread die silently: record the failure
            self._unexpected(addr, exc)
            return None

    def _provision_step(self, addr: str):
        step = self.graph.steps[addr]
        if not self.may_start(addr):
            return None
        self.hooks.start(addr, "provision")
        run_id, folder = self.rec.new_run()
        log = folder / "provision.log"
        t0, started = time.monotonic(), utc_now()
        try:
            record = provision.provision(step.payload["stack"], LocalHost(env_root=self.env_root), step.identity, log,
                                         progress=lambda m: self.hooks.progress(addr, m), stop=self.stop)
        except Cancelled:
            self.interrupted_skip(addr)
            return None
        except provision.ProvisionError as exc:
            self.fail(step, run_id, folder, started, t0, str(exc), str(log))
            return None
        self.env_records[addr] = record
        env = steps_io.environment_record(record, step)
        run = self.rec.run_record(step, run_id, folder, started, COMPLETED)
        self.rec.step_done(step, run, lambda s: s.with_environment(env))
        for w in record.warnings:
            self.result.warnings.append(f"{addr}: {w}")
        reused = self.action(addr) is Action.REUSE
        self.finish(Outcome(addr, "provision", REUSED if reused else COMPLETED, record.path, time.monotonic() - t0, str(log)))
        return record

    def _host_loop(self, launches: list[str]) -> None:
        for launch in launches:
            try:
                self._serve(launch)
            except Exception as exc:  # a bug or an unexpected host error: record it, go on with the next server
                self._unexpected(launch, exc)

    def _unexpected(self, addr: str, exc: Exception) -> None:
        if any(o.addr == addr for o in self.result.outcomes):
            return
        step = self.graph.steps[addr]
        self.finish(Outcome(addr, step.kind, FAILED, f"unexpected error: {type(exc).__name__}: {exc}"))

    def _serve(self, launch: str) -> None:
        benches = self._benchmarks_of(launch)
        handle = self._launch(launch)
        for b in benches:
            if self.action(b) is not Action.RUN:
                if b in self.changes:
                    self.finish(Outcome(b, "benchmark", REUSED, self.changes[b].reason))
                continue
            if self.may_start(b, None if handle is not None else self.failed.get(launch, launch)):
                self._benchmark(b, handle)
        teardown = f"teardown.{launch.split('.', 1)[1]}"
        if handle is not None and self.action(teardown) is Action.DESTROY:
            self.hooks.start(teardown, "teardown")
            t0 = time.monotonic()
            self._teardown_handle(launch, handle)
            self.finish(Outcome(teardown, "teardown", COMPLETED, "server stopped", time.monotonic() - t0))

    def _launch(self, addr: str):
        step = self.graph.steps[addr]
        if self._running(addr):
            record = self.rec.state.server(step.identity)
            handle = steps_io.handle_from_record(record, step.payload["server"])
            self.handles[addr] = handle
            self.finish(Outcome(addr, "launch", REUSED, f"running at {record.base_url}"))
            return handle
        if not self._launch_needed(addr):
            return None
        prov = step.deps[0]
        fut = self.envs.get(prov)
        env = fut.result() if fut is not None else None
        if not self.may_start(addr, None if env is not None else self.failed.get(prov, prov)):
            return None
        self.hooks.start(addr, "launch")
        run_id, folder = self.rec.new_run()
        t0, started = time.monotonic(), utc_now()
        server = steps_io.localize(step.payload["server"], self.spec_dir)
        try:
            handle = servers.launch(server, env, folder, progress=lambda m: self.hooks.progress(addr, m), stop=self.stop)
        except Cancelled:
            self.interrupted_skip(addr)
            return None
        except servers.LaunchError as exc:
            self.fail(step, run_id, folder, started, t0, str(exc), str(folder / "server.log"))
            return None
        self.handles[addr] = handle
        self.argvs[addr] = handle.argv
        self.result.launches += 1
        record = steps_io.server_record(handle, step)
        run = self.rec.run_record(step, run_id, folder, started, COMPLETED)
        self.rec.step_done(step, run, lambda s: s.with_server(record))
        self.finish(Outcome(addr, "launch", COMPLETED, f"ready at {handle.base_url}", time.monotonic() - t0, handle.log_path))
        return handle

    def _benchmark(self, addr: str, handle) -> None:
        step = self.graph.steps[addr]
        exp = step.payload["experiment"]
        self.hooks.start(addr, "benchmark")
        run_id, folder = self.rec.new_run()
        t0, started = time.monotonic(), utc_now()
        server = steps_io.localize(exp.server, self.spec_dir)
        try:
            result = steps_io.run_workload(exp.workload, server, handle, folder, progress=lambda m: self.hooks.progress(addr, m), stop=self.stop)
        except Cancelled:
            self.interrupted_skip(addr)
            return
        except bench.BenchError as exc:
            self.fail(step, run_id, folder, started, t0, f"{exc} (server log: {handle.log_path})", str(folder))
            return
        if self.stop.is_set() and not result.runs:
            self.interrupted_skip(addr)
            return
        (folder / "results.json").write_text(json.dumps(result.to_json(), sort_keys=True))
        effective, warnings = steps_io.effective(server, handle)
        (folder / "effective.json").write_text(json.dumps(effective, sort_keys=True, default=str))
        for w in warnings:
            if w not in self.result.warnings:
                self.result.warnings.append(f"{step.payload['experiment'].server.name}: {w}")
        metrics = steps_io.medians(result)
        run = self.rec.run_record(step, run_id, folder, started, COMPLETED, metrics=metrics, effective=effective)
        self.rec.step_done(step, run)
        summary = ", ".join(f"{k} {metrics[k]:.4g}" for k in ("output_throughput", "median_ttft_ms") if k in metrics)
        self.finish(Outcome(addr, "benchmark", COMPLETED, summary, time.monotonic() - t0, str(folder)))

    def _teardown_handle(self, launch: str, handle, quiet: bool = False) -> None:
        try:
            servers.teardown(handle)
        except Exception as exc:  # teardown must go on for the other servers
            if not quiet:
                self.result.warnings.append(f"{launch}: teardown: {exc}")
        self.handles.pop(launch, None)
        identity = self.graph.steps[launch].identity
        if self.rec.state.server(identity) is not None:
            self.rec.change(lambda s: s.without_server(identity))

    # ---- checks and promotions
    def _checks_and_promotions(self) -> None:
        passed: dict[str, list[str]] = {}
        verdict_of: dict[str, str] = {}
        for addr in self._of_kind("check"):
            step = self.graph.steps[addr]
            exp = step.payload["experiment"]
            if not self.may_start(addr):
                verdict_of[addr] = SKIPPED
                continue
            mine = steps_io.load_results(self.rec.state, self.rec.state_dir, self.graph.steps[step.deps[0]].identity)
            baseline = steps_io.baseline_results(self.rec.state, self.rec.state_dir, exp, self.graph)
            env = {f"var.{k}": v for k, v in self.variables.items()}
            env.update({f"matrix.{k}": v for k, v in exp.matrix})
            assertion = step.payload["assertion"]
            verdict = checks.check(assertion.name, assertion.expr, mine, baseline, env)
            self.result.verdicts.append((exp.name, verdict))
            verdict_of[addr] = verdict.status
            if verdict.status == checks.PASS:
                passed.setdefault(exp.name, []).append(assertion.name)
            status = COMPLETED if verdict.status == checks.PASS else verdict.status
            # every verdict is kept: state is the history of what was checked
            run_id, folder = self.rec.new_run()
            (folder / "verdict.json").write_text(json.dumps(attrs.asdict(verdict), sort_keys=True))
            now = utc_now()
            run = self.rec.run_record(step, run_id, folder, now, COMPLETED, reason=f"{verdict.status}: {verdict.detail}",
                                      metrics={"pass": 1.0 if verdict.status == checks.PASS else 0.0})
            self.rec.step_done(step, run)
            self.finish(Outcome(addr, "check", status, verdict.detail))
        for addr in self._of_kind("promote"):
            if self.action(addr) is not Action.PROMOTE:
                continue
            step = self.graph.steps[addr]
            exp = step.payload["experiment"]
            bad = [d for d in step.deps if verdict_of.get(d, checks.PASS) != checks.PASS]
            root = self.blocked_by(addr)
            if root or bad or self.stop.is_set():
                why = f"not promoted: {', '.join(bad)} did not pass" if bad else f"skipped because {root} failed" if root else "apply was interrupted"
                self.finish(Outcome(addr, "promote", SKIPPED, why))
                continue
            bench_addr = self.graph.by_experiment[exp.name]["benchmark"]
            run = self.rec.state.result(self.graph.steps[bench_addr].identity)
            prov = self.graph.by_experiment[exp.name]["provision"]
            env = self.env_records.get(prov)
            launch = self.graph.by_experiment[exp.name]["launch"]
            lock = write_stack_lock(self.spec_dir, exp.promote, exp, steps_io.env_summary(env, self.rec.state, self.graph.steps[prov].identity),
                                    list(self.argvs.get(launch, ())), run.id, dict(run.metrics))
            self.rec.change(lambda s: s.with_promotion(exp.promote, run.id, passed.get(exp.name, [])))
            self.finish(Outcome(addr, "promote", COMPLETED, f"track {exp.promote} -> run {run.id}; lock {os.path.relpath(lock)}"))


def _union_length(intervals: list[tuple[float, float]]) -> float:
    total, end = 0.0, float("-inf")
    for a, b in sorted(intervals):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total
