"""A machine reached over SSH as a `Host`.

Every operation is a short POSIX `sh` script run through the one master
connection (`sshconn`); every value in it is one `shlex.quote`d word, so a
model name, a flag, an env value or a script argument reaches the program
byte for byte and runs nothing. Paths are paths on the host.

Layout under the host's `workdir` (default `~/.cache/specdsl`; made 0700):
`envs/` (environments, reused by identity as on this machine), `runs/`
(the host's side of each run folder: logs, pid files, brought back by
`collect`), `tmp/`, `bin/uv` (this machine's bundled uv, copied there when
the host has none on its PATH and is the same OS and architecture).

Processes are started with `setsid`, so each is the leader of its own
session and process group and outlives the ssh session that started it;
its pid goes to a pid file beside its log (`server.log` -> `server.pid`)
and its exit status, once it ends, to `.rc`. Stopping is by group on the
host: TERM, wait, KILL, confirm from the host's /proc.

A server's port is reached from here through a forward of the master
(`ssh -O forward -L`): see docs/hosts.md for why the load generator runs
here rather than on the host.
"""

from __future__ import annotations

import functools
import hashlib
import io
import os
import platform
import posixpath
import shlex
import socket
import subprocess
import tarfile
import threading
import time
import uuid
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import Iterator, Mapping, Sequence

from specdsl import secrets
from specdsl.hosts import ports
from specdsl.hosts.base import Cancelled, CommandResult, HostError, ProcessHandle
from specdsl.hosts.sshconn import LOST, SshConnection, kill_group

_POLL_S = 0.1
DEFAULT_WORKDIR = "~/.cache/specdsl"
# A failed command on a file system with less than this free is reported as a full disk.
_FULL_KIB = 1024
# Files up to this size are read through the worker (its answer is one line).
_SMALL_BYTES = 1024 * 1024


def q(*words: object) -> str:
    """Words as one sh command line, each quoted."""
    return " ".join(shlex.quote(str(w)) for w in words)


# Print the group's live (non-zombie) pids, one a line. $1: the pgid.
_GROUP = r"""
group() {
  for f in /proc/[0-9]*/stat; do
    read -r s 2>/dev/null < "$f" || continue
    r=${s##*) }
    set -- $r
    [ "$3" = "$G" ] && [ "$1" != Z ] && { p=${f#/proc/}; echo "${p%/stat}"; }
  done
  return 0
}
"""


class SshHost:
    """A host reached with the system ssh client. `config` is an ssh config
    file (`-F`), `port` overrides the config's; nothing connects until the
    first operation."""

    def __init__(self, target: str, *, name: str | None = None, workdir: str | None = None,
                 config: str | None = None, port: int | None = None, connect_timeout: float | None = None) -> None:
        self.target = target
        self.name = name or target
        self.key = f"ssh:{target}"
        extra = {"connect_timeout": connect_timeout} if connect_timeout else {}
        self.conn = SshConnection(target, name=self.name, config=config, port=port, **extra)
        self._workdir_decl = workdir or DEFAULT_WORKDIR
        self._workdir: PurePosixPath | None = None
        self._python: str | None = None
        self._forwards: dict[tuple[str, int], int] = {}
        self._lock = threading.Lock()
        self.conn.on_connect.append(self._restore_forwards)

    # -- what the host is -----------------------------------------------------
    @property
    def workdir(self) -> Path:
        if self._workdir is None:
            self.conn.ensure("connecting")
            home = self._sh('printf %s "$HOME"', step="finding the home folder").decode()
            decl = self._workdir_decl
            if decl == "~" or decl.startswith("~/"):
                decl = home + decl[1:]
            elif not decl.startswith("/"):
                decl = posixpath.join(home, decl)
            self._sh(f"umask 077; mkdir -p {q(decl)}", step=f"making the workdir {decl}")
            self._workdir = PurePosixPath(decl)
        return Path(self._workdir)

    def connect(self) -> None:
        """Reach the host and make its workdir (`HostError` naming the cause)."""
        self.workdir

    @property
    def env_root(self) -> Path:
        return self.workdir / "envs"

    @property
    def default_python(self) -> str:
        """The host's `python3` (a `HostError` when it has none)."""
        if self._python is None:
            found = self.which("python3")
            if found is None:
                raise HostError(f"{self.conn.where()}: finding Python: no python3 on the host's PATH "
                                "(install Python 3 there; specdsl runs its probes with it)")
            self._python = found
        return self._python

    # -- plumbing -------------------------------------------------------------
    def _sh(self, script: str, *, step: str, data: bytes | None = None, ok: Sequence[int] = (0,),
            timeout: float | None = None) -> bytes:
        kw = {"timeout": timeout} if timeout else {}
        if data is None:
            return self.conn.quick(script, step=step, ok=ok, **kw).stdout
        return self.conn.call(script, step=step, data=data, ok=ok, **kw).stdout

    def _status(self, script: str, *, step: str) -> int:
        return self.conn.quick(script, step=step, ok=range(0, 255)).returncode

    # -- commands -------------------------------------------------------------
    def _launch_script(self, argv: Sequence[str], *, log_path: Path, pidfile: PurePosixPath,
                       env: Mapping[str, str | None] | None, cwd: Path | None, framed: bool, keep_rc: bool) -> str:
        unset = [w for k, v in (env or {}).items() if v is None for w in ("-u", k)]
        assign = [f"{k}={v}" for k, v in (env or {}).items() if v is not None]
        command = q("env", *unset, "--", *assign, *argv)
        header = f"$ {shlex.join(secrets.redact_argv(argv, env))}"
        if keep_rc:
            # the leader stays a shell that records the exit status once the program ends
            inner = 'echo $$ > "$0"; "$@"; rc=$?; echo $rc > "$0.rc.tmp" && mv -f "$0.rc.tmp" "${0%.pid}.rc"'
        else:
            inner = 'echo $$ > "$0"; exec "$@"'
        rc_file = str(pidfile)[: -len(".pid")] + ".rc" if str(pidfile).endswith(".pid") else str(pidfile) + ".rc"
        return "\n".join([
            "umask 077",
            f"log={q(log_path)}; pidf={q(pidfile)}",
            'mkdir -p "$(dirname "$log")" "$(dirname "$pidf")" || exit 1',
            f"rm -f \"$pidf\" {q(rc_file)}",
            f"printf '%s\\n' {q(header)} >> \"$log\"" if framed else ":",
            f"cd {q(cwd)} || {{ echo specdsl-nocwd; exit 0; }}" if cwd else ":",
            f"command -v {q(argv[0])} >/dev/null 2>&1 || {{ echo specdsl-missing; exit 0; }}",
            f"setsid sh -c {q(inner)} \"$pidf\" {command} </dev/null >>\"$log\" 2>&1 &",
            "echo \"specdsl-pid $!\"",
        ])

    def run(self, argv: Sequence[str], *, log_path: Path, timeout: float, env: Mapping[str, str | None] | None = None,
            cwd: Path | None = None, stop: threading.Event | None = None, framed: bool = True) -> CommandResult:
        """See `Host.run`. The command runs on the host in its own session;
        a timeout or stop stops its group there. A connection lost meanwhile
        is a `HostError` (and the command's group is stopped once the host
        answers again)."""
        argv = tuple(str(a) for a in argv)
        started = time.monotonic()
        pidfile = PurePosixPath(self.workdir) / "tmp" / f"run-{uuid.uuid4().hex}.pid"
        script = self._launch_script(argv, log_path=log_path, pidfile=pidfile, env=env, cwd=cwd, framed=framed,
                                     keep_rc=False)
        script += "\n" + "\n".join([
            "child=$!; start=$(date +%s)",
            "wait $child; rc=$?",
            'rm -f "$pidf"',
            f"printf '[specdsl] exit %s after %ss\\n' $rc $(( $(date +%s) - start )) >> \"$log\"" if framed else ":",
            'if [ $rc -ne 0 ]; then free=$(df -Pk "$(dirname "$log")" 2>/dev/null | awk \'NR==2 {print $4}\'); '
            f'[ -n "$free" ] && [ "$free" -lt {_FULL_KIB} ] && echo "specdsl-full $free"; fi',
            'echo "specdsl-rc $rc"',
        ])
        what = f"running {argv[0]}"
        proc = self.conn.popen(script, step=what)
        timed_out = False
        try:
            while True:
                try:
                    proc.wait(timeout=_POLL_S)
                    break
                except subprocess.TimeoutExpired:
                    pass
                if stop is not None and stop.is_set():
                    self._stop_pidfile(pidfile)
                    kill_group(proc)
                    raise Cancelled(f"cancelled: {shlex.join(argv)}")
                if time.monotonic() - started > timeout:
                    timed_out = True
                    self._stop_pidfile(pidfile)
                    break
        except BaseException:
            kill_group(proc)
            raise
        try:
            out, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            kill_group(proc)
            out, err = b"", b""
        lines = out.decode("utf-8", errors="replace").splitlines()
        if "specdsl-missing" in lines:
            raise HostError(f"{self.conn.where()}: could not start {argv[0]!r}: no such program on the host")
        if "specdsl-nocwd" in lines:
            raise HostError(f"{self.conn.where()}: {what}: no folder {cwd} on the host")
        codes = [line.split()[1] for line in lines if line.startswith("specdsl-rc ")]
        if not codes and not timed_out:
            # the link dropped (or the host failed) before the command ended: stop what may still run there
            cause = self.conn.failure(what, subprocess.CompletedProcess(proc.args, proc.returncode or LOST, out, err))
            try:
                self._stop_pidfile(pidfile)
            except HostError as again:
                cause.add_note(f"the command may still run on the host (pid file {pidfile}): {again}")
            raise cause
        code = int(codes[0]) if codes else -9
        tail = self.tail(log_path, 30)
        full = [line for line in lines if line.startswith("specdsl-full ")]
        if full:
            tail += (f"\n[specdsl] {self.conn.where()}: the file system of {log_path.parent} is full "
                     f"({full[0].split()[1]} KiB free)")
        return CommandResult(argv=argv, returncode=code, log_path=str(log_path), duration_s=time.monotonic() - started,
                             timed_out=timed_out, tail=tail)

    def start(self, argv: Sequence[str], *, log_path: Path, env: Mapping[str, str | None] | None = None,
              cwd: Path | None = None) -> ProcessHandle:
        """See `Host.start`: detached on the host (`setsid`), its pid in
        `<log stem>.pid` beside the log, its exit status in `<log stem>.rc`."""
        argv = tuple(str(a) for a in argv)
        pidfile = PurePosixPath(log_path).with_suffix(".pid")
        script = self._launch_script(argv, log_path=log_path, pidfile=pidfile, env=env, cwd=cwd, framed=True,
                                     keep_rc=True)
        # wait (briefly) for the pid file: then the process is its own leader
        script += "\n" + 'i=0; while [ ! -s "$pidf" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done; cat "$pidf"'
        out = self._sh(script, step=f"starting {argv[0]}").decode().splitlines()
        if "specdsl-missing" in out:
            raise HostError(f"{self.conn.where()}: could not start {argv[0]!r}: no such program on the host")
        if "specdsl-nocwd" in out:
            raise HostError(f"{self.conn.where()}: starting {argv[0]}: no folder {cwd} on the host")
        pids = [line.strip() for line in out if line.strip().isdigit()]
        if not pids:
            raise HostError(f"{self.conn.where()}: starting {argv[0]}: it wrote no pid file within 5s ({pidfile})")
        pid = int(pids[-1])
        return ProcessHandle(pid, pid, argv, str(log_path), str(cwd) if cwd else None)

    def alive(self, handle: ProcessHandle) -> bool:
        """See `Host.alive`."""
        script = (f's=$(cat /proc/{int(handle.pid)}/stat 2>/dev/null) || exit 1; r=${{s##*) }}; set -- $r; '
                  f'[ "$1" != Z ] && [ "$3" = {int(handle.pgid)} ]')
        return self._status(script, step=f"checking process {handle.pid}") == 0

    def returncode(self, handle: ProcessHandle) -> int | None:
        """See `Host.returncode`: read from the `.rc` file `start` leaves."""
        rc = PurePosixPath(handle.log_path).with_suffix(".rc")
        out = self._sh(f"cat {q(rc)} 2>/dev/null || true", step="reading an exit status").decode().strip()
        return int(out) if out.lstrip("-").isdigit() else None

    def group_pids(self, pgid: int) -> list[int]:
        """See `Host.group_pids`."""
        out = self._sh(_GROUP + f"G={int(pgid)}; group", step=f"listing process group {pgid}").decode()
        return sorted(int(p) for p in out.split())

    def stop(self, handle: ProcessHandle, grace_s: float = 10.0) -> None:
        """See `Host.stop`: the whole TERM, wait, KILL, confirm runs on the host."""
        pgid = int(handle.pgid)
        if pgid <= 1:
            raise HostError(f"{self.conn.where()}: refusing to signal process group {pgid}")
        self._stop_group(pgid, grace_s)

    def _stop_group(self, pgid: int, grace_s: float) -> None:
        ticks = max(1, int(grace_s * 10))
        script = _GROUP + "\n".join([
            f"G={pgid}",
            '[ -z "$(group)" ] && exit 0',
            'kill -TERM -"$G" 2>/dev/null; kill -CONT -"$G" 2>/dev/null',  # a frozen group acts on TERM once it runs
            f'i=0; while [ -n "$(group)" ] && [ $i -lt {ticks} ]; do sleep 0.1; i=$((i+1)); done',
            '[ -z "$(group)" ] && exit 0',
            'kill -KILL -"$G" 2>/dev/null',
            'i=0; while [ -n "$(group)" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done',
            'left=$(group); [ -z "$left" ] && exit 0',
            'echo $left; exit 3',
        ])
        done = self.conn.call(script, step=f"stopping process group {pgid}", ok=(0, 3), timeout=grace_s + 60)
        if done.returncode == 3:
            raise HostError(f"{self.conn.where()}: process group {pgid} still has processes "
                            f"{done.stdout.decode().split()} after SIGKILL")

    def _stop_pidfile(self, pidfile: PurePosixPath) -> None:
        out = self._sh(f"cat {q(pidfile)} 2>/dev/null || true", step="reading a pid file").decode().strip()
        if out.isdigit() and int(out) > 1:
            self._stop_group(int(out), 5)
        self._sh(f"rm -f {q(pidfile)}", step="removing a pid file")

    # -- ports ----------------------------------------------------------------
    def free_port(self, host: str = "127.0.0.1") -> int:
        """See `Host.free_port`: outside the host's ephemeral range, chosen
        by the host's Python running `ports` (one round trip)."""
        out = self._sh(q(self.default_python, "-c", _ports_source(), host), step="finding a free port").decode().strip()
        if not out.isdigit():
            raise HostError(f"{self.conn.where()}: finding a free port: the host's Python printed {out[-200:]!r}")
        return int(out)

    def port_free(self, port: int, host: str = "127.0.0.1") -> bool:
        """See `Host.port_free`."""
        code = ("import socket,sys; h=sys.argv[1]; s=socket.socket(socket.AF_INET6 if ':' in h else socket.AF_INET)\n"
                "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
                "try: s.bind((h, int(sys.argv[2])))\nexcept OSError: sys.exit(3)")
        return self._status(q(self.default_python, "-c", code, host, int(port)), step=f"checking port {port}") == 0

    def reach(self, port: int, host: str = "127.0.0.1") -> tuple[str, int]:
        """See `Host.reach`: a local port forwarded through the master
        (`-O forward -L`); kept while the host is open and made again when
        the master is."""
        return "127.0.0.1", self.forward(port, host)

    def forward(self, port: int, host: str = "127.0.0.1", local_port: int | None = None) -> int:
        """The local port forwarded to `host:port` on the host; `local_port`
        asks for that one (a server recorded by an earlier apply keeps its
        address) when it is free here."""
        host = "127.0.0.1" if host in ("0.0.0.0", "") else host
        with self._lock:
            if (host, port) in self._forwards:
                return self._forwards[(host, port)]
            self.conn.ensure(f"forwarding port {port}")
            here = local_port if local_port and _local_port_free(local_port) else _local_free_port()
            self._add_forward(here, host, port)
            self._forwards[(host, port)] = here
            return here

    def _add_forward(self, here: int, host: str, port: int) -> None:
        remote = f"[{host}]" if ":" in host else host
        done = self.conn.control("-O", "forward", "-L", f"127.0.0.1:{here}:{remote}:{port}")
        if done.returncode != 0:
            raise HostError(f"{self.conn.where()}: forwarding port {port}: {done.stderr.strip() or 'ssh -O forward failed'}")

    def _restore_forwards(self) -> None:
        for (host, port), here in list(self._forwards.items()):
            try:
                self._add_forward(here, host, port)
            except HostError:
                self._forwards.pop((host, port), None)  # made again (another port) on the next reach

    # -- files ----------------------------------------------------------------
    def tail(self, path: Path, lines: int = 30) -> str:
        """See `Host.tail`."""
        out = self._sh(f"[ -f {q(path)} ] && tail -n {int(lines)} {q(path)} | tr '\\r' '\\n' || true",
                       step=f"reading {path}")
        return "\n".join(out.decode("utf-8", errors="replace").rstrip("\n").split("\n")[-lines:])

    def read_text(self, path: Path, max_bytes: int | None = None) -> str:
        """See `Host.read_text`."""
        return self._read(path, max_bytes, step=f"reading {path}").decode("utf-8", errors="replace")

    def _read(self, path: Path, max_bytes: int | None, *, step: str) -> bytes:
        reader = f"tail -c {int(max_bytes)} {q(path)}" if max_bytes is not None else f"cat {q(path)}"
        script = f"[ -f {q(path)} ] || exit 3; {reader}"
        # a small file through the worker, a large one through a client of its own
        small = f"[ -f {q(path)} ] || exit 3; [ $(wc -c < {q(path)}) -le {_SMALL_BYTES} ] || exit 4; {reader}"
        done = self.conn.quick(small, step=step, ok=(0, 3, 4))
        if done.returncode == 4:
            done = self.conn.call(script, step=step, ok=(0, 3))
        if done.returncode == 3:
            raise FileNotFoundError(f"{self.conn.where()}: no file {path}")
        return done.stdout

    def write_text(self, path: Path, text: str, *, mode: int = 0o600) -> None:
        """See `Host.write_text` (a temporary file beside it, renamed)."""
        self.write_text_bytes(PurePosixPath(path), text.encode("utf-8"), mode=mode)

    def exists(self, path: Path) -> bool:
        """See `Host.exists`."""
        return self._status(f"[ -e {q(path)} ]", step=f"looking for {path}") == 0

    def mkdir(self, path: Path) -> None:
        """See `Host.mkdir`."""
        self._sh(f"umask 077; mkdir -p {q(path)}", step=f"making {path}")

    def remove_tree(self, path: Path) -> None:
        """See `Host.remove_tree`."""
        self._sh(f"rm -rf -- {q(path)}", step=f"removing {path}")

    @contextmanager
    def temp_dir(self, prefix: str = "specdsl-") -> Iterator[Path]:
        """See `Host.temp_dir`: under the workdir's `tmp/`."""
        base = self.workdir / "tmp"
        out = self._sh(f"umask 077; mkdir -p {q(base)} && mktemp -d {q(str(base / (prefix + 'XXXXXXXX')))}",
                       step="making a temporary folder")
        folder = Path(out.decode().strip())
        try:
            yield folder
        finally:
            self.remove_tree(folder)

    @contextmanager
    def lock(self, path: Path) -> Iterator[None]:
        """See `Host.lock`: `flock` held by a client session until released."""
        script = (f"umask 077; mkdir -p {q(PurePosixPath(path).parent)} || exit 1; exec 9>>{q(path)} || exit 1; "
                  "flock 9 || exit 1; echo locked; cat >/dev/null")
        proc = self.conn.popen(script, step=f"locking {path}", stdin=subprocess.PIPE)
        try:
            line = proc.stdout.readline()
            if line.strip() != b"locked":
                proc.wait(timeout=30)
                err = proc.stderr.read()
                raise self.conn.failure(f"locking {path}", subprocess.CompletedProcess(proc.args, proc.returncode, b"", err))
            yield
        finally:
            try:
                proc.stdin.close()
                proc.wait(timeout=30)
            except (subprocess.TimeoutExpired, OSError):
                pass
            kill_group(proc)

    def fetch(self, path: Path, dest: Path) -> Path:
        """See `Host.fetch`."""
        try:
            data = self._read(path, None, step=f"fetching {path}")
        except FileNotFoundError as exc:
            raise HostError(str(exc)) from None
        dest = Path(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with open(fd, "wb") as f:
            f.write(data)
        return dest

    def run_folder(self, local: Path) -> Path:
        """See `Host.run_folder`: `runs/<name>-<hash of the local path>` under the workdir."""
        local = Path(local).resolve()
        digest = hashlib.sha256(str(local).encode()).hexdigest()[:12]
        return self.workdir / "runs" / f"{local.name}-{digest}"

    def collect(self, folder: Path, local: Path) -> None:
        """See `Host.collect`: a tar stream of the host's folder, unpacked
        here with the `data` filter (no links out, no device files)."""
        data = self.conn.call(f"[ -d {q(folder)} ] || exit 0; tar -C {q(folder)} -cf - .",
                              step=f"collecting {folder}").stdout
        Path(local).mkdir(parents=True, exist_ok=True)
        if data:
            with tarfile.open(fileobj=io.BytesIO(data)) as tar:
                tar.extractall(local, filter="data")

    def read_from(self, path: Path, offset: int) -> bytes:
        """The bytes of `path` after its first `offset` (b"" when it does not
        exist yet): how a file another process appends to is followed."""
        small = f"[ -f {q(path)} ] || exit 0; tail -c +{int(offset) + 1} {q(path)} | head -c {_SMALL_BYTES}"
        return self.conn.quick(small, step=f"reading {path}").stdout

    def put_tree(self, local: Path, folder: Path) -> None:
        """This machine's folder `local` as `folder` on the host, unless it
        is there (a tar stream, links followed; unpacked beside it and
        renamed into place, so a half-copied folder is never seen under its
        name)."""
        if self.exists(folder):
            return
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", dereference=True) as tar:
            tar.add(str(local), arcname=".", filter=lambda info: None if "__pycache__" in info.name else info)
        dest = PurePosixPath(folder)
        script = "\n".join([
            "umask 077", f"mkdir -p {q(dest.parent)} || exit 1", f"[ -d {q(dest)} ] && exit 0",
            f"tmp=$(mktemp -d {q(str(dest.parent / ('.' + dest.name + '.XXXXXX')))}) || exit 1",
            f'if tar -C "$tmp" -xf - && mv "$tmp" {q(dest)}; then exit 0; fi',
            f'rm -rf "$tmp"; [ -d {q(dest)} ]',  # another apply put it there first
        ])
        self.conn.call(script, step=f"copying {local} to {folder}", data=buf.getvalue(), timeout=300)

    # -- programs -------------------------------------------------------------
    def getenv(self, name: str) -> str | None:
        """See `Host.getenv` (the environment of a non-interactive ssh session)."""
        done = self.conn.quick(f"printenv {q(name)}", step=f"reading ${name}", ok=(0, 1))
        return done.stdout.decode("utf-8", errors="replace").rstrip("\n") if done.returncode == 0 else None

    def which(self, program: str) -> str | None:
        """See `Host.which`. `uv` not on the host's PATH is looked for in
        the workdir's `bin/`, and copied there from this machine's uv
        when the two are the same OS and architecture."""
        if "/" in program:
            found = self._status(f"[ -f {q(program)} ] && [ -x {q(program)} ]", step=f"looking for {program}") == 0
            return program if found else None
        out = self.conn.quick(f"command -v {q(program)}", step=f"looking for {program}", ok=(0, 1, 127)).stdout
        found = out.decode().strip()
        if found.startswith("/"):
            return found
        if program == "uv":
            return self._bundled_uv()
        return None

    def _bundled_uv(self) -> str | None:
        target = self.workdir / "bin" / "uv"
        if self.which(str(target)):
            return str(target)
        try:
            import uv

            local = uv.find_uv_bin()
        except (ImportError, FileNotFoundError):
            return None
        system = self._sh("uname -sm", step="reading the OS and architecture").decode().split()
        if system != [platform.system(), platform.machine()]:
            return None
        with open(local, "rb") as f:
            data = f.read()
        self.write_text_bytes(target, data, mode=0o700)
        return str(target)

    def write_text_bytes(self, path: PurePosixPath, data: bytes, *, mode: int) -> None:
        script = "\n".join([
            "umask 077", f"mkdir -p {q(path.parent)} || exit 1",
            f"tmp=$(mktemp {q(str(path.parent / ('.' + path.name + '.XXXXXX')))}) || exit 1",
            f'if cat > "$tmp" && chmod {mode:o} "$tmp" && mv -f "$tmp" {q(path)}; then exit 0; fi',
            'rm -f "$tmp"; exit 1',
        ])
        self._sh(script, step=f"writing {path}", data=data, timeout=300)

    def close(self) -> None:
        """See `Host.close`: the forwards and the master end."""
        with self._lock:
            self._forwards.clear()
        self.conn.close()


@functools.cache
def _ports_source() -> str:
    """`specdsl.hosts.ports` as a script for the host's Python."""
    return Path(ports.__file__).read_text(encoding="utf-8")


def _local_free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _local_port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True
