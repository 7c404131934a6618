"""A track's baseline rebuilt from its stack lock, as a paired arm.

`baseline = track.NAME` (with the default `baseline_mode = "paired"`)
measures the track's promoted configuration beside the candidate, arm
against arm on the candidate's machine, instead of reading numbers the
track recorded at another time (drift between the two would read as an
effect). The configuration is what `stacks/NAME.lock.toml` beside the spec
records of the promotion: the stack as declared, pinned to every version it
resolved to (uv overrides `name==version`; pip has no overrides, so there
only the declared requirements are pinned), and the server as it ran
(engine, model, args, env, command). The workload is the candidate's: both
arms are measured with one workload.

Once the candidate is itself the track's promotion (the lock records its
own stack and server), its arm is the configuration the lock says it
replaced (`[previous]`), as `State.baseline_for` compares a promoted result
with the run it replaced: the benchmark keeps its identity and a re-apply
changes nothing.

Reading the lock is the only I/O here (a TOML file beside the spec, like
find-links digests); everything else is pure.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import attrs

from specdsl import secrets
from specdsl.diag import Diagnostic
from specdsl.graph.content import server_content, stack_content
from specdsl.model import config

LOCK_DIR = "stacks"


@attrs.frozen
class TrackLock:
    """What a track's lock file says (None fields: not recorded)."""

    track: str
    path: str  # as shown to the user: stacks/NAME.lock.toml
    doc: dict | None  # the parsed lock, None when there is no file
    error: str = ""  # why the file could not be read


def lock_path(spec_dir: Path | str, track: str) -> Path:
    return Path(spec_dir) / LOCK_DIR / f"{track}.lock.toml"


def read_locks(cfg: config.Config, spec_dir: Path | str | None) -> dict[str, TrackLock]:
    """The lock of every track a paired track baseline of `cfg` names."""
    out: dict[str, TrackLock] = {}
    for exp in cfg.experiments:
        ref = exp.baseline
        if ref is None or ref.kind != "track" or ref.mode != "paired" or ref.name in out:
            continue
        shown = f"{LOCK_DIR}/{ref.name}.lock.toml"
        if spec_dir is None:
            out[ref.name] = TrackLock(ref.name, shown, None)
            continue
        path = lock_path(spec_dir, ref.name)
        try:
            doc = tomllib.loads(path.read_text())
        except FileNotFoundError:
            out[ref.name] = TrackLock(ref.name, shown, None)
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            out[ref.name] = TrackLock(ref.name, shown, None, f"{shown} cannot be read: {exc}")
        else:
            out[ref.name] = TrackLock(ref.name, shown, doc)
    return out


def arm_for(exp: config.Experiment, lock: TrackLock | None, diags: list[Diagnostic]) -> config.Experiment | None:
    """The experiment arm A of `exp`'s paired benchmark runs: the track's
    promoted configuration on `exp`'s host with `exp`'s workload; None when
    the lock records none (the check then says why: `missing_reason`)."""
    if lock is None or lock.doc is None:
        if lock is not None and lock.error:
            diags.append(Diagnostic.error(f"Track `{lock.track}`'s stack lock is unreadable", exp.span,
                                          f"{lock.error}; restore it (it is written when the track is promoted), or compare "
                                          'with the recorded numbers: `baseline_mode = "recorded"`'))
        return None
    doc = lock.doc
    if _is_own(doc, exp):
        doc = doc.get("previous")
        if not isinstance(doc, dict):
            return None  # promoted with nothing before it: nothing to compare with
    try:
        stack = _stack(doc, exp, lock.track)
        server = _server(doc, exp, lock.track)
    except _Hidden as exc:
        diags.append(Diagnostic.error(f"Track `{lock.track}`'s stack lock hides `{exc}`", exp.span,
                                      f"{lock.path} writes `{exc}` as (sensitive), so the track cannot be rebuilt with it: give "
                                      f"the candidate the same `{exc}` (its value is used for both arms), or compare with the "
                                      'recorded numbers: `baseline_mode = "recorded"`'))
        return None
    except (KeyError, TypeError, ValueError) as exc:
        diags.append(Diagnostic.error(f"Track `{lock.track}`'s stack lock is incomplete", exp.span,
                                      f"{lock.path}: {exc!r} is missing or malformed; promote the track again, or compare "
                                      'with the recorded numbers: `baseline_mode = "recorded"`'))
        return None
    return config.Experiment(name=arm_name(lock.track), host=exp.host, stack=stack, server=server, workload=exp.workload,
                             group=arm_name(lock.track), span=exp.span)


def missing_reason(exp: config.Experiment, lock: TrackLock | None) -> str:
    """Why `exp`'s track baseline has no arm (for its check's ERROR)."""
    track = exp.baseline.name
    where = lock.path if lock is not None else f"{LOCK_DIR}/{track}.lock.toml"
    if lock is not None and lock.doc is not None:
        return (f"track {track} has no configuration before {exp.name}'s own promotion to measure beside it "
                f"({where} records {exp.name} itself)")
    return (f"track {track} has no stack lock to rebuild its baseline from ({where} is missing: the track was never "
            f'promoted, or the file was removed); promote one, or compare with recorded numbers: baseline_mode = "recorded"')


def arm_name(track: str) -> str:
    return f"track.{track}"


class _Hidden(Exception):
    """A value the lock wrote `(sensitive)` and the candidate does not have."""


def _is_own(doc: dict, exp: config.Experiment) -> bool:
    """Whether the lock records `exp` itself (its stack and server as
    promoted): then its baseline is what the promotion replaced."""
    if doc.get("experiment") != exp.name:
        return False
    mine_stack = secrets.redact_tree(_no_none(stack_content(exp.stack)))
    mine_server = secrets.redact_tree(_no_none(server_content(exp.server)))
    theirs_server = {k: v for k, v in dict(doc.get("server", {})).items() if k != "argv"}
    return _same(mine_stack, doc.get("stack")) and _same(mine_server, theirs_server)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b


def _no_none(d: dict) -> dict:
    return {k: v for k, v in d.items() if v is not None}


def _unhide(items: dict, mine: dict, what: str) -> tuple[tuple[str, Any], ...]:
    out = []
    for key, value in items.items():
        if secrets.is_marked(value):
            if key not in mine:
                raise _Hidden(f"{what}.{key}")
            value = mine[key]
        out.append((key, value))
    return tuple(out)


def _strs(values, what: str) -> tuple[str, ...]:
    out = tuple(values)
    for v in out:
        if not isinstance(v, str):
            raise ValueError(f"{what}: {v!r} is not a string")
        if secrets.is_marked(v):
            raise _Hidden(what)
    return out


def _stack(doc: dict, exp: config.Experiment, track: str) -> config.Stack:
    s = doc["stack"]
    installer = s.get("installer", "uv")
    packages = list(_strs(s.get("packages", ()), "stack.packages"))
    resolved = {_req_name(str(k)): str(v) for k, v in dict(doc.get("resolved", {}).get("packages", {})).items()}
    overrides = list(_strs(s.get("overrides", ()), "stack.overrides"))
    by_path = {_req_name(p) for p in packages if not _plain(p)}
    pins = [f"{name}=={version}" for name, version in sorted(resolved.items()) if name not in by_path]
    if installer == "uv":
        overrides += pins  # every version the track resolved to, forced
    else:  # pip has no overrides: pin the declared requirements themselves
        packages = [f"{_req_name(p)}=={resolved[_req_name(p)]}" if _plain(p) and _req_name(p) in resolved else p
                    for p in packages]
    return config.Stack(
        name=arm_name(track), python=str(s.get("python", "3.11")), cuda=s.get("cuda"), packages=tuple(packages),
        index=_strs(s.get("index", ()), "stack.index"), find_links=_strs(s.get("find_links", ()), "stack.find_links"),
        overrides=tuple(overrides), exclude=_strs(s.get("exclude", ()), "stack.exclude"),
        env=_unhide(dict(s.get("env", {})), dict(exp.stack.env), "stack.env"), installer=installer)


def _server(doc: dict, exp: config.Experiment, track: str) -> config.Server:
    s = doc["server"]
    return config.Server(
        name=arm_name(track), engine=s["engine"], model=s["model"],
        args=_unhide(dict(s.get("args", {})), dict(exp.server.args), "server.args"),
        env=_unhide(dict(s.get("env", {})), dict(exp.server.env), "server.env"),
        port=s.get("port"), ready_timeout=exp.server.ready_timeout,
        command=_strs(s.get("command", ()), "server.command"), ready_url=s.get("ready_url"))


def _req_name(req: str) -> str:
    """The distribution name a requirement names (`torch>=2` -> torch,
    `pkg @ https://...` -> pkg, `./plugins/my_pkg` -> my-pkg, a wheel file
    -> the name before its version)."""
    import re

    if not _plain(req) and " @ " not in req:
        base = req.rstrip("/").rsplit("/", 1)[-1]
        req = base.split("-")[0] if base.endswith((".whl", ".tar.gz", ".zip")) else base
    m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", req)
    return (m.group(1) if m else req).lower().replace("_", "-")


def _plain(req: str) -> bool:
    """A requirement resolved from an index (not a path, URL or `name @ url`)."""
    return not ("/" in req or "@" in req or req.startswith(".") or req.endswith((".whl", ".tar.gz", ".zip")))
