"""A server that is already running (`server "prod" { url = "..." }`): the
pure part, what the language and the plan know of it without asking it.

`url_problem` says what is wrong with a `url` value; `shown` is the URL
with any credentials taken out (what plans, state and logs write);
`identity_text` is how a reported identity (what the server said it is:
engine, version, model, max_model_len) reads in a plan line. Asking the
server is `specdsl.servers.endpoint`'s."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

# what a recorded result of a server already running is recorded against,
# beside its URL: the fields of the identity it reports, in plan order
IDENTITY_FIELDS = ("engine", "version", "model", "max_model_len")
# where a benchmark's recorded run keeps that identity (its `effective`)
EFFECTIVE_PREFIX = "endpoint."
# and, in a comparison of two servers already running, its baseline's
BASELINE_PREFIX = "endpoint_baseline."


def url_problem(url: str) -> str:
    """"" when `url` is an http(s) base URL with a host, else what is wrong."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        return str(exc)
    if parts.scheme not in ("http", "https"):
        return f"it starts with `{parts.scheme}://`, not http:// or https://" if parts.scheme else "no http:// or https://"
    if not parts.hostname:
        return "no host in it"
    if port == 0:
        return "port 0"
    if parts.query or parts.fragment:
        return "a query or fragment (`?`, `#`) in it"
    if parts.path.rstrip("/").endswith("/v1"):
        return "it ends with `/v1`"
    return ""


def shown(url: str) -> str:
    """`url` without the user and password it may carry (credentials are
    sent, never written)."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = host + (f":{parts.port}" if parts.port is not None else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def identity_text(identity: dict) -> str:
    """`vllm 0.11.0, model Qwen/Qwen3-8B, max_model_len 4096`."""
    bits = []
    engine, version = identity.get("engine"), identity.get("version")
    if engine or version:
        bits.append(" ".join(str(x) for x in (engine or "engine unknown", version or "version unknown")))
    for key in IDENTITY_FIELDS[2:]:
        if identity.get(key) is not None:
            bits.append(f"{key} {identity[key]}")
    return ", ".join(bits) or "nothing"


def recorded_identity(effective: dict, prefix: str = EFFECTIVE_PREFIX) -> dict:
    """The identity a benchmark's run recorded in its `effective` (a dict,
    or the pairs a RunRecord keeps), under `prefix`."""
    effective = dict(effective or ())
    return {k: effective.get(prefix + k) for k in IDENTITY_FIELDS if prefix + k in effective}


def identity_changes(recorded: dict, now: dict) -> list[str]:
    """`version: "0.11.0" -> "0.12.0"` for each field that differs."""
    import json

    return [f"{k}: {json.dumps(recorded.get(k))} -> {json.dumps(now.get(k))}"
            for k in IDENTITY_FIELDS if recorded.get(k) != now.get(k)]
