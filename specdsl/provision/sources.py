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
import re
from pathlib import Path

import attrs

from specdsl.hosts import Host, HostError
from specdsl.model.config import Stack
from specdsl.provision.envinfo import ProvisionError
from specdsl.provision.pipconf import PipSources

INDEX_PROBE_TIMEOUT_S = 5.0
CHECK_TIMEOUT_S = 60.0
DIST_SUFFIXES = (".whl", ".tar.gz", ".zip")

# argv: GIVEN.json OUT.json TIMEOUT. GIVEN: {"check": [location], "list":
# [folder]}; writes {"problems": {location: problem or null}, "files":
# {folder: [distribution file names]}}.
_CHECK = r"""
import json, os, sys, urllib.error, urllib.parse, urllib.request
from concurrent.futures import ThreadPoolExecutor
with open(sys.argv[1]) as f:
    given = json.load(f)
timeout = float(sys.argv[3])
def local(location):
    parsed = urllib.parse.urlparse(location)
    if parsed.scheme == "file":
        return urllib.request.url2pathname(parsed.path)
    return location if parsed.scheme == "" else None
def check(location):
    path = local(location)
    if path is not None:
        return None if os.path.exists(path) else "missing"
    try:
        urllib.request.urlopen(location, timeout=timeout).close()
    except urllib.error.HTTPError:
        pass  # any HTTP answer, even 404 at the root, is a live server
    except Exception as exc:
        reason = getattr(exc, "reason", None)
        return type(reason if isinstance(reason, BaseException) else exc).__name__
    return None
def files(location):
    path = local(location)
    if path is None or not os.path.isdir(path):
        return []
    return sorted(n for n in os.listdir(path) if n.endswith(SUFFIXES) and os.path.isfile(os.path.join(path, n)))
SUFFIXES = tuple(given["suffixes"])
locations = given["check"]
with ThreadPoolExecutor(max(1, min(8, len(locations)))) as pool:
    problems = dict(zip(locations, pool.map(check, locations)))
with open(sys.argv[2], "w") as f:
    json.dump({"problems": problems, "files": {d: files(d) for d in given["list"]}}, f)
"""


@attrs.frozen
class Sources:
    """Installer arguments naming the package sources (and keeping the
    installer's cache from serving stale builds of carried distributions),
    environment for uv, and what was left out (warnings)."""

    args: tuple[str, ...] = ()
    uv_env: dict[str, str] = attrs.field(factory=dict)
    warnings: tuple[str, ...] = ()
    # distribution files in the stack's own local find-links folders
    carried: tuple[str, ...] = ()


def package_sources(host: Host, stack: Stack, pip_sources: PipSources, *, no_index: bool, log_path: Path) -> Sources:
    """The sources of `stack`'s install on `host`; unreachable ones left out.

    pip reads its own configuration; uv gets pip's sources passed on.

    Carried distributions (the files in the stack's own local find-links
    folders) may be rebuilt under their old file names, and both installers
    cache by name: uv keeps a find-links wheel by its file name (a rebuilt
    one is not even looked at), pip keeps the wheel it built from a local
    sdist by its URL. So uv is told `--refresh-package NAME` for each carried
    distribution (it re-reads those files only; everything else still comes
    from its cache), and pip `--no-cache-dir` when the folders hold an sdist
    (pip installs local wheels straight from the file). The host's
    pip-configured find-links are its package mirror: like an index, they
    are trusted to keep a name for one build."""
    env = dict(stack.env)
    find_links = list(stack.find_links) + [f for f in pip_sources.find_links if f not in stack.find_links]
    extra = [] if no_index else list(stack.index) + [u for u in pip_sources.extra_index_urls if u not in stack.index]
    index_url = None if no_index else pip_sources.index_url
    uv_env: dict[str, str] = {}
    # pip uses its `cert` for every request; uv reads SSL_CERT_FILE (unless set already).
    if pip_sources.cert and not pip_sources.ssl_cert_file and "SSL_CERT_FILE" not in env:
        uv_env["SSL_CERT_FILE"] = pip_sources.cert
    locations = list(dict.fromkeys(find_links + extra + ([index_url] if index_url else []) + list(pip_sources.constraints)))
    problems, files = check_locations(host, locations, log_path, env={**env, **uv_env}, list_files=list(stack.find_links))
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
    carried = tuple(sorted({name for link in stack.find_links for name in files.get(link, ())}))
    if stack.installer == "uv":
        for dist in sorted({distribution_name(f) for f in carried}):
            args += ["--refresh-package", dist]
    elif any(not f.endswith(".whl") for f in carried):
        args.append("--no-cache-dir")
    if no_index:
        return Sources(("--no-index", *args), uv_env, tuple(warnings), carried)
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
    return Sources(tuple(args), uv_env, tuple(warnings), carried)


def distribution_name(filename: str) -> str:
    """The normalized project name of a wheel or sdist file name
    (`My_Pkg-0.1-py3-none-any.whl`, `my-pkg-0.1.tar.gz` -> `my-pkg`)."""
    if filename.endswith(".whl"):
        name = filename.split("-", 1)[0]
    else:
        stem = next(filename[: -len(s)] for s in DIST_SUFFIXES if filename.endswith(s))
        name = stem.rsplit("-", 1)[0]
    return re.sub(r"[-_.]+", "-", name).lower()


def check_locations(host: Host, locations: list[str], log_path: Path, env: dict[str, str] | None = None,
                    list_files: list[str] = ()) -> tuple[dict[str, str | None], dict[str, list[str]]]:
    """Asked on `host` in one command: ({location: None when it is there,
    "missing" for an absent path, or why a URL does not answer},
    {folder of `list_files`: its distribution file names})."""
    if not locations and not list_files:
        return {}, {}
    with host.temp_dir(prefix="specdsl-sources-") as tmp:
        script, given, out = tmp / "check_sources.py", tmp / "given.json", tmp / "sources.json"
        host.write_text(script, _CHECK)
        host.write_text(given, json.dumps({"check": locations, "list": list(list_files), "suffixes": list(DIST_SUFFIXES)}))
        argv = [host.default_python, str(script), str(given), str(out), str(INDEX_PROBE_TIMEOUT_S)]
        try:
            result = host.run(argv, log_path=log_path, timeout=CHECK_TIMEOUT_S, env=env)
        except HostError as exc:
            raise ProvisionError(f"Checking package sources on host {host.name} failed: {exc}", command=argv, log_path=str(log_path)) from None
        if not result.ok:
            raise ProvisionError(f"Checking package sources on host {host.name} failed", command=argv,
                                 tail=result.tail, log_path=str(log_path))
        found = json.loads(host.read_text(out))
    return found["problems"], found["files"]
