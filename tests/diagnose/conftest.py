"""Fixtures of the diagnose tests."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def system_env_root(tmp_path_factory):
    """One environment root for the session: the `python = "system"` stack
    the bisect and GPU-facts specs share is built once, reused after."""
    return tmp_path_factory.mktemp("envs")
