"""hosts: where commands and servers run.

A `Host` runs a command to completion (argv list, env, cwd, log file, bounded
wait) and starts long-lived processes in their own process groups, checks
them and stops them (TERM the group, wait, KILL, confirm none is left).
It also reads and writes its own files, finds programs and says how its
ports are reached from here. `local` is this machine; ssh and slurm hosts
implement the same protocol. `HostRegistry` makes one `Host` per physical
machine (`host_key`): only this package creates hosts or starts processes.
`http.session()` is the one factory for HTTP sessions (every call has a
timeout). `children` starts helper processes of specdsl itself (the
benchmark client's workers): in its process group, dying with it.

This layer imports nothing from specdsl above it.
"""

from specdsl.hosts.base import Cancelled, CommandResult, Host, HostError, ProcessHandle
from specdsl.hosts.local import LocalHost
from specdsl.hosts.registry import HostRegistry, host_key

__all__ = ["Cancelled", "CommandResult", "Host", "HostError", "HostRegistry", "LocalHost", "ProcessHandle", "host_key"]
