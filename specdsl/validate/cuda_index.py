"""A stack's declared `cuda` against the CUDA build its package index serves.

PyTorch's wheel indexes name their CUDA build in the URL
(`https://download.pytorch.org/whl/cu128`, `.../nightly/cu130`, `.../cpu`).
A stack that declares `cuda = "13.0"` but installs from a cu128 index (one it
inherited with `extends`, say) gets torch built for CUDA 12.8 without a
word: nvcc is checked, torch is not. That is an error at the stack, naming
the index and the two fixes. (What torch was built for is recorded at apply
as `effective.torch_cuda`, which an assertion can hold it to.)
"""

from __future__ import annotations

import re

from specdsl.diag import Diagnostic

_CU = re.compile(r"/(cu(\d+)|cpu|rocm[\d.]+)(?=/|$)")


def index_cuda(url: str) -> str | None:
    """The CUDA release a wheel index URL names ("12.8" for .../cu128, "cpu", "rocm6.2"), or None."""
    m = None
    for m in _CU.finditer(url.rstrip("/")):
        pass
    if m is None:
        return None
    if m.group(2):
        digits = m.group(2)
        return f"{digits[:-1]}.{digits[-1]}"
    return m.group(1)


def check_cuda_index(stack, span, diags: list[Diagnostic]) -> None:
    """An error at `span` when `stack.cuda` and an index's CUDA build disagree."""
    if not stack.cuda:
        return
    want = stack.cuda.strip()
    for url in stack.index:
        got = index_cuda(url)
        if got is None:
            continue
        major_minor = ".".join(want.split(".")[:2])
        if got == major_minor:
            continue
        tag = "cu" + major_minor.replace(".", "")
        what = f"torch built for CUDA {got}" if got[0].isdigit() else f"{got} builds of torch"
        diags.append(Diagnostic.error(
            f"Stack `{stack.name}` declares cuda = \"{want}\" but its index serves {what}",
            span,
            f"`{url}` installs {what}, not for CUDA {want}: use the {tag} index "
            f"(`{_CU.sub('/' + tag, url.rstrip('/'))}`), or "
            + (f"declare cuda = \"{got}\"" if got[0].isdigit() else f"leave out `cuda` for a {got} stack"),
        ))
