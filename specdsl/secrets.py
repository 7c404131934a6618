"""Sensitive values: which values are secret, how identities hash them, and
how everything specdsl writes leaves them out.

**What is sensitive** (docs/language.md, "Sensitive values"):
- the string value of an environment variable (a stack's or a server's
  `env`), an engine argument (`args`) or a command-line flag (`--api-key
  VALUE`, `--api-key=VALUE` in a `command`) whose *name* says it is a secret:
  one of its words (split at `_`, `-`, `.` and camelCase) is SECRET,
  PASSWORD, PASSWD, PASSPHRASE, CREDENTIAL(S), APIKEY or AUTHORIZATION, or
  its last word is TOKEN, KEY, PASS, AUTH or COOKIE (`HF_TOKEN`, `API_KEY`,
  `AWS_SECRET_ACCESS_KEY`, `DB_PASSWORD`, `hf-token`; not
  `TOKENIZERS_PARALLELISM` or `max-num-batched-tokens`);
- the password of a URL (`https://user:PASSWORD@host/simple`) and the value
  of a query parameter with such a name (`?token=VALUE`);
- every string value of a variable declared `sensitive = true`, wherever
  it is used (alone, or inside a longer string).

**Identities** hash a sensitive value as `(sensitive:HMAC)`: HMAC-SHA256
under a random 256-bit key of this user's, kept outside everything specdsl
writes (`~/.config/specdsl/identity.key`, 0600; `SPECDSL_KEY_FILE` moves it).
A changed secret still changes the identities that hold it, and nothing
written (state, plans, locks) lets anyone test guesses of the value without
the key: a bare SHA-256 of a short token could be brute-forced offline from
a plan file. The price: identities holding a secret agree between machines
only when they share the key file (copy it); all other identities are as
before.

**Text** that specdsl writes (state, plans, locks, environment records, log
headers, what it prints) shows a sensitive value as `(sensitive)`. The
values found while resolving a spec are registered here for the process,
so writers that see only text or an argv (a log header, a record) can still
leave them out.

This module imports nothing of specdsl but `private`.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import functools
import re
import secrets as _random
import threading
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from specdsl import private

SENSITIVE = "(sensitive)"
KEY_ENV = "SPECDSL_KEY_FILE"
# A value shorter than this is hidden where it is a whole string, never
# searched for inside other text: "1" would match everywhere.
MIN_INSIDE = 4

_ANY_WORD = frozenset({"SECRET", "SECRETS", "PASSWORD", "PASSWORDS", "PASSWD", "PASSPHRASE", "CREDENTIAL", "CREDENTIALS",
                       "APIKEY", "AUTHORIZATION"})
_LAST_WORD = frozenset({"TOKEN", "KEY", "PASS", "AUTH", "COOKIE"})
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_MARKER = re.compile(r"\(sensitive:[0-9a-f]{32}\)")
_URL_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@\"']*:)(?P<password>[^/\s@\"']+)(?=@)")
_URL_QUERY = re.compile(r"(?P<head>[?&](?P<name>[A-Za-z0-9_.-]+)=)(?P<value>[^&#\s\"']+)")


# -- names -----------------------------------------------------------------------


def words(name: str) -> list[str]:
    """`HF_TOKEN` -> HF, TOKEN; `apiKey` -> API, KEY; `--hf-token` -> HF, TOKEN."""
    return [w.upper() for part in re.split(r"[^A-Za-z0-9]+", name) for w in _WORD.findall(part)]


@functools.lru_cache(maxsize=4096)  # a 1,000-cell matrix asks of the same few names again and again
def is_sensitive_name(name: str) -> bool:
    """Whether an environment variable, engine argument, flag or map key
    with this name holds a secret (the rule in this module's docstring)."""
    found = words(name)
    return bool(found) and (found[-1] in _LAST_WORD or any(w in _ANY_WORD for w in found))


# -- what resolving found ----------------------------------------------------------

_known: set[str] = set()
_known_lock = threading.Lock()


def register(values: Iterable[str]) -> None:
    """Remember sensitive values for this process (what resolving a spec
    found), so text writers leave them out."""
    with _known_lock:
        _known.update(v for v in values if isinstance(v, str) and v)


def known() -> frozenset[str]:
    with _known_lock:
        return frozenset(_known)


def forget() -> None:
    """Drop every registered value (tests, a long-lived library user)."""
    with _known_lock:
        _known.clear()


def argv_secrets(argv: Sequence[str]) -> list[str]:
    """Values an argv passes to sensitive flags: `--api-key VALUE`,
    `--api-key=VALUE`; and URL passwords in any argument."""
    out: list[str] = []
    for i, arg in enumerate(argv):
        arg = str(arg)
        if arg.startswith("-"):
            name, eq, value = arg.partition("=")
            if is_sensitive_name(name):
                if eq and value:
                    out.append(value)
                elif not eq and i + 1 < len(argv) and not str(argv[i + 1]).startswith("--"):
                    out.append(str(argv[i + 1]))
        out.extend(url_secrets(arg))
    return [v for v in out if v]


def url_secrets(text: str) -> list[str]:
    """The passwords of URLs in `text`, and query values with sensitive names."""
    if "://" not in text and "=" not in text:
        return []
    out = [m["password"] for m in _URL_PASSWORD.finditer(text)]
    out += [m["value"] for m in _URL_QUERY.finditer(text) if is_sensitive_name(m["name"])]
    return out


def mapping_secrets(items: Iterable[tuple[str, Any]]) -> list[str]:
    """String values (or strings in list values) under sensitive names."""
    out: list[str] = []
    for key, value in items:
        if not is_sensitive_name(str(key)):
            continue
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, (list, tuple)):
            out.extend(v for v in value if isinstance(v, str))
    return [v for v in out if v]


# -- identities ---------------------------------------------------------------------


class KeyUnavailable(Exception):
    """The key that hashes sensitive values cannot be read or created."""


_keys: dict[str, bytes] = {}


def key_path() -> Path:
    if os.environ.get(KEY_ENV):
        return Path(os.environ[KEY_ENV])
    config = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return config / "specdsl" / "identity.key"


def key() -> bytes:
    """This user's key (created on first use: 32 random bytes, hex, 0600)."""
    path = key_path()
    cached = _keys.get(str(path))
    if cached is not None:
        return cached
    try:
        try:
            text = path.read_text().strip()
        except FileNotFoundError:
            private.make_dirs(path.parent)
            try:
                with private.open_new(path) as f:
                    f.write(_random.token_hex(32) + "\n")
            except FileExistsError:
                pass  # another specdsl made it meanwhile: read that one
            text = path.read_text().strip()
        value = bytes.fromhex(text)
    except (OSError, ValueError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise KeyUnavailable(
            f"cannot read or create the key that hashes sensitive values, {path} ({why}); "
            f"fix its permissions, or point {KEY_ENV} at a writable file"
        ) from None
    if len(value) < 16:
        raise KeyUnavailable(f"the key {path} is too short; delete it and specdsl makes a new one")
    _keys[str(path)] = value
    return value


def digest(value: str) -> str:
    """HMAC-SHA256 of a sensitive value under this user's key (32 hex digits)."""
    return hmac.new(key(), value.encode("utf-8"), hashlib.sha256).hexdigest()[:32]


def marker(value: str) -> str:
    """What an identity's content holds in place of a sensitive value."""
    return f"(sensitive:{digest(value)})"


def is_marked(value: Any) -> bool:
    """Whether a value (any JSON value) holds a sensitive marker."""
    if isinstance(value, str):
        return SENSITIVE in value or bool(_MARKER.search(value))
    if isinstance(value, dict):
        return any(is_marked(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(is_marked(v) for v in value)
    return False


def _substitute(text: str, values: Iterable[str], replace) -> str:
    for value in sorted(set(values), key=lambda v: (-len(v), v)):  # longest first: a value inside another
        if not value:
            continue
        if text == value:
            return replace(value)
        if len(value) >= MIN_INSIDE and value in text:
            text = text.replace(value, replace(value))
    return text


def hide(obj: Any, sensitive: Iterable[str]) -> Any:
    """`obj` (JSON-like: dicts, lists, tuples, strings) with every sensitive
    value replaced by its marker, for an identity's content."""
    values = frozenset(v for v in sensitive if v)
    if not values:
        return obj
    return _walk(obj, lambda s: _substitute(s, values, marker))


def _walk(obj: Any, fn) -> Any:
    if isinstance(obj, str):
        return fn(obj)
    if isinstance(obj, dict):
        return {k: _walk(v, fn) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_walk(v, fn) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_walk(v, fn) for v in obj)
    return obj


def shown(obj: Any) -> Any:
    """`obj` with markers shown as `(sensitive)` (what a plan displays)."""
    return _walk(obj, lambda s: _MARKER.sub(SENSITIVE, s) if "(sensitive:" in s else s)


# -- text ---------------------------------------------------------------------------


def redact(text: str, extra: Iterable[str] = ()) -> str:
    """Free text with every registered (and `extra`) sensitive value, and
    every URL password, written `(sensitive)`."""
    values = known() | frozenset(extra)
    if values:
        text = _substitute(text, values, lambda _v: SENSITIVE)
    # each pattern only where its literal part is (a plan of 1,000 cells is
    # 600 kB of `=` and no `://`: the scheme's scan alone cost 40 ms there)
    if "://" in text:
        text = _URL_PASSWORD.sub(lambda m: m["head"] + SENSITIVE, text)
    if "=" in text and ("?" in text or "&" in text):
        text = _URL_QUERY.sub(lambda m: m["head"] + (SENSITIVE if is_sensitive_name(m["name"]) else m["value"]), text)
    return text


def redact_argv(argv: Sequence[Any], env: Mapping[str, Any] | None = None, extra: Iterable[str] = ()) -> list[str]:
    """An argv as it may be written down: values of sensitive flags, of the
    sensitive variables of `env` (the process's environment) and registered
    values are `(sensitive)`."""
    argv = [str(a) for a in argv]
    values = set(extra) | set(argv_secrets(argv)) | set(mapping_secrets((env or {}).items()))
    out, hide_next = [], False
    for arg in argv:
        name, eq, value = arg.partition("=")
        if hide_next and not arg.startswith("--"):
            out.append(SENSITIVE)
        elif arg.startswith("-") and eq and value and is_sensitive_name(name):
            out.append(f"{name}={SENSITIVE}")
        else:
            out.append(redact(arg, values))
        hide_next = arg.startswith("-") and not eq and is_sensitive_name(arg)
    return out


def redact_tree(obj: Any, extra: Iterable[str] = ()) -> Any:
    """A record (dicts, lists, strings) as it may be written down: string
    values under sensitive keys, registered values, URL passwords and
    markers are `(sensitive)`; an `argv`-like list of flags is redacted as
    an argv."""
    values = frozenset(extra)

    def walk(value: Any, key: str | None) -> Any:
        if key is not None and is_sensitive_name(key) and isinstance(value, str) and value:
            return SENSITIVE
        if isinstance(value, str):
            return redact(shown(value), values)
        if isinstance(value, dict):
            return {k: walk(v, str(k)) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            items = list(value)
            if key is not None and is_sensitive_name(key):
                items = [SENSITIVE if isinstance(v, str) and v else v for v in items]
            elif items and all(isinstance(v, str) for v in items):
                items = redact_argv(items, extra=values)
            items = [walk(v, None) for v in items]
            return tuple(items) if isinstance(value, tuple) else items
        return value

    return walk(obj, None)


def redact_env(env: Mapping[str, Any]) -> dict[str, Any]:
    """An environment as it may be written down: sensitive names' values,
    registered values and URL passwords are `(sensitive)`."""
    return redact_tree(dict(env))


# -- source lines shown with a diagnostic -------------------------------------------

_STRING = r'"(?:[^"\\\n]|\\.)*"'
# NAME = "value" / "NAME" = value, on one line (attributes, map items, variables files)
_ASSIGNED = re.compile(r'(?P<name>"(?:[^"\\\n]|\\.)*"|[A-Za-z_][A-Za-z0-9_-]*)\s*=\s*(?P<value>' + _STRING + r'|[^\s,}\]#"]+)')
# "--api-key", "VALUE" / "--api-key=VALUE" in a command list
_FLAG_THEN = re.compile(r'"(?P<flag>-[^"\\\n=]*)"\s*,\s*(?P<value>' + _STRING + ")")
_FLAG_EQ = re.compile(r'"(?P<flag>-[^"\\\n=]*)=(?P<value>(?:[^"\\\n]|\\.)*)"')


def mask_source(text: str, extra: Iterable[str] = ()) -> str:
    """Text shown to a user with source lines in it (a diagnostic with its
    line and caret) with sensitive values overwritten by `*`, character for
    character, so the caret still points at the same column: values
    written after a sensitive name (`HF_TOKEN = "..."`, `--api-key", "..."`),
    URL passwords, registered and `extra` values."""
    spans: list[tuple[int, int]] = []
    for m in _ASSIGNED.finditer(text):
        if is_sensitive_name(m["name"].strip('"')):
            spans.append(_inner(m, "value"))
    for m in _FLAG_THEN.finditer(text):
        if is_sensitive_name(m["flag"]):
            spans.append(_inner(m, "value"))
    for m in _FLAG_EQ.finditer(text):
        if is_sensitive_name(m["flag"]):
            spans.append(m.span("value"))
    for m in _URL_PASSWORD.finditer(text):
        spans.append(m.span("password"))
    for value in known() | frozenset(extra):
        if not value:
            continue
        needle, skip = (value, 0) if len(value) >= MIN_INSIDE else (f'"{value}"', 1)  # a short one: as a whole string
        start = text.find(needle)
        while start >= 0:
            spans.append((start + skip, start + skip + len(value)))
            start = text.find(needle, start + len(needle))
    if not spans:
        return text
    chars = list(text)
    for start, end in spans:
        for i in range(start, end):
            if chars[i] != "\n":
                chars[i] = "*"
    return "".join(chars)


def _inner(m: re.Match, group: str) -> tuple[int, int]:
    start, end = m.span(group)
    if m[group].startswith('"') and end - start >= 2:
        return start + 1, end - 1
    return start, end
