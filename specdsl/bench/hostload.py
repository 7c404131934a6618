"""What else the machine was doing during a run: the CPU that processes
other than ours used, read from /proc on the machine the client runs on.

A run on a shared machine is slowed by other work: another apply's server
starting, another user's tests. The run's numbers cannot say so (a slow
run and a slow server read alike), the host's counters can. Around a run,
`LoadMeter` reads

- `/proc/stat`, the machine's CPU time: busy (user, nice, system, irq,
  softirq) and steal (time the hypervisor gave this VM's CPUs to others);
- `/proc/PID/stat` of this process and every descendant (the client's
  workers, the servers apply launched on this machine): `ours`, their CPU
  time, their reaped children's included (utime, stime, cutime, cstime);
- `/proc/pressure/cpu` (PSI, where the kernel has it): the share of the
  run's wall time in which some runnable task waited for a CPU;
- `/proc/loadavg`: the 1-minute load average at the run's end;

and `between(start, end)` turns two readings into the run's `host` record:
`other_cores`, the CPU others used on average over the run, in cores
(busy minus ours, plus steal), `ours_cores`, `steal_cores`, `cores`,
`cpu_pressure`, `load1` and `wall_s`. On a saturated machine the CPU
others *used* is all the cores less ours, whatever they asked for, so the
meter also samples, every 25 ms through the run, the runnable tasks
(/proc/loadavg's running count) less our own runnable threads:
`other_runnable`, their mean, what others *wanted* of the CPU. Which runs
a burst hit is decided from these records by specdsl.bench.bursts.

Linux only; elsewhere (or where /proc cannot be read) `snapshot` returns
None and a run has no `host` record (nothing is decided from it). The
readings cost about a millisecond per hundred processes.
"""

from __future__ import annotations

import os
import sys
import threading
import time

from typing import NamedTuple

_HZ = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


class Snapshot(NamedTuple):
    """One reading: monotonic seconds, machine CPU ticks (busy, steal),
    our process tree's ticks, PSI cpu `some` microseconds (None: no PSI)
    and the 1-minute load average."""

    t: float
    busy: int
    steal: int
    ours: int
    pressure_us: int | None
    load1: float


def _machine_ticks(text: str) -> tuple[int, int]:
    """(busy, steal) ticks from /proc/stat's aggregate `cpu` line."""
    for line in text.splitlines():
        if line.startswith("cpu "):
            f = [int(x) for x in line.split()[1:]]
            f += [0] * (8 - len(f))
            user, nice, system, _idle, _iowait, irq, softirq, steal = f[:8]
            return user + nice + system + irq + softirq, steal
    raise ValueError("no aggregate cpu line in /proc/stat")


def parse_pid_stat(text: str) -> tuple[int, int, int]:
    """(pid, ppid, ticks) of one /proc/PID/stat: ticks = utime + stime +
    cutime + cstime (the command name, in parentheses, may hold spaces)."""
    pid = int(text[: text.index(" ")])
    rest = text[text.rindex(")") + 2:].split()
    return pid, int(rest[1]), sum(int(x) for x in rest[11:15])


def _processes(proc: str) -> dict[int, tuple[int, int]]:
    """Every process alive now: pid -> (ppid, CPU ticks)."""
    out: dict[int, tuple[int, int]] = {}
    for name in os.listdir(proc):
        if not name.isdigit():
            continue
        try:
            with open(f"{proc}/{name}/stat") as f:
                pid, ppid, t = parse_pid_stat(f.read())
        except (OSError, ValueError, IndexError):
            continue  # it ended while we read
        out[pid] = (ppid, t)
    return out


def _tree(root: int, table: dict[int, tuple[int, int]]) -> set[int]:
    """`root` and its descendants in `table` (_processes)."""
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    out, todo = set(), [root]
    while todo:
        pid = todo.pop()
        if pid not in out:
            out.add(pid)
            todo += children.get(pid, ())
    return out


def tree_ticks(root: int, proc: str = "/proc") -> int:
    """CPU ticks of process `root` and all its descendants, alive now."""
    table = _processes(proc)
    return sum(table[pid][1] for pid in _tree(root, table) if pid in table)


def parse_pressure(text: str) -> int | None:
    """The `some` line's total (microseconds) of /proc/pressure/cpu."""
    for line in text.splitlines():
        if line.startswith("some "):
            for field in line.split()[1:]:
                if field.startswith("total="):
                    return int(field[len("total="):])
    return None


def snapshot(root: int | None = None, proc: str = "/proc") -> Snapshot | None:
    """A reading now (our tree rooted at `root`, default this process);
    None where /proc/stat cannot be read."""
    try:
        with open(f"{proc}/stat") as f:
            busy, steal = _machine_ticks(f.read())
    except (OSError, ValueError):
        return None
    ours = tree_ticks(os.getpid() if root is None else root, proc)
    try:
        with open(f"{proc}/pressure/cpu") as f:
            pressure = parse_pressure(f.read())
    except OSError:
        pressure = None
    try:
        with open(f"{proc}/loadavg") as f:
            load1 = float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        load1 = -1.0
    return Snapshot(time.monotonic(), busy, steal, ours, pressure, load1)


def between(a: Snapshot | None, b: Snapshot | None, cores: int | None = None) -> dict:
    """The host record of the interval from reading `a` to `b` ({} when
    either is missing or no time passed): CPU in cores, averaged."""
    if a is None or b is None or b.t <= a.t:
        return {}
    cores = cores or os.cpu_count() or 1
    wall = b.t - a.t
    busy, steal, ours = (b.busy - a.busy) / _HZ / wall, (b.steal - a.steal) / _HZ / wall, (b.ours - a.ours) / _HZ / wall
    ours = min(max(0.0, ours), busy)  # ticks are counted apart: never more than the machine's busy time
    out = {"wall_s": round(wall, 4), "cores": cores, "other_cores": round(max(0.0, busy - ours) + max(0.0, steal), 3),
           "ours_cores": round(ours, 3), "steal_cores": round(max(0.0, steal), 3), "load1": b.load1}
    if a.pressure_us is not None and b.pressure_us is not None:
        out["cpu_pressure"] = round(min(1.0, max(0.0, (b.pressure_us - a.pressure_us) / 1e6 / wall)), 4)
    return out


def tree_pids(root: int, proc: str = "/proc") -> set[int]:
    """Process `root` and its descendants alive now."""
    return _tree(root, _processes(proc))


def running_of(pids, proc: str = "/proc") -> int:
    """Threads of `pids` that are runnable (state R) now."""
    n = 0
    for pid in pids:
        try:
            tids = os.listdir(f"{proc}/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"{proc}/{pid}/task/{tid}/stat") as f:
                    text = f.read()
            except OSError:
                continue
            if text[text.rindex(")") + 2:][:1] == "R":
                n += 1
    return n


def machine_running(proc: str = "/proc") -> int | None:
    """Runnable tasks on the machine now (/proc/loadavg's fourth field)."""
    try:
        with open(f"{proc}/loadavg") as f:
            return int(f.read().split()[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return None


class _Sampler:
    """The sampler process of this process (`python hostload.py --root
    PID`, a helper of specdsl.hosts.children), shared by every meter and
    started on first use (again, when it has ended): every `SAMPLE_S` it
    adds up the machine's runnable tasks less our tree's, and answers each
    `m` line on its stdin with `TOTAL N` so far, so that meters that
    overlap (steps on two hosts at once) each read their own interval."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.proc = None

    def read(self, root: int, proc: str) -> tuple[float, int] | None:
        """(sum, samples) so far; None when no sampler can run."""
        from specdsl.hosts.base import HostError
        from specdsl.hosts.children import end_helper, start_helper

        with self.lock:
            for _ in range(2):
                if self.proc is None or self.proc.poll() is not None:
                    try:
                        # -S -E: no site, no environment: it starts in a few ms
                        self.proc = start_helper([sys.executable, "-S", "-E", __file__, "--root", str(root), "--proc", proc])
                    except HostError:
                        self.proc = None
                        return None
                try:
                    self.proc.stdin.write("m\n")
                    self.proc.stdin.flush()
                    total, n = self.proc.stdout.readline().split()
                    return float(total), int(n)
                except (OSError, ValueError):
                    end_helper(self.proc, 1.0)
                    self.proc = None
            return None


_SAMPLERS: dict[tuple[int, str], _Sampler] = {}
_SAMPLERS_LOCK = threading.Lock()


def _sampler(root: int, proc: str) -> _Sampler:
    with _SAMPLERS_LOCK:
        return _SAMPLERS.setdefault((root, proc), _Sampler())


class LoadMeter:
    """`start()` before a run, `stop()` after it: the run's host record.

    Between the two, the sampler process (`_Sampler`: a process of its own,
    so that it takes no time from the client's event loop) reads every
    `SAMPLE_S` the machine's runnable tasks less ours: `other_runnable`,
    their mean over the run, is what other work *wanted* of the CPU, which
    a saturated machine's CPU time cannot say (its busy time is all the
    cores whatever the demand). The sampler is one of our processes (a
    descendant): its own thread is never counted."""

    def __init__(self, root: int | None = None, proc: str = "/proc") -> None:
        self.root, self.proc = (os.getpid() if root is None else root), proc
        self._start: Snapshot | None = None
        self._samples: tuple[float, int] | None = None

    def start(self) -> "LoadMeter":
        self._start = snapshot(self.root, self.proc)
        if self._start is not None:
            self._samples = _sampler(self.root, self.proc).read(self.root, self.proc)
        return self

    def stop(self) -> dict:
        out = between(self._start, snapshot(self.root, self.proc))
        if not out or self._samples is None:
            return out
        now = _sampler(self.root, self.proc).read(self.root, self.proc)
        if now is None or now[1] <= self._samples[1]:
            return out
        n = now[1] - self._samples[1]
        out["other_runnable"], out["samples"] = round((now[0] - self._samples[0]) / n, 3), n
        return out


SAMPLE_S = 0.025
RESCAN_S = 0.25  # how often the sampler lists our process tree again


def _sample(root: int, proc: str) -> None:
    """The sampler process: every SAMPLE_S, the machine's runnable tasks
    less our tree's, added up; each `m` line on stdin is answered with
    `TOTAL N`; it ends when its stdin closes."""
    import selectors

    sel = selectors.DefaultSelector()
    sel.register(sys.stdin, selectors.EVENT_READ)
    total, n, ours, scanned = 0, 0, set(), 0.0
    while True:
        now = time.monotonic()
        if now - scanned >= RESCAN_S:
            ours, scanned = tree_pids(root, proc), now
        running = machine_running(proc)
        if running is not None:
            total += max(0, running - running_of(ours, proc))
            n += 1
        if sel.select(SAMPLE_S):
            line = sys.stdin.readline()
            if not line:
                return
            print(f"{total} {n}", flush=True)


if __name__ == "__main__":
    _sample(int(sys.argv[sys.argv.index("--root") + 1]), sys.argv[sys.argv.index("--proc") + 1])
