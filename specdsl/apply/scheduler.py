"""The scheduler: walks a plan's steps by their dependencies, under
constraints, through its executors (`executor.py`): the batch executors
(Slurm's jobs) take the steps they claim first, as one set each; the local
executor runs the rest, one step's handler at a time on a small thread
pool. Whichever executor ran a step, its end goes through this one
scheduler: one record of finished steps, one failure propagation.

It knows constraints, not step kinds:
- a step starts once every step it depends on has finished (`deps`, and
  `after` ordering edges unless the handler calls them a preference);
- a step that opens a *session* (a launch: a server and the steps that use
  it) holds resources of its session key (the physical host) until every
  member of the session has finished: on a host that declares GPUs, the
  GPUs its server needs (`specdsl.apply.gpus.claim_of`), disjoint from
  every other open session's, so servers that fit run side by side and the
  rest queue; on a host without declared GPUs (or for a server that needs
  them all, or none) the whole machine, one server at a time. Independent
  work (provisioning the next stack, checks of finished experiments)
  overlaps. A kept server (`keep_running`) holds its GPUs to the end of
  the walk;
- a handler may cap how many of its steps run at once (`max_parallel`),
  and steps that measure (`one_at_a_time`) never overlap within a session:
  two benchmarks never load one server at once;
- among the steps that may start, the one earliest in the graph's order
  goes first; sessions of one key open strictly in that order (a session
  ranks by its earliest member, so baselines come first, every apply runs
  its servers in the same order, and a sweep of S server configurations
  launches S times).
A failed step abandons its dependants once, in whichever executor it ran
and they would run: each is recorded as skipped, naming the root cause
(`skip_dependants`). A set stop event starts nothing new; running steps
see it and end as interrupted (a batch executor cancels its jobs); steps
not started are recorded so.
"""

from __future__ import annotations

import concurrent.futures as cf
import queue
import time
from collections.abc import Callable, Container, Mapping, Sequence
from types import MappingProxyType

from specdsl.apply import gpus
from specdsl.apply.context import StepContext, Walk
from specdsl.apply.executor import Executor, LocalExecutor, Report
from specdsl.apply.outcome import Outcome, Reason, Status, union_length

_POLL_S = 0.2
_ENDED_BADLY = (Status.FAILED, Status.SKIPPED, Status.INTERRUPTED)


class Scheduler:
    def __init__(self, walk: Walk, local: LocalExecutor, *, executors: Sequence[Executor] = (), workers: int = 4) -> None:
        self.walk = walk
        self.local = local
        # a thread per server that can run side by side (one per GPU of each
        # machine at most), beside the `workers` for everything else
        self.workers = workers + gpus.side_by_side(walk)
        graph = walk.graph
        self.steps = graph.steps
        order = graph.order()
        self.rank = {a: i for i, a in enumerate(order)}
        self.order = dict(self.rank)  # the graph's order, which a batch executor's skips follow
        planned = [c.addr for c in walk.plan.changes if c.addr in self.steps]
        # each step has one executor: the batch ones claim first, in order; the local one takes the rest
        self.batches: list[tuple[Executor, frozenset[str]]] = []
        claimed: set[str] = set()
        for executor in executors:
            mine = frozenset(a for a in executor.claims(walk) if a in self.steps and a not in claimed)
            if mine:
                self.batches.append((executor, mine))
                claimed |= mine
        self.waiting: list[str] = [a for a in planned if a not in claimed]
        self.finished: dict[str, Outcome] = {}
        self.running: dict[str, float] = {}
        # opener -> (key, members not finished, GPUs held, whether it holds the whole machine)
        self.sessions: dict[str, tuple[str, set[str], tuple[int, ...], bool]] = {}
        self.member_of: dict[str, str] = {}  # addr -> the opener of the session it belongs to (while open)
        self.kept: dict[str, set[int]] = {}  # key -> GPUs of kept servers whose sessions ended
        self.intervals: list[tuple[float, float]] = []
        self.done_q: queue.Queue = queue.Queue()
        for addr in self.waiting:
            opener = self._session_members(addr)
            if opener:
                self.rank[addr] = min(self.rank[m] for m in opener)

    # -- constraints --------------------------------------------------------
    def _handler(self, addr: str):
        return self.local.handler(self.steps[addr])

    def _session_members(self, addr: str) -> set[str]:
        members = getattr(self._handler(addr), "session_members", None)
        return set(members(self.walk, addr)) if members else set()

    def _deps_done(self, addr: str) -> bool:
        step = self.steps[addr]
        soft = getattr(self._handler(addr), "soft_after", False)
        needed = step.deps if soft else step.deps + step.after
        return all(d in self.finished or d not in self.walk.plan_addrs for d in needed)

    def _may_start(self, addr: str) -> bool:
        if not self._deps_done(addr):
            return False
        handler = self._handler(addr)
        cap = getattr(handler, "max_parallel", None)
        if cap is not None and sum(1 for a in self.running if self.steps[a].kind == self.steps[addr].kind) >= cap:
            return False
        if getattr(handler, "one_at_a_time", False):
            # steps that measure a server run one after another on it
            session = self.member_of.get(addr)
            if session is not None and any(self.member_of.get(r) == session and getattr(self._handler(r), "one_at_a_time", False)
                                           for r in self.running):
                return False
        key = self._key(addr)
        if key is None:
            return True
        # sessions of one key open in rank order (a repeatable walk: the
        # baseline's server first even when the candidate's stack is ready
        # first; a server needing more GPUs than are free is not overtaken)
        if any(self.rank[w] < self.rank[addr] and self._key(w) == key for w in self.waiting if w != addr):
            return False
        return self._grant(addr, key) is not None

    def _grant(self, addr: str, key: str) -> tuple[tuple[int, ...], bool] | None:
        """What a session opened by `addr` would hold now: (its GPUs, whether
        it holds the whole machine), or None when it must wait."""
        open_here = [(held, whole) for k, _m, held, whole in self.sessions.values() if k == key]
        claim = self._claim(addr)
        if claim is None or claim.exclusive:
            if open_here or self.kept.get(key):
                return None
            return (claim.devices if claim is not None and claim.need else ()), True
        if any(whole for _held, whole in open_here):
            return None
        taken = set(self.kept.get(key, ())).union(*(set(h) for h, _w in open_here))
        free = [d for d in claim.devices if d not in taken]
        return (tuple(free[:claim.need]), False) if len(free) >= claim.need else None

    def _claim(self, addr: str):
        return gpus.claim_of(self.walk, self.steps[addr])

    def _key(self, addr: str) -> str | None:
        handler = self._handler(addr)
        return handler.session_key(self.walk, self.steps[addr]) if hasattr(handler, "session_key") else None

    def _open_session(self, addr: str) -> None:
        key = self._key(addr)
        if key is None:
            return
        held, whole = self._grant(addr, key) or ((), True)
        members = {m for m in self._session_members(addr) | {addr} if m in self.walk.plan_addrs and m not in self.finished}
        self.sessions[addr] = (key, members, held, whole)
        for m in members:
            self.member_of[m] = addr
        with self.walk.mutex:
            self.walk.gpus[addr] = held

    def _leave_session(self, addr: str) -> None:
        opener = self.member_of.pop(addr, None)
        if opener is None:
            return
        key, members, held, _whole = self.sessions[opener]
        members.discard(addr)
        if not members:
            del self.sessions[opener]
            if held and opener in self.walk.handles:  # a kept server: still up on its GPUs
                self.kept.setdefault(key, set()).update(held)

    # -- the loop -----------------------------------------------------------
    def run(self) -> None:
        started = time.monotonic()
        self._run_batches()
        with cf.ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="step") as pool:
            while self.waiting or self.running:
                if self.walk.stop.is_set():
                    for addr in list(self.waiting):
                        self._finish(addr, Outcome(addr, self.steps[addr].kind, Status.SKIPPED, Reason.NOT_STARTED,
                                                   Reason.NOT_STARTED.text))
                    self.walk.result.interrupted = True
                else:
                    self._start_ready(pool)
                if not self.running:
                    if self.waiting:  # nothing runs and nothing may start: a constraint that can never be met
                        why = ("could not be scheduled: the GPUs it needs are held by servers kept running (keep_running)"
                               if self.kept else "could not be scheduled: a step it waits for never finished")
                        for addr in list(self.waiting):
                            self._finish(addr, Outcome(addr, self.steps[addr].kind, Status.FAILED, Reason.ERROR, why))
                    break
                try:
                    addr, outcome = self.done_q.get(timeout=_POLL_S)
                except queue.Empty:
                    continue
                self.running.pop(addr, None)
                self._finish(addr, outcome)
        self.walk.result.wall = time.monotonic() - started
        self.walk.result.busy = union_length(self.intervals)

    def _run_batches(self) -> None:
        """Each batch executor runs its steps to their ends, before any local
        step starts (a local check or promotion reads what they recorded);
        its whole run counts as busy. A step it did not report fails (an
        executor's bug must not leave a step without an outcome)."""
        report = Report(self._record, MappingProxyType(self.finished))
        for executor, steps in self.batches:
            t0 = time.monotonic()
            executor.run(self.walk, steps, report)
            self.intervals.append((t0, time.monotonic()))
            for addr in sorted(steps - self.finished.keys(), key=lambda a: self.order.get(a, 0)):
                self._record(Outcome(addr, self.steps[addr].kind, Status.FAILED, Reason.ERROR,
                                     f"the {executor.name} executor ended without saying how this step ended"))

    def _record(self, outcome: Outcome) -> None:
        """A batch executor's step ended: recorded and reported, then, when it
        ended badly, its dependants skipped (the cause first, in graph order),
        local steps among them."""
        if outcome.addr in self.finished:
            return
        if outcome.addr in self.waiting:
            self.waiting.remove(outcome.addr)
        self.finished[outcome.addr] = outcome
        with self.walk.mutex:
            self.walk.result.outcomes.append(outcome)
        self.walk.hooks.finish(outcome)
        skip_dependants(self.walk, outcome, self.finished, self._record, self.order)

    def _start_ready(self, pool) -> None:
        progressed = True
        while progressed and not self.walk.stop.is_set():
            progressed = False
            for addr in sorted(self.waiting, key=lambda a: self.rank.get(a, 0)):
                if addr in self.finished:
                    continue
                if self._may_start(addr):
                    self.waiting.remove(addr)
                    self._open_session(addr)
                    self.running[addr] = time.monotonic()
                    pool.submit(self._execute, addr)
                    progressed = True
                    break

    def _execute(self, addr: str) -> None:
        ctx = StepContext(self.steps[addr], self.walk)
        t0 = time.monotonic()
        outcome = self.local.run_step(ctx)
        elapsed = time.monotonic() - t0
        if outcome.status is not Status.REUSED or outcome.elapsed:
            outcome = _with_elapsed(outcome, elapsed)
        self.done_q.put((addr, outcome))

    def _finish(self, addr: str, outcome: Outcome) -> None:
        if addr in self.finished:
            return
        if addr in self.waiting:
            self.waiting.remove(addr)
        self.finished[addr] = outcome
        if outcome.elapsed:
            now = time.monotonic()
            self.intervals.append((now - outcome.elapsed, now))
        self._leave_session(addr)
        # a session whose opener did not get its server up ends with it
        skip_dependants(self.walk, outcome, self.finished, lambda o: self._finish(o.addr, o), self.rank, busy=self.running)
        with self.walk.mutex:
            self.walk.result.outcomes.append(outcome)
        self.walk.hooks.finish(outcome)


def skip_dependants(walk: Walk, outcome: Outcome, finished: Mapping[str, Outcome], skip: Callable[[Outcome], None],
                    rank: Mapping[str, int], *, busy: Container[str] = ()) -> None:
    """Failure propagation, the one rule of every walk, whichever executor
    ran the step (the local one or a batch one): a step that ended badly
    (failed, skipped, interrupted) abandons its dependants in the plan once.
    Each that has not finished (`finished`: addr -> its outcome, the one
    that ended badly among them) and is not running (`busy`) is handed to
    `skip`, in the order of `rank`, as skipped naming the root cause;
    `skip` records it and calls this again for its own dependants."""
    if outcome.status not in _ENDED_BADLY:
        return
    if outcome.status is Status.INTERRUPTED:
        walk.result.interrupted = True
    root = outcome.root or outcome.addr
    why = f"skipped because {root} {_ended(finished.get(root, outcome))}"
    steps = walk.graph.steps
    dependants = [a for a in walk.graph.succ.get(outcome.addr, ()) if outcome.addr in steps[a].deps and a in walk.plan_addrs]
    for dependant in sorted(dependants, key=lambda a: rank.get(a, 0)):
        if dependant in finished or dependant in busy:
            continue
        skip(Outcome(dependant, steps[dependant].kind, Status.SKIPPED, Reason.UPSTREAM_FAILED, why, root=root))


def _ended(outcome: Outcome) -> str:
    if outcome.status is Status.SKIPPED and outcome.reason is Reason.NOT_STARTED:
        return "was not started"
    return {Status.FAILED: "failed", Status.INTERRUPTED: "was interrupted"}.get(outcome.status, "was skipped")


def _with_elapsed(outcome: Outcome, elapsed: float) -> Outcome:
    import attrs

    return attrs.evolve(outcome, elapsed=elapsed)

