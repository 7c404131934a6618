"""What the stack under test was built as, for `effective.*`: the CUDA
release torch was built for (`effective.torch_cuda`, "12.8"; absent for a
CPU build or without torch), torch's version (`effective.torch_version`) and
the toolkit nvcc reported when the stack declares `cuda`
(`effective.nvcc`). Read from the provisioned environment (state's record
of it, or this walk's fresh one), so an assertion can hold a stack to the
CUDA build it claims: `effective.torch_cuda == "13.0"`."""

from __future__ import annotations


def stack_facts(walk, state, step, deps=None) -> dict[str, str]:
    """The facts above for the benchmark `step`: the environment of the
    provision step it depends on (through its server's launch); `deps`
    instead of the step's own (a paired benchmark's candidate: its last)."""
    todo, seen = list(step.deps if deps is None else deps), set()
    while todo:
        dep = todo.pop(0)
        prov = walk.graph.steps.get(dep)
        if prov is None or dep in seen:
            continue
        seen.add(dep)
        if prov.kind != "provision":
            todo.extend(prov.deps)
            continue
        info = walk.envs.get(dep)
        if info is not None:
            torch, nvcc = dict(info.torch or {}), info.nvcc or ""
        else:
            env = state.environment(prov.identity) if state is not None else None
            if env is None:
                return {}
            torch, nvcc = dict(env.torch), env.nvcc
        out = {}
        if torch.get("cuda"):
            out["torch_cuda"] = str(torch["cuda"])
        if torch.get("version"):
            out["torch_version"] = str(torch["version"])
        if nvcc:
            out["nvcc"] = nvcc
        return out
    return {}
