"""Where an install gets its packages from, as the host sees it.

Sources, in this order: the stack's `index` and `find_links`, then pip's
configured sources on the host (see `pipconf`), so that uv finds what pip
would. Indexes are merged pip-style (best version over all of them:
`--index-strategy unsafe-best-match`) so both installers resolve a stack
alike. An index that does not answer (DNS, refused, timeout) or a find-links
folder that does not exist is left out with a warning: an unreachable mirror
must not break an install that can succeed without it.

Whether a source is there is asked *on the host*, where the install runs:
one small standard-library script checks every location at once (a path
exists; a URL answers within a few seconds, any HTTP status counting as a
live server).
"""

from __future__ import annotations

import json
from pathlib import Path

import attrs

from specdsl.hosts import Host, HostError
from specdsl.model.config import Stack
from specdsl.provision.envinfo import ProvisionError
from specdsl.provision.pipconf import PipSources

INDEX_PROBE_TIMEOUT_S = 5.0
CHECK_TIMEOUT_S = 60.0

# argv: LOCATIONS.json OUT.json TIMEOUT; writes {location: problem or null}.
_CHECK = r"""
import json, os, sys, urllib.error, urllib.parse, urllib.request
from concurrent.futures import ThreadPoolExecutor
with open(sys.argv[1]) as f:
    locations = json.load(f)
timeout = float(sys.argv[3])
def check(location):
    parsed = urllib.parse.urlparse(location)
    if parsed.scheme in ("", "file"):
        path = urllib.request.url2pathname(parsed.path) if parsed.scheme == "file" else location
        return None if os.path.exists(path) else "missing"
    try:
        urllib.request.urlopen(location, timeout=timeout).close()
    except urllib.error.HTTPError:
        pass  # any HTTP answer, even 404 at the root, is a live server
    except Exception as exc:
        reason = getattr(exc, "reason", None)
        return type(reason if isinstance(reason, BaseException) else exc).__name__
    return None
with ThreadPoolExecutor(max(1, min(8, len(locations)))) as pool:
    problems = dict(zip(locations, pool.map(check, locations)))
with open(sys.argv[2], "w") as f:
    json.dump(problems, f)
"""


@attrs.frozen
class Sources:
    """Installer arguments naming the package sources, environment for uv,
    and what was left out (warnings)."""

    args: tuple[str, ...] = ()
    uv_env: dict[str, str] = attrs.field(factory=dict)
    warnings: tuple[str, ...] = ()


def package_sources(host: Host, stack: Stack, pip_sources: PipSources, *, no_index: bool, log_path: Path) -> Sources:
    """The sources of `stack`'s install on `host`; unreachable ones left out.

    pip reads its own configuration; uv gets pip's sources passed on."""
    env = dict(stack.env)
    find_links = list(stack.find_links) + [f for f in pip_sources.find_links if f not in stack.find_links]
    extra = [] if no_index else list(stack.index) + [u for u in pip_sources.extra_index_urls if u not in stack.index]
    index_url = None if no_index else pip_sources.index_url
    uv_env: dict[str, str] = {}
    # pip uses its `cert` for every request; uv reads SSL_CERT_FILE (unless set already).
    if pip_sources.cert and not pip_sources.ssl_cert_file and "SSL_CERT_FILE" not in env:
        uv_env["SSL_CERT_FILE"] = pip_sources.cert
    locations = list(dict.fromkeys(find_links + extra + ([index_url] if index_url else []) + list(pip_sources.constraints)))
    problems = check_locations(host, locations, log_path, env={**env, **uv_env})
    warnings: list[str] = []

    def usable(location: str, kind: str) -> bool:
        problem = problems.get(location)
        if problem is None:
            return True
        if problem == "missing":
            warnings.append(f"{kind} {location} does not exist on host {host.name}: left out")
        else:
            warnings.append(f"{kind} {location} is unreachable from host {host.name} ({problem}): left out")
        return False

    args: list[str] = []
    for link in find_links:
        if usable(link, "find-links"):
            args += ["--find-links", link]
    if no_index:
        return Sources(("--no-index", *args), uv_env, tuple(warnings))
    reachable_extra = [u for u in extra if usable(u, "index")]
    for url in reachable_extra:
        args += ["--extra-index-url", url]
    if index_url and usable(index_url, "index"):
        args += ["--index-url", index_url]
    if stack.installer == "uv":
        if reachable_extra:
            args += ["--index-strategy", "unsafe-best-match"]
        for constraint in pip_sources.constraints:
            if problems.get(constraint) is None:  # a missing constraints file is pip's business, not a warning
                args += ["--constraint", constraint]
    return Sources(tuple(args), uv_env, tuple(warnings))


def check_locations(host: Host, locations: list[str], log_path: Path, env: dict[str, str] | None = None) -> dict[str, str | None]:
    """{location: None when it is there, "missing" for an absent path, or
    why a URL does not answer}, asked on `host` in one command."""
    if not locations:
        return {}
    with host.temp_dir(prefix="specdsl-sources-") as tmp:
        script, given, out = tmp / "check_sources.py", tmp / "locations.json", tmp / "problems.json"
        host.write_text(script, _CHECK)
        host.write_text(given, json.dumps(locations))
        argv = [host.default_python, str(script), str(given), str(out), str(INDEX_PROBE_TIMEOUT_S)]
        try:
            result = host.run(argv, log_path=log_path, timeout=CHECK_TIMEOUT_S, env=env)
        except HostError as exc:
            raise ProvisionError(f"Checking package sources on host {host.name} failed: {exc}", command=argv, log_path=str(log_path)) from None
        if not result.ok:
            raise ProvisionError(f"Checking package sources on host {host.name} failed", command=argv,
                                 tail=result.tail, log_path=str(log_path))
        return json.loads(host.read_text(out))
