"""provision: one isolated Python environment per stack identity.

`provision(stack, root, identity, log_path)` builds (or reuses, when it
still verifies) a venv under `root/identity` with uv (default) or pip,
installs the stack's packages from its indexes, its find-links and this
machine's pip-configured sources, and returns an `EnvInfo` of what is in
it (freeze, Python, torch/CUDA/NCCL, nvcc). Failures raise `ProvisionError`
with the exact command and the installer's last lines.

Imports: hosts and model.config only; never plan, engine or cli.
"""

from specdsl.provision.build import provision, verify
from specdsl.provision.envinfo import EnvInfo, ProvisionError

__all__ = ["EnvInfo", "ProvisionError", "provision", "verify"]
