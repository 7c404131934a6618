"""A server that is already running (`url`): asked what it is and how it is
configured, from what the engines serve over HTTP (nothing is launched,
no log is read).

- SGLang: `/server_info` (`/get_server_info` on older releases), every
  resolved setting, `version` among them;
- vLLM: `/version`, `/v1/models` (`root`, `max_model_len`), and `/metrics`
  (`vllm:cache_config_info`'s labels: block size, GPU memory utilization,
  prefix caching ...);
- any OpenAI-compatible server: `/v1/models`.

`probe` returns a `Report`: the identity (engine, version, model,
max_model_len: what a recorded result is recorded against) and the
effective configuration (`effective.X`). Credentials of the URL and the
`api_key` are sent, never returned or said: an error names the URL as
`model.endpoint.shown` writes it.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

import attrs
import requests

from specdsl.hosts.http import session
from specdsl.model.endpoint import EFFECTIVE_PREFIX, IDENTITY_FIELDS, shown
from specdsl.servers.sglang import flatten

PROBE_TIMEOUT_S = 5.0
_INFO = re.compile(r'^(vllm:cache_config_info|vllm:model_config_info)\{(?P<labels>[^}]*)\}', re.M)
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


class EndpointError(Exception):
    """The server at the URL did not answer as a server of the OpenAI API."""


@attrs.frozen
class Report:
    identity: dict
    effective: dict

    def recorded(self) -> dict:
        """What a benchmark's run records of it: the effective configuration
        with the identity under `endpoint.*` (model.endpoint.recorded_identity)."""
        return self.effective | {EFFECTIVE_PREFIX + k: v for k, v in self.identity.items()}


def split_credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    """(URL without user and password, (user, password) or None)."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, None
    return shown(url), (parts.username or "", parts.password or "")


def headers_for(server) -> dict[str, str]:
    """The headers every request to `server` carries: its API key."""
    return {"Authorization": f"Bearer {server.api_key}"} if server.api_key else {}


def probe(server, timeout: float = PROBE_TIMEOUT_S) -> Report:
    """Ask the server at `server.url` what it is. Raises EndpointError
    (naming the URL without credentials) when it does not answer
    `/v1/models`, refuses the key, or serves no model."""
    base, auth = split_credentials(server.url)
    where = shown(server.url)
    http = session(timeout)
    http.headers.update(headers_for(server))
    if auth is not None:
        http.auth = auth

    def get(path: str):
        try:
            resp = http.get(base + path)
        except requests.RequestException as exc:
            return None, _transport(exc)
        return resp, ""

    try:
        resp, why = get("/v1/models")
        if resp is None:
            raise EndpointError(f"{where} does not answer: {why}")
        if resp.status_code in (401, 403):
            raise EndpointError(f"{where} refused the request ({resp.status_code}): check `api_key` or the URL's credentials")
        if resp.status_code != 200:
            raise EndpointError(f"{where} answered {resp.status_code} at /v1/models, not a list of models: is it an "
                                "OpenAI-compatible server?")
        try:
            models = [m for m in resp.json().get("data", ()) if isinstance(m, dict)]
        except (ValueError, AttributeError):
            raise EndpointError(f"{where} answered no JSON list of models at /v1/models") from None
        if not models:
            raise EndpointError(f"{where} serves no model (/v1/models is empty)")
        served = next((m for m in models if m.get("id") == server.model), None)
        if served is None:
            ids = ", ".join(str(m.get("id")) for m in models[:5])
            raise EndpointError(f"{where} does not serve model `{server.model}` (it serves {ids}): set `model` to one of them")
        effective: dict[str, Any] = {}
        engine, version = server.engine or None, None
        info = _json(get("/server_info")[0]) or _json(get("/get_server_info")[0])
        if isinstance(info, dict) and ("model_path" in info or "tp_size" in info):
            engine = engine or "sglang"
            version = info.get("version")
            effective |= {k: v for k, v in flatten(info).items() if _plain(v)}
        else:
            ver = _json(get("/version")[0])
            if isinstance(ver, dict) and isinstance(ver.get("version"), str):
                version = ver["version"]
            metrics_resp = get("/metrics")[0]
            text = metrics_resp.text if metrics_resp is not None and metrics_resp.status_code == 200 else ""
            if "vllm:" in text:
                engine = engine or "vllm"
                for m in _INFO.finditer(text):
                    for key, value in _LABEL.findall(m["labels"]):
                        effective[key] = _number(value)
            if engine is None and version is not None:
                engine = "vllm"  # /version is vLLM's
        if served.get("max_model_len") is not None:
            effective["max_model_len"] = served["max_model_len"]
        if served.get("root"):
            effective["model_root"] = served["root"]
        effective["served_model"] = served.get("id")
        identity = {"engine": engine, "version": version, "model": served.get("root") or served.get("id"),
                    "max_model_len": served.get("max_model_len") or effective.get("context_length")}
        return Report({k: identity[k] for k in IDENTITY_FIELDS}, effective)
    finally:
        http.close()


def _transport(exc: requests.RequestException) -> str:
    """A transport failure in words, without the URL (it may hold credentials)."""
    if isinstance(exc, requests.Timeout):
        return "timed out"
    if isinstance(exc, requests.ConnectionError):
        text = str(exc)
        for needle, said in (("Connection refused", "connection refused"), ("Name or service not known", "unknown host"),
                             ("nodename nor servname", "unknown host"), ("No route to host", "no route to host")):
            if needle in text:
                return said
        return "the connection failed"
    return type(exc).__name__


def _json(resp) -> Any:
    if resp is None or resp.status_code != 200:
        return None
    try:
        return resp.json()
    except ValueError:
        return None


def _plain(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool)) or value is None


def _number(text: str) -> Any:
    """A Prometheus label's value: a number or a bool where it reads as one."""
    if text in ("True", "False"):
        return text == "True"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return None if text == "None" else text


def base_url(server) -> str:
    """The URL requests go to, without credentials (`authorization` sends them)."""
    return shown(server.url).rstrip("/")


def authorization(server) -> str | None:
    """The `Authorization` header's value for `server`: `Bearer KEY`, or
    basic auth of its URL's credentials; None: neither."""
    import base64

    if server.api_key:
        return f"Bearer {server.api_key}"
    _, auth = split_credentials(server.url)
    if auth is None:
        return None
    return "Basic " + base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
