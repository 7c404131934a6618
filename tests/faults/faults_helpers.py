"""Running `specdsl apply` against misbehaving server doubles, as a user
does (real subprocesses, real signals), and checking what every fault must
leave: no process of the servers' groups, a state that parses, a serial
that only grew, every run recorded before still there."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from specdsl.state import load_state

HERE = Path(__file__).parent
REPO = HERE.parents[1]
DOUBLE = str(HERE / "fault_double.py")
PROBE = str(HERE / "fault_probe.py")


def spec_text(pids: Path, *server_flags: str, sleep: float = 0.0, timeout: str = "30s", fill: str = "",
              ready_timeout: str = "30s") -> str:
    argv = [sys.executable, DOUBLE, "{port}", "--pids", str(pids), *server_flags]
    probe = [sys.executable, PROBE, "{base_url}"] + (["--sleep", str(sleep)] if sleep else []) + (
        ["--fill", fill] if fill else [])
    quote = lambda items: ", ".join(f'"{a}"' for a in items)  # noqa: E731
    return f'''stack "sys" {{
  python = "system"
}}
server "s" {{
  engine        = "command"
  model         = "m"
  command       = [{quote(argv)}]
  ready_timeout = {ready_timeout}
}}
workload "w" {{
  command = [{quote(probe)}]
  runs    = 1
  timeout = {timeout}
  metric "tps" {{ regex = "tps: ([0-9.]+)" }}
}}
experiment "e" {{
  stack    = stack.sys
  server   = server.s
  workload = workload.w
}}
'''


class Folder:
    """One test's spec folder: its spec, its servers' pid file, its state."""

    def __init__(self, path: Path, env_root: Path, state: Path | None = None) -> None:
        self.path = path
        self.env_root = env_root
        self.pids = path / "pids"
        self.spec = path / "f.spec"
        self.state_dir = state or path / ".specdsl"
        self.serials: list[int] = []

    def write(self, *server_flags: str, **kw) -> None:
        self.spec.write_text(spec_text(self.pids, *server_flags, **kw))

    def argv(self, *args: str) -> list[str]:
        extra = ["--state", str(self.state_dir)] if self.state_dir != self.path / ".specdsl" else []
        return [sys.executable, "-m", "specdsl.cli.main", *args, *extra]

    def env(self) -> dict[str, str]:
        env = dict(os.environ, SPECDSL_ENV_ROOT=str(self.env_root))
        env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        return env

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        proc = subprocess.run(self.argv(*args), cwd=self.path, capture_output=True, text=True, timeout=timeout,
                              env=self.env(), stdin=subprocess.DEVNULL)
        proc.out = proc.stdout + proc.stderr
        return proc

    def start(self, *args: str) -> subprocess.Popen:
        """apply in its own session, as from a terminal: its signals are the test's to send."""
        return subprocess.Popen(self.argv(*args), cwd=self.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, env=self.env(), start_new_session=True, stdin=subprocess.DEVNULL)

    def state(self):
        """The state as it is now: it must parse, and its serial never goes back."""
        state = load_state(self.state_dir)
        serial = state.serial if state is not None else 0
        assert not self.serials or serial >= self.serials[-1], (self.serials, serial)
        self.serials.append(serial)
        return state

    def groups(self) -> list[int]:
        """The process groups of every server double this folder started."""
        if not self.pids.exists():
            return []
        return sorted({int(line.split()[1]) for line in self.pids.read_text().splitlines() if line.strip()})

    def groups_alive(self) -> list[int]:
        return [g for g in self.groups() if group_pids(g)]

    def leftovers(self) -> list[str]:
        """Every live process whose command line names this folder (a
        server, a server held at its gate, a benchmark, an apply)."""
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == os.getpid():
                continue
            try:
                cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if str(self.path) in cmd and stat[stat.rindex(")") + 2] != "Z":
                found.append(f"{entry}: {cmd[:160]}")
        return found

    def kill_all(self) -> None:
        """What a test left (a failure): killed, so the next test starts clean."""
        for g in self.groups_alive():
            try:
                os.killpg(g, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for line in self.leftovers():
            try:
                os.kill(int(line.split(":")[0]), signal.SIGKILL)
            except ProcessLookupError:
                pass


def group_pids(pgid: int) -> list[int]:
    """Live (non-zombie) processes of process group `pgid`."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[0] != "Z" and int(fields[2]) == pgid:
            out.append(int(entry))
    return out


def wait_for(predicate, timeout: float = 60.0, what: str = "a condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")


def state_now(folder: Folder):
    """The state if its file exists and parses now (a writer may be mid-rename: retry)."""
    try:
        return load_state(folder.state_dir)
    except Exception:
        return None


def run_ids(state) -> set[str]:
    return {r.id for r in state.runs} if state is not None else set()
