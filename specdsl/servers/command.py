"""`command`: any OpenAI-compatible server, started by the user's argv.

- argv: `server.command` with `{port}`, `{host}` and `{model}` expanded
  once (specdsl.model.placeholders), then the args as flags.
- readiness: `ready_url` (a path on the server or a whole URL), else /health.
- effective configuration: only what the spec asked for.
- client quirks: nothing beyond the basic API; `ignore_eos` only when the
  workload asks for it.
"""

from __future__ import annotations

from urllib.parse import urljoin

from specdsl.model.placeholders import expand_argv
from specdsl.servers.args import render_args
from specdsl.servers.base import Adapter


class Command(Adapter):
    name = "command"

    def argv(self, server, env, bind, port, host=None):
        if not server.command:
            raise ValueError(f"server {server.name!r}: engine \"command\" needs a command")
        values = {"port": str(port), "host": bind, "model": server.model}
        return [*expand_argv(server.command, values), *render_args(self.name, server.args)]

    def health_url(self, server, base_url):
        if not server.ready_url:
            return urljoin(base_url, "/health")
        if "://" in server.ready_url:
            return server.ready_url
        return urljoin(base_url + "/", server.ready_url.lstrip("/"))


ADAPTER = Command()
