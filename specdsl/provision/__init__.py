"""provision: one isolated Python environment per stack identity, on a host.

`provision(stack, host, identity, log_path)` builds (or reuses, when it
still verifies) a venv under `host.env_root / identity` with uv (default) or
pip, installs the stack's packages from its indexes, its find-links and the
host's pip-configured sources, and returns an `EnvInfo` of what is in it
(freeze, Python, torch/CUDA/NCCL, nvcc). `find(host, identity)` is the
environment the host already holds under that identity (verified), or None;
`verify(record, host)` checks a record against the host. Every command,
file and lock goes through the `Host`. Failures raise `ProvisionError` with
the exact command and the installer's last lines.

Imports: hosts and model.config only; never plan, apply or cli.
"""

from specdsl.provision.build import find, provision, verify
from specdsl.provision.envinfo import EnvInfo, ProvisionError

__all__ = ["EnvInfo", "ProvisionError", "find", "provision", "verify"]
