"""A real OpenSSH server on loopback for the tests, made per test session.

Host keys and client keys are generated with `ssh-keygen` into a temporary
folder; sshd listens on a free non-default port of 127.0.0.1 and runs in
its own process group, stopped by group at the end. The client side is an
ssh config file (passed with `-F`, as `SPECDSL_SSH_CONFIG` does for
specdsl) with host aliases:

- `specdsl-test`: the server, with the authorized key and its host key known;
- `specdsl-badkey`: the server, with a key it does not accept;
- `specdsl-badhostkey`: the server, with another key recorded for it in known_hosts;
- `specdsl-nohost`: a name that does not resolve.
"""

from __future__ import annotations

import getpass
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"


def available() -> str | None:
    """Why the tests cannot run a sshd here, or None."""
    if not os.path.exists(SSHD):
        return "no sshd (install openssh-server)"
    if shutil.which("ssh") is None or shutil.which("ssh-keygen") is None:
        return "no ssh client (install openssh-client)"
    return None


def processes_mentioning(text: str) -> list[str]:
    """Command lines of live processes that mention `text` (no procps needed)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmd:
            found.append(f"{pid}: {cmd[:300]}")
    return found


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _keygen(path: Path) -> str:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "specdsl-test", "-f", str(path)], check=True)
    return path.with_suffix(".pub").read_text().strip()


class Sshd:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = _free_port()
        self.user = getpass.getuser()
        self.config = root / "ssh_config"
        self.proc: subprocess.Popen | None = None

    def start(self) -> "Sshd":
        root = self.root
        root.chmod(0o700)
        host_pub = _keygen(root / "host_key")
        other_pub = _keygen(root / "other_host_key")
        client_pub = _keygen(root / "client_key")
        _keygen(root / "refused_key")
        (root / "authorized_keys").write_text(client_pub + "\n")
        (root / "authorized_keys").chmod(0o600)
        (root / "sshd_config").write_text("\n".join([
            f"Port {self.port}", "ListenAddress 127.0.0.1", f"HostKey {root / 'host_key'}",
            f"AuthorizedKeysFile {root / 'authorized_keys'}", f"PidFile {root / 'sshd.pid'}",
            "PasswordAuthentication no", "KbdInteractiveAuthentication no", "PubkeyAuthentication yes",
            "UsePAM no", "StrictModes no", "PermitRootLogin prohibit-password", "AllowTcpForwarding yes",
            "MaxSessions 100", "MaxStartups 100", "LogLevel ERROR", "",
        ]))
        known = f"[127.0.0.1]:{self.port} {' '.join(host_pub.split()[:2])}\n"
        wrong = f"[127.0.0.1]:{self.port} {' '.join(other_pub.split()[:2])}\n"
        (root / "known_hosts").write_text(known)
        (root / "wrong_known_hosts").write_text(wrong)
        common = ["  HostName 127.0.0.1", f"  Port {self.port}", f"  User {self.user}", "  IdentitiesOnly yes",
                  "  StrictHostKeyChecking yes", "  IdentityAgent none"]
        self.config.write_text("\n".join([
            "Host specdsl-test", *common, f"  IdentityFile {root / 'client_key'}",
            f"  UserKnownHostsFile {root / 'known_hosts'}",
            "Host specdsl-badkey", *common, f"  IdentityFile {root / 'refused_key'}",
            f"  UserKnownHostsFile {root / 'known_hosts'}",
            "Host specdsl-badhostkey", *common, f"  IdentityFile {root / 'client_key'}",
            f"  UserKnownHostsFile {root / 'wrong_known_hosts'}",
            "Host specdsl-nohost", "  HostName no-such-host.invalid", f"  IdentityFile {root / 'client_key'}",
            "  IdentityAgent none", "",
        ]))
        if os.geteuid() == 0:
            os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # sshd's privilege separation folder
        log = open(root / "sshd.log", "wb")
        self.proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(root / "sshd_config")], stdin=subprocess.DEVNULL,
                                     stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"sshd exited: {(root / 'sshd.log').read_text()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError("sshd did not listen within 20s")

    def stop(self) -> None:
        """sshd and every session it forked share its process group: stop them all."""
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)
        self.proc = None
