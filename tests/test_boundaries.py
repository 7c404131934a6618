"""Everything that touches a host goes through its `Host`: no module outside
`specdsl/hosts/` starts a process, signals one or creates a host, and the
modules that act on a host's files (servers, provision) never open a path
themselves. A small AST check: it names the module, the line and what it
found, so the failure says where to look."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "specdsl"

# anywhere outside hosts/: processes and hosts
PROCESS_MODULES = {"subprocess", "multiprocessing", "pty", "fcntl"}
PROCESS_CALLS = {("os", "kill"), ("os", "killpg"), ("os", "system"), ("os", "popen"), ("os", "fork"), ("os", "execv"),
                 ("os", "execvp"), ("os", "spawnv"), ("os", "posix_spawn")}
HOST_CLASSES = {"LocalHost"}
# in the packages that act on a host: its files only through the Host
HOST_SIDE = ("servers", "provision")
FILE_MODULES = {"shutil", "tempfile"}
FILE_CALLS = {"open", "read_text", "write_text", "read_bytes", "write_bytes", "mkdir", "unlink", "rmtree", "exists",
              "is_file", "is_dir", "iterdir", "glob", "stat"}
# Files of this machine that are not a host's: the state folder and its lock
# (state lives with the controller, never on a host).
CONTROLLER_SIDE = {"state/lock.py"}


def _problems(path: Path, root: Path = PACKAGE) -> list[str]:
    """What `path`, a module of the package tree at `root`, does that it must not."""
    rel = path.relative_to(root.parent)
    package = path.relative_to(root).parts[0]
    if package == "hosts" or str(path.relative_to(root)) in CONTROLLER_SIDE:
        return []
    host_side = package in HOST_SIDE
    tree = ast.parse(path.read_text(), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for name in names:
                top = name.split(".")[0]
                if top in PROCESS_MODULES or (host_side and top in FILE_MODULES):
                    found.append(f"{rel}:{node.lineno}: imports {name}")
            if isinstance(node, ast.ImportFrom) and node.module == "os":
                for alias in node.names:
                    if ("os", alias.name) in PROCESS_CALLS:
                        found.append(f"{rel}:{node.lineno}: imports os.{alias.name}")
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and (func.value.id, func.attr) in PROCESS_CALLS:
                found.append(f"{rel}:{node.lineno}: calls {func.value.id}.{func.attr}")
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if name in HOST_CLASSES:
                found.append(f"{rel}:{node.lineno}: creates a {name} (hosts come from the HostRegistry)")
            if host_side and name in FILE_CALLS and not _is_host_call(func):
                found.append(f"{rel}:{node.lineno}: calls {name}() on a path itself (use the Host)")
    return found


def _is_host_call(func) -> bool:
    """`host.read_text(...)`, `self.host.exists(...)`: a call on a Host."""
    if not isinstance(func, ast.Attribute):
        return False
    owner = func.value
    if isinstance(owner, ast.Attribute):
        owner = ast.Name(owner.attr)
    return isinstance(owner, ast.Name) and owner.id in ("host", "self_host")


def test_no_module_outside_hosts_starts_a_process_or_touches_a_host_file():
    found = [p for path in sorted(PACKAGE.rglob("*.py")) for p in _problems(path)]
    assert found == [], "\n".join(found)


def test_the_check_sees_what_it_forbids(tmp_path):
    # the checker itself: a module that does each forbidden thing is reported
    # (in a package tree of its own: nothing is written into specdsl/)
    root = tmp_path / "specdsl"
    (root / "servers").mkdir(parents=True)
    bad = root / "servers" / "_boundary_probe_.py"
    bad.write_text("import subprocess\nimport os\nos.killpg(1, 9)\nLocalHost()\nopen('x')\nhost.read_text('y')\n")
    found = _problems(bad, root)
    assert all(f.startswith("specdsl/servers/_boundary_probe_.py:") for f in found), found
    assert [f.split(": ", 1)[1] for f in found] == [
        "imports subprocess", "calls os.killpg", "creates a LocalHost (hosts come from the HostRegistry)",
        "calls open() on a path itself (use the Host)",
    ]
