"""A real one-node Slurm cluster on localhost, for tests.

`Cluster.start(root)` writes a munge key (new each run), slurm.conf and
gres.conf under `root`, starts munged, slurmctld and slurmd in the
foreground (`-D`), each in its own process group with its own log, waits
until the node is idle and returns; `stop()` ends the three groups
(TERM, then KILL) and checks they are gone. The node declares GPUs as a
generic resource count without devices (`Gres=gpu:8`), the way a CI
machine without GPUs can still schedule `--gres=gpu:N`. No cgroups
(containers have none to give): proctrack/linuxproc, task/none. No
accounting database: `sacct` is unavailable, which specdsl handles.

Clients find this cluster through `SLURM_CONF` (`cluster.env()`).
Run as a script to bring one up by hand: `python tests/slurm/cluster.py DIR`.
"""

from __future__ import annotations

import os
import secrets as _secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd")
PARTITION = "debug"
RESTRICTED_ACCOUNT = "ops"  # the one account partition "restricted" allows


def available() -> str | None:
    """None when a cluster can be started here, else why not."""
    missing = [p for p in DAEMONS + ("sbatch", "squeue", "scontrol", "sinfo") if shutil.which(p) is None]
    if missing:
        return "Slurm/munge not installed (missing: " + ", ".join(missing) + ")"
    if os.geteuid() != 0:
        return "the test cluster runs its daemons as root"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    def __init__(self, root: Path, *, gpus: int = 8, cpus: int = 2) -> None:
        self.root = Path(root)
        self.gpus = gpus
        self.cpus = cpus
        self.procs: dict[str, subprocess.Popen] = {}
        self.conf = self.root / "etc" / "slurm.conf"
        self.socket = self.root / "munge" / "munge.socket"

    def env(self) -> dict[str, str]:
        """What a client of this cluster needs in its environment."""
        return {"SLURM_CONF": str(self.conf)}

    # -- configuration --------------------------------------------------------
    def _write(self) -> None:
        for sub in ("etc", "munge", "ctld", "spool", "log"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        (self.root / "munge").chmod(0o755)  # munged wants its socket reachable
        key = self.root / "munge" / "munge.key"
        key.write_bytes(_secrets.token_bytes(1024))
        key.chmod(0o400)
        r = self.root
        mem = 4096
        self.conf.write_text(f"""# written by tests/slurm/cluster.py
ClusterName=specdsl-test
SlurmctldHost=localhost
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={self.socket}
StateSaveLocation={r}/ctld
SlurmdSpoolDir={r}/spool
SlurmctldPidFile={r}/ctld/slurmctld.pid
SlurmdPidFile={r}/spool/slurmd.pid
SlurmctldLogFile={r}/log/slurmctld.log
SlurmdLogFile={r}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
GresTypes=gpu
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
ReturnToService=2
MinJobAge=3600
KillWait=5
OverTimeLimit=0
InactiveLimit=0
SlurmdTimeout=30
MessageTimeout=10
NodeName=localhost NodeAddr=127.0.0.1 CPUs={self.cpus} RealMemory={mem} Gres=gpu:{self.gpus} State=UNKNOWN
PartitionName={PARTITION} Nodes=localhost Default=YES MaxTime=INFINITE State=UP
PartitionName=restricted Nodes=localhost MaxTime=INFINITE State=UP AllowAccounts={RESTRICTED_ACCOUNT}
""")
        # Slurm 22.05 drops GPUs declared without `File` and wants character
        # devices there: links to /dev/null stand in for the device nodes (no
        # cgroups here, so nothing constrains or opens them).
        dev = self.root / "dev"
        dev.mkdir(exist_ok=True)
        for i in range(self.gpus):
            if not (dev / f"gpu{i}").is_symlink():
                (dev / f"gpu{i}").symlink_to("/dev/null")
        (self.root / "etc" / "gres.conf").write_text(
            f"NodeName=localhost Name=gpu Count={self.gpus} File={dev}/gpu[0-{self.gpus - 1}]\n")

    # -- processes --------------------------------------------------------------
    def _spawn(self, name: str, argv: list[str]) -> None:
        log = open(self.root / "log" / f"{name}.out", "ab")
        env = dict(os.environ, SLURM_CONF=str(self.conf))
        self.procs[name] = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            env=env, start_new_session=True)
        log.close()

    def start(self, timeout: float = 30.0) -> "Cluster":
        self._write()
        m = self.root / "munge"
        self._spawn("munged", ["munged", "-F", "--force", f"--socket={self.socket}", f"--key-file={m}/munge.key",
                               f"--pid-file={m}/munged.pid", f"--log-file={m}/munged.log", f"--seed-file={m}/munged.seed",
                               "--num-threads=2"])
        self._wait(lambda: self.socket.exists(), timeout, "munged did not open its socket")
        self._spawn("slurmctld", ["slurmctld", "-D", "-i", "-f", str(self.conf)])
        self._wait(lambda: self._run("scontrol", "ping").returncode == 0, timeout, "slurmctld does not answer")
        self._spawn("slurmd", ["slurmd", "-D", "-f", str(self.conf), "-N", "localhost"])
        self._wait(self.idle, timeout, "the node did not become idle")
        return self

    def _wait(self, ready, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for name, proc in self.procs.items():
                if proc.poll() is not None:
                    self.stop()
                    raise RuntimeError(f"{name} exited ({proc.returncode}): {self.log_tail(name)}")
            if ready():
                return
            time.sleep(0.2)
        tails = "\n".join(f"--- {n}\n{self.log_tail(n)}" for n in self.procs)
        self.stop()
        raise RuntimeError(f"{what} within {timeout:.0f}s\n{tails}")

    def log_tail(self, name: str, lines: int = 20) -> str:
        path = self.root / "log" / (f"{name}.log" if name != "munged" else "munged.out")
        if name == "munged":
            path = self.root / "munge" / "munged.log"
        try:
            return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def _run(self, *argv: str) -> subprocess.CompletedProcess:
        return subprocess.run(argv, capture_output=True, text=True, timeout=20, env=dict(os.environ, **self.env()))

    def scontrol(self, *args: str) -> str:
        out = self._run("scontrol", *args)
        if out.returncode != 0:
            raise RuntimeError(f"scontrol {' '.join(args)}: {out.stderr.strip()}")
        return out.stdout

    def node_state(self) -> str:
        out = self._run("sinfo", "-h", "-N", "-n", "localhost", "-o", "%T")
        states = set(out.stdout.lower().split())  # one line per partition the node is in
        return states.pop() if len(states) == 1 else " ".join(sorted(states))

    def idle(self) -> bool:
        return self.node_state() == "idle"

    def resume(self, timeout: float = 30.0) -> None:
        """Bring the node back after a test set it down, and wait until idle."""
        state = self.node_state()
        if "down" in state or "drain" in state or "fail" in state:
            self.scontrol("update", "nodename=localhost", "state=resume")
        self._wait(self.idle, timeout, "the node did not come back idle")

    def jobs(self) -> list[str]:
        out = self._run("squeue", "-h", "-o", "%i")
        return out.stdout.split()

    def cancel_all(self) -> None:
        for job in self.jobs():
            self._run("scancel", job)

    def stop(self) -> None:
        for name in reversed(DAEMONS):
            proc = self.procs.get(name)
            if proc is None or proc.poll() is not None:
                continue
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)
            # anything left in its group (slurmstepd of a job) goes too
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.procs.clear()


if __name__ == "__main__":
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/specdsl-slurm")
    c = Cluster(root).start()
    print(f"export SLURM_CONF={c.conf}  # Ctrl-C stops the cluster")
    try:
        signal.pause()
    except KeyboardInterrupt:
        pass
    finally:
        c.stop()
