"""hosts: where commands and servers run.

A `Host` runs a command to completion (argv list, env, cwd, log file, bounded
wait) and starts long-lived processes in their own process groups, checks
them and stops them (TERM the group, wait, KILL, confirm none is left).
`local` is this machine; ssh and slurm hosts implement the same protocol.
`http.session()` is the one factory for HTTP sessions (every call has a
timeout).

This layer imports nothing from specdsl above it.
"""

from specdsl.hosts.base import Cancelled, CommandResult, Host, HostError, ProcessHandle
from specdsl.hosts.local import LocalHost

__all__ = ["Cancelled", "CommandResult", "Host", "HostError", "LocalHost", "ProcessHandle"]
