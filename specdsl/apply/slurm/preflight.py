"""The preflight of a Slurm host, on this machine, before anything is
submitted: Slurm's commands are installed, slurmctld answers, the
partition exists and is up with a usable node, the account may use it,
a node of it offers the gres, and `sbatch --test-only` accepts the job.
Each problem names the setting and where the spec set it."""

from __future__ import annotations

import re

from specdsl.hosts.slurm import SlurmClient, SlurmError

COMMANDS = ("sbatch", "squeue", "scontrol", "sinfo", "scancel")
_COUNT_RE = re.compile(r"^(.*?)(?::(\d+))?$")


def _where(slurm, setting: str) -> str:
    span = slurm.span_of(setting)
    return f"{span.file}:{span.line}:{span.col}: " if span is not None and getattr(span, "file", None) else ""


def _gres_parts(text: str) -> tuple[str, str, int]:
    """("gpu", "h200" or "", count) of `gpu:h200:8`, `gpu:8`, `gpu`."""
    text = text.split("(")[0]
    parts = text.split(":")
    count = 1
    if parts and parts[-1].isdigit():
        count = int(parts.pop())
    name = parts[0] if parts else ""
    kind = parts[1] if len(parts) > 1 else ""
    return name, kind, count


def node_offers(node_gres: str, wanted: str) -> bool:
    """Whether a node's gres (sinfo %G: `gpu:8,nic:2` or `gpu:h200:8(S:0-1)`)
    covers `wanted` (`gpu:8`, `gpu:h200:4`, comma-separated)."""
    have = [_gres_parts(g) for g in node_gres.split(",") if g and g != "(null)"]
    for want in wanted.split(","):
        name, kind, count = _gres_parts(want)
        total = sum(c for n, k, c in have if n == name and (not kind or k == kind))
        if total < count:
            return False
    return True


def check(host, client: SlurmClient, script) -> list[str]:
    """Problems of host declaration `host` (with `slurm`), each one line
    naming the setting; [] when a job of it can be submitted. `script` is a
    batch script `sbatch --test-only` can read."""
    from specdsl.plan.slurm import resources
    slurm = host.slurm
    try:
        missing = [c for c in COMMANDS if client.which(c) is None]
    except SlurmError as exc:
        return [f"host {host.name}: {exc}"]
    if missing:
        verb = "is" if len(missing) == 1 else "are"
        if getattr(host, "ssh", None):
            return [f"{_where(slurm, 'partition')}host {host.name} runs on Slurm through {host.ssh} but "
                    f"{', '.join(missing)} {verb} not in the PATH of a non-interactive ssh session there: "
                    "check `ssh = ...` names the cluster's login node (where `sbatch` runs)"]
        return [f"{_where(slurm, 'partition')}host {host.name} runs on Slurm but {', '.join(missing)} "
                f"{verb} not in PATH here: install Slurm's client commands "
                "(Debian: slurm-client) on the machine that runs specdsl, or set `ssh` to a login node"]
    try:
        client.ping()
        partitions = client.partitions()
        problems: list[str] = []
        name = slurm.partition or next((p for p, f in partitions.items() if f.get("Default") == "YES"), None)
        if name is None:
            return [f"{_where(slurm, 'partition')}host {host.name}: the cluster has no default partition: set "
                    f"`slurm.partition` (partitions: {', '.join(sorted(partitions)) or 'none'})"]
        fields = partitions.get(name)
        if fields is None:
            from specdsl.diag import did_you_mean

            hint = did_you_mean(name, partitions) or f"partitions: {', '.join(sorted(partitions)) or 'none'}"
            return [f'{_where(slurm, "partition")}slurm.partition: no partition "{name}" on this cluster ({hint})']
        if fields.get("State", "UP") != "UP":
            problems.append(f'{_where(slurm, "partition")}slurm.partition: partition "{name}" is {fields.get("State")}')
        nodes = client.nodes(name)
        usable = [n for n in nodes if n.usable]
        if not usable:
            states = ", ".join(f"{n.name} {n.state}" for n in nodes) or "no nodes"
            problems.append(f'{_where(slurm, "partition")}slurm.partition: no node of partition "{name}" can run a job '
                            f"now ({states}): resume a node (`scontrol update nodename=NODE state=resume`) or pick another partition")
        if slurm.account:
            allowed = fields.get("AllowAccounts", "ALL")
            known = client.account_exists(slurm.account)
            if allowed not in ("ALL", "") and slurm.account not in allowed.split(","):
                problems.append(f'{_where(slurm, "account")}slurm.account: account "{slurm.account}" may not use partition '
                                f'"{name}" (it allows {allowed})')
            elif known is False:
                problems.append(f'{_where(slurm, "account")}slurm.account: no account "{slurm.account}" in the cluster\'s '
                                "accounting database (`sacctmgr show account` lists them)")
        if slurm.gres and nodes and not any(node_offers(n.gres, slurm.gres) for n in nodes):
            offered = ", ".join(sorted({n.gres for n in nodes})) or "none"
            problems.append(f'{_where(slurm, "gres")}slurm.gres: no node of partition "{name}" has "{slurm.gres}" '
                            f"(its nodes offer {offered})")
        if problems:
            return problems
        refused = client.test_only(resources(slurm) + (["--partition=" + name] if not slurm.partition else []), script)
        if refused:
            return [f"{_where(slurm, 'partition')}host {host.name}: Slurm would refuse the job ({' '.join(resources(slurm))}): "
                    f"{refused}"]
    except SlurmError as exc:
        return [f"host {host.name}: {exc}"]
    return []


def check_python(host, client: SlurmClient, python: str, package) -> list[str]:
    """Problems of the Python that runs the job (`slurm.python`): it must
    import this specdsl's job runner from `package` (the PYTHONPATH the
    batch script sets) with its dependencies, and be this version."""
    import specdsl
    from specdsl.apply.slurm.folder import CHECK_OK

    slurm = host.slurm
    where = _where(slurm, "python") if slurm.python else _where(slurm, "partition")
    try:
        done = client.run_program(["env", f"PYTHONPATH={package}", python, "-m", "specdsl.apply.slurm.job", "--check"],
                                  timeout=120)
    except SlurmError as exc:
        return [f"{where}slurm.python: {exc}"]
    words = done.stdout.split()
    if done.returncode == 0 and words[:1] == [CHECK_OK] and words[1:2] == [specdsl.__version__]:
        return []
    said = [line for line in (done.stderr or done.stdout).strip().splitlines() if line.strip()]
    why = said[-1].strip() if said else f"exit {done.returncode}"
    return [f"{where}slurm.python: {python} {client.where} cannot run specdsl {specdsl.__version__}'s job ({why}): "
            "set `slurm.python` to a Python 3.11+ on the cluster with specdsl's dependencies "
            "(`pip install specdsl` in a virtual environment there installs them)"]
