"""A port for a server that no outgoing connection can take while it starts.

A port from the kernel (bind to port 0) comes from the ephemeral range
(Linux: /proc/sys/net/ipv4/ip_local_port_range, 32768-60999 by default),
the range every outgoing connection on the host draws its local port from,
the server's own processes included (downloads, NCCL, ZMQ, its tokenizer
workers). A server that binds its port only after minutes of startup
(SGLang's CUDA graph capture) could find it taken by then: uvicorn logs
`[Errno 98] ... address already in use` and SGLang hangs. A port outside
that range is never handed to a connection, so only another listener can
take it.

Stdlib only and self-contained: `SshHost.free_port` runs this module's
source with the host's Python (one round trip), as `python -c SOURCE BIND`.
"""

import errno
import random
import socket
import sys

RANGE_FILE = "/proc/sys/net/ipv4/ip_local_port_range"
FLOOR = 20000  # below it: well-known services' ports (8000, 8080, 5432, ...)
LOWEST = 1024  # the floor when the ephemeral range starts below FLOOR
TRIES = 64


def ephemeral_range(path=RANGE_FILE):
    """(first, last) of the host's ephemeral ports, None when unknown (not
    Linux, or a file that does not read as two ports)."""
    try:
        with open(path) as f:
            first, last = (int(word) for word in f.read().split())
    except (OSError, ValueError):
        return None
    if not 0 < first <= last <= 65535:
        return None
    return first, last


def outside(ephemeral):
    """The widest range of ports (first, last) outside `ephemeral`: below
    it from FLOOR (LOWEST when it starts at or below FLOOR), or above it;
    None when it leaves no room."""
    first, last = ephemeral
    below = (FLOOR if first > FLOOR else LOWEST, first - 1)
    above = (last + 1, 65535)
    room = [r for r in (below, above) if r[0] <= r[1]]
    if not room:
        return None
    return max(room, key=lambda r: r[1] - r[0])


def port_free(port, host="127.0.0.1"):
    """True when a server could listen on `port` of `host` now."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as sock:
        # SO_REUSEADDR: a port in TIME_WAIT is free for a server; a listener is not.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno in (errno.EADDRINUSE, errno.EACCES):
                return False
            raise
        return True


def kernel_port(host="127.0.0.1"):
    """A free port the kernel chooses (from the ephemeral range)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def pick_port(host="127.0.0.1", path=RANGE_FILE, rng=random):
    """A free port of `host` outside the ephemeral range, chosen at random
    (two launches choosing at once rarely meet); the kernel's choice when
    the range is unknown or leaves no room, or no free port was found."""
    ephemeral = ephemeral_range(path)
    room = outside(ephemeral) if ephemeral else None
    if room is not None:
        for _ in range(TRIES):
            port = rng.randint(room[0], room[1])
            if port_free(port, host):
                return port
    return kernel_port(host)


if __name__ == "__main__":
    print(pick_port(sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1"))
