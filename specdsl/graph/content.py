"""What a stack and a server are, as the content their identities hash.

build hashes them into the provision and launch steps' identities;
track_arm compares them with what a track's stack lock records (is the lock
this experiment's own promotion?); apply's StateWriter writes them into a
promotion's lock. One module, below all three: none imports another for them.
"""

from __future__ import annotations

from specdsl.model import config


def stack_content(stack: config.Stack) -> dict:
    content = {
        "python": stack.python,
        "cuda": stack.cuda,
        "packages": list(stack.packages),
        "index": list(stack.index),
        "find_links": list(stack.find_links),
        "overrides": list(stack.overrides),
        "exclude": list(stack.exclude),
        "env": dict(stack.env),
        "installer": stack.installer,
    }
    # What local find-links folders hold: a wheel rebuilt under its old name
    # is a new stack. Only when there is such a folder (identities of other
    # stacks stay as they were); each file hashed once (graph/find_links).
    if stack.find_links:
        from specdsl.graph.find_links import find_links_digests

        digests = find_links_digests(stack.find_links)
        if digests:
            content["find_links_digest"] = digests
    return content


def server_content(server: config.Server) -> dict:
    # ready_timeout and keep_running change how specdsl waits and cleans up,
    # not the server: they are left out so changing them relaunches nothing.
    out = {"engine": server.engine, "model": server.model, "args": {k: _jsonable(v) for k, v in server.args}, "env": dict(server.env)}
    if server.port is not None:
        out["port"] = server.port
    if server.gpus is not None:  # how many GPUs it is given (left out when unset: identities stay)
        out["gpus"] = server.gpus
    if server.command:
        out["command"] = list(server.command)
        out["ready_url"] = server.ready_url
    return out


def _jsonable(v):
    return list(v) if isinstance(v, tuple) else v
