"""Free text through `secrets.redact`: a URL's password and a query value
under a secret name are written `(sensitive)` wherever they stand in the
text, also in text that holds many `=` and no URL (each pattern runs only
where its literal part is: a plan's text is the case it was made for)."""

from __future__ import annotations

import pytest

from specdsl import secrets


@pytest.mark.parametrize("text, hidden, kept", [
    ("pull https://user:hunter2@example.org/x", "hunter2", "https://user:"),
    ("c=1 m=0.9 then ssh://u:p4ss@host a=b", "p4ss", "c=1 m=0.9"),
    ("GET /v1?model=m&api_key=sk-123", "sk-123", "model=m"),
    ("GET /v1?token=abc", "abc", "?token="),
])
def test_url_secrets_are_hidden(text, hidden, kept):
    out = secrets.redact(text)
    assert hidden not in out
    assert secrets.SENSITIVE in out
    assert kept in out


@pytest.mark.parametrize("text", [
    "grid[backend=fa3,concurrency=16] m=0.85 " * 200,  # a plan's lines: `=` everywhere, no URL, no query
    "a?b=c&d=e",  # a query of names that hold no secret
    "see http://example.org/path?page=2",
])
def test_text_without_secrets_is_unchanged(text):
    assert secrets.redact(text) == text
