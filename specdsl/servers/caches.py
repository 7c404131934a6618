"""The JIT caches a server's launches share: one persistent folder per host
and stack (beside the stack's environment: `<env_root>/<identity>/jit-cache`),
so that only the first launch of a stack on a host compiles its kernels
and later launches of one apply, and later applies, read them back.

Each engine's compilers and autotuners are pointed at a subfolder of it by
their environment variables (`CACHE_VARS`), unless the stack or the
server sets that variable itself. A launch is *cold* when the folder holds
no mark of an earlier launch that got ready (`MARK`); the launch records
it (the plan says which launch will be cold: specdsl.plan.cost).
"""

from __future__ import annotations

from pathlib import Path

from specdsl.hosts import HostError

# variable -> subfolder of the stack's cache folder
CACHE_VARS = {
    "TRITON_CACHE_DIR": "triton",  # Triton's compiled kernels (vLLM's and SGLang's Triton attention)
    "TORCHINDUCTOR_CACHE_DIR": "inductor",  # torch.compile's inductor artifacts
    "VLLM_CACHE_ROOT": "vllm",  # vLLM's torch.compile cache and FlashInfer autotune configs
    "FLASHINFER_WORKSPACE_BASE": "flashinfer",  # FlashInfer's JIT-built modules (under .cache/flashinfer)
    "TVM_FFI_CACHE_DIR": "tvm-ffi",  # tvm-ffi's built modules (FlashInfer's and sgl-kernel's JIT)
    "SGLANG_DG_CACHE_DIR": "deep_gemm",  # SGLang's DeepGEMM kernels
}
MARK = ".launched"  # written when a launch got ready: the cache has been filled once


def cache_folder(env) -> Path | None:
    """The JIT cache folder of environment `env` (an EnvInfo) on its host:
    beside its venv in the folder of its identity; None for an environment
    not laid out so (not provisioned by specdsl: its caches are its own)."""
    venv = Path(env.path)
    if venv.name != "venv" or venv.parent.name != env.identity:
        return None
    return venv.parent / "jit-cache"


def cache_key(host, env) -> str:
    """`HOST ENV-IDENTITY`: what a plan matches a recorded cache by ('' without a folder)."""
    return f"{getattr(host, 'key', 'local')} {env.identity}" if cache_folder(env) is not None else ""


def cache_env(env, given) -> dict[str, str]:
    """The variables that point a server's JIT caches at `env`'s folder,
    leaving out those in `given` (the stack's and the server's own)."""
    root = cache_folder(env)
    if root is None:
        return {}
    return {var: str(root / sub) for var, sub in CACHE_VARS.items() if var not in given}


def prepare(host, env) -> bool | None:
    """Make the cache folder on `host`; whether a launch from it is cold
    (no earlier launch got ready with it); None without a folder. A folder
    that cannot be made is left to the server (cold)."""
    root = cache_folder(env)
    if root is None:
        return None
    try:
        cold = not host.exists(root / MARK)
        host.mkdir(root)
    except (HostError, OSError):
        return True
    return cold


def mark(host, env) -> None:
    """Mark the folder as filled once (a launch got ready with it)."""
    root = cache_folder(env)
    if root is None:
        return
    try:
        host.write_text(root / MARK, "")
    except (HostError, OSError):
        pass
