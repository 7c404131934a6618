"""The one place HTTP sessions are made: every request gets a timeout.

`session()` returns a `requests.Session` whose requests time out after
`timeout` seconds unless the call passes its own `timeout`. Retries are the
caller's business (readiness polls loop on their own deadline).
"""

from __future__ import annotations

import requests

DEFAULT_TIMEOUT_S = 10.0


class TimeoutSession(requests.Session):
    """A `requests.Session` with a default per-request timeout."""

    def __init__(self, timeout: float = DEFAULT_TIMEOUT_S) -> None:
        super().__init__()
        self.default_timeout = timeout
        # Talk to local servers directly even when a proxy is configured.
        self.trust_env = False

    def request(self, method, url, **kwargs):  # type: ignore[override]
        kwargs.setdefault("timeout", self.default_timeout)
        if kwargs["timeout"] is None:
            raise ValueError("specdsl never makes an HTTP request without a timeout")
        return super().request(method, url, **kwargs)


def session(timeout: float = DEFAULT_TIMEOUT_S) -> TimeoutSession:
    """A new session; `timeout` is the default for each request (seconds)."""
    return TimeoutSession(timeout)
