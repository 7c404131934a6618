"""What is inside an environment, asked of its own interpreter.

The probe runs `python specdsl_probe.py OUT.json [--torch]` in the environment and
reads the JSON it writes (a file, not stdout: imports may print). Script and
output live in a temporary folder on the host. Only the standard library is
used inside the environment.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from specdsl.hosts import Host, HostError

PROBE_TIMEOUT_S = 300.0

PROBE = r"""
import json, os, re, sys, platform
from importlib import metadata
out = {"python_version": platform.python_version(), "executable": sys.executable, "packages": {},
       "cuda_home": os.environ.get("CUDA_HOME")}
for dist in metadata.distributions():
    name = dist.metadata["Name"]
    if name:
        key = re.sub(r"[-_.]+", "-", name).lower()
        out["packages"].setdefault(key, dist.version)
if "--torch" in sys.argv and "torch" in out["packages"]:
    try:
        import torch
        info = {"version": torch.__version__, "cuda": torch.version.cuda, "nccl": None}
        try:
            if torch.version.cuda is not None:
                v = torch.cuda.nccl.version()
                info["nccl"] = ".".join(map(str, v)) if isinstance(v, tuple) else str(v)
        except Exception as exc:
            info["nccl_error"] = repr(exc)
        out["torch"] = info
    except Exception as exc:
        import traceback
        out["torch_error"] = traceback.format_exc()
with open(sys.argv[1], "w") as f:
    json.dump(out, f)
"""


class ProbeFailed(Exception):
    def __init__(self, argv: list[str], tail: str):
        self.argv = argv
        self.tail = tail
        super().__init__("probe failed")


def probe(host: Host, python: str, log_path: Path, *, torch: bool, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run the probe on `host` with `python`; its output goes to `log_path`.

    Returns {"python_version", "executable", "packages", "cuda_home" (the
    CUDA_HOME the environment's commands see, or None), ["torch" |
    "torch_error"]}. Raises `ProbeFailed` when the interpreter does not run
    (and `hosts.Cancelled` passes through)."""
    with host.temp_dir(prefix="specdsl-probe-") as tmp:
        out = tmp / "probe.json"
        script = tmp / "specdsl_probe.py"
        host.write_text(script, PROBE)
        argv = [python, str(script), str(out)] + (["--torch"] if torch else [])
        try:
            result = host.run(argv, log_path=log_path, timeout=PROBE_TIMEOUT_S, env=env)
        except HostError as exc:  # the interpreter is gone
            raise ProbeFailed(argv, str(exc)) from exc
        if not result.ok:
            raise ProbeFailed(argv, result.tail)
        try:
            return json.loads(host.read_text(out))
        except (FileNotFoundError, json.JSONDecodeError):
            raise ProbeFailed(argv, result.tail) from None
