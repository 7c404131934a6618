"""The preflight of a Slurm host, on this machine, before anything is
submitted: Slurm's commands are installed, slurmctld answers, the
partition exists and is up with a usable node, the account may use it,
a node of it offers the gres, and `sbatch --test-only` accepts the job.
Each problem names the setting and where the spec set it.

`specdsl plan` asks the same, read-only (`for_plan`: nothing written on
the submit host, nothing submitted), and says each problem at the host
block (`operations.plan.slurm_problems`)."""

from __future__ import annotations

import re

import attrs

from specdsl.hosts.slurm import SlurmClient, SlurmError

COMMANDS = ("sbatch", "squeue", "scontrol", "sinfo", "scancel")
# what `sbatch --test-only` reads in place of a script file, when there is
# none (plan's check writes nothing on the submit host): a one-line job
WRAP = "--wrap=true"
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


@attrs.frozen
class Problem:
    """One thing the cluster (or the submit host) would refuse: `setting`,
    the `slurm` setting that is the cause (None: the host as a whole),
    `text` what to say, `at` the setting whose place apply's line starts
    with (the cause's, else the partition's; None: no place), and
    `unreachable` when the cluster did not answer at all (slurmctld down,
    the login node gone), which plan says as it says a host it cannot
    reach."""

    setting: str | None
    text: str
    unreachable: bool = False
    at: str | None = attrs.field()

    @at.default
    def _at(self) -> str | None:
        return self.setting

    def line(self, slurm) -> str:
        """Apply's one line: the `file:line:col: ` of `at` first, when there is one."""
        return (_where(slurm, self.at) if self.at else "") + self.text


def check(host, client: SlurmClient, script) -> list[str]:
    """Problems of host declaration `host` (with `slurm`), each one line
    naming the setting; [] when a job of it can be submitted. `script` is a
    batch script `sbatch --test-only` can read."""
    return [p.line(host.slurm) for p in problems(host, client, script)]


def problems(host, client: SlurmClient, script=None) -> list[Problem]:
    """The `Problem`s of host declaration `host` (with `slurm`); [] when a
    job of it can be submitted. Read-only: Slurm is asked, never given a
    job (`sbatch --test-only` of `script`, or of `--wrap=true` when None:
    plan writes nothing on the submit host)."""
    from specdsl.plan.slurm import resources
    slurm = host.slurm
    try:
        missing = [c for c in COMMANDS if client.which(c) is None]
    except SlurmError as exc:
        return [Problem(None, f"host {host.name}: {exc}", unreachable=True)]
    if missing:
        verb = "is" if len(missing) == 1 else "are"
        if getattr(host, "ssh", None):
            return [Problem(None, f"host {host.name} runs on Slurm through {host.ssh} but "
                            f"{', '.join(missing)} {verb} not in the PATH of a non-interactive ssh session there: "
                            "check `ssh = ...` names the cluster's login node (where `sbatch` runs)", at="partition")]
        return [Problem(None, f"host {host.name} runs on Slurm but {', '.join(missing)} "
                        f"{verb} not in PATH here: install Slurm's client commands "
                        "(Debian: slurm-client) on the machine that runs specdsl, or set `ssh` to a login node", at="partition")]
    try:
        client.ping()
        partitions = client.partitions()
    except SlurmError as exc:
        return [Problem(None, f"host {host.name}: {exc}", unreachable=True)]
    try:
        return _cluster_problems(host, client, partitions, script, resources)
    except SlurmError as exc:
        return [Problem(None, f"host {host.name}: {exc}")]


def _cluster_problems(host, client: SlurmClient, partitions: dict, script, resources) -> list[Problem]:
    """What the cluster that answered says of the host's settings."""
    slurm = host.slurm
    found: list[Problem] = []
    name = slurm.partition or next((p for p, f in partitions.items() if f.get("Default") == "YES"), None)
    if name is None:
        return [Problem("partition", f"host {host.name}: the cluster has no default partition: set "
                        f"`slurm.partition` (partitions: {', '.join(sorted(partitions)) or 'none'})")]
    fields = partitions.get(name)
    if fields is None:
        from specdsl.diag import did_you_mean

        hint = did_you_mean(name, partitions) or f"partitions: {', '.join(sorted(partitions)) or 'none'}"
        return [Problem("partition", f'slurm.partition: no partition "{name}" on this cluster ({hint})')]
    if fields.get("State", "UP") != "UP":
        found.append(Problem("partition", f'slurm.partition: partition "{name}" is {fields.get("State")}'))
    nodes = client.nodes(name)
    usable = [n for n in nodes if n.usable]
    if not usable:
        states = ", ".join(f"{n.name} {n.state}" for n in nodes) or "no nodes"
        found.append(Problem("partition", f'slurm.partition: no node of partition "{name}" can run a job '
                             f"now ({states}): resume a node (`scontrol update nodename=NODE state=resume`) or pick another partition"))
    if slurm.account:
        allowed = fields.get("AllowAccounts", "ALL")
        known = client.account_exists(slurm.account)
        if allowed not in ("ALL", "") and slurm.account not in allowed.split(","):
            found.append(Problem("account", f'slurm.account: account "{slurm.account}" may not use partition '
                                 f'"{name}" (it allows {allowed})'))
        elif known is False:
            found.append(Problem("account", f'slurm.account: no account "{slurm.account}" in the cluster\'s '
                                 "accounting database (`sacctmgr show account` lists them)"))
    if slurm.gres and nodes and not any(node_offers(n.gres, slurm.gres) for n in nodes):
        offered = ", ".join(sorted({n.gres for n in nodes})) or "none"
        found.append(Problem("gres", f'slurm.gres: no node of partition "{name}" has "{slurm.gres}" '
                             f"(its nodes offer {offered})"))
    if found:
        return found
    options = resources(slurm) + (["--partition=" + name] if not slurm.partition else [])
    refused = client.test_only(options, WRAP if script is None else script)
    if refused:
        return [Problem(None, f"host {host.name}: Slurm would refuse the job ({' '.join(resources(slurm))}): "
                        f"{refused}", at="partition")]
    return []


def check_python(host, client: SlurmClient, python: str, package) -> list[str]:
    """`python_problems` as apply's lines."""
    return [p.line(host.slurm) for p in python_problems(host, client, python, package)]


def python_problems(host, client: SlurmClient, python: str, package) -> list[Problem]:
    """Problems of the Python that runs the job (`slurm.python`): it must
    import this specdsl's job runner from `package` (the PYTHONPATH the
    batch script sets) with its dependencies, and be this version."""
    import specdsl
    from specdsl.apply.slurm.folder import CHECK_OK

    slurm = host.slurm
    setting, at = ("python", "python") if slurm.python else (None, "partition")
    try:
        done = client.run_program(["env", f"PYTHONPATH={package}", python, "-m", "specdsl.apply.slurm.job", "--check"],
                                  timeout=120)
    except SlurmError as exc:
        return [Problem(setting, f"slurm.python: {exc}", at=at)]
    words = done.stdout.split()
    if done.returncode == 0 and words[:1] == [CHECK_OK] and words[1:2] == [specdsl.__version__]:
        return []
    said = [line for line in (done.stderr or done.stdout).strip().splitlines() if line.strip()]
    why = said[-1].strip() if said else f"exit {done.returncode}"
    return [Problem(setting, f"slurm.python: {python} {client.where} cannot run specdsl {specdsl.__version__}'s job ({why}): "
                    "set `slurm.python` to a Python 3.11+ on the cluster with specdsl's dependencies "
                    "(`pip install specdsl` in a virtual environment there installs them)", at=at)]


def for_plan(host, registry) -> list[Problem]:
    """What apply's preflight of host `host` would find, asked now, for
    `specdsl plan`, writing nothing: the cluster's checks (`problems`,
    `sbatch --test-only` of a one-line job), on this machine or on the login
    node (`registry`'s connection to it), then the job's Python where it can
    be asked as is: this machine's `slurm.python`; through a login node,
    once the copy of this specdsl that apply puts there is there (before
    the first apply of this version, apply asks it after copying)."""
    from specdsl.apply.slurm.site import login_package, login_root, package_folder, slurm_env
    from specdsl.hosts.base import HostError
    from specdsl.hosts.slurm import SshRunner

    slurm = host.slurm
    if not host.ssh:
        client = SlurmClient(env=slurm_env(slurm))
        found = problems(host, client)
        if found or not slurm.python:
            return found
        return python_problems(host, client, slurm.python, package_folder().parent)
    try:
        login = registry.get(host)
        client = SlurmClient(runner=SshRunner(login, slurm_env(slurm)))
        found = problems(host, client)
        package = login_package(login_root(slurm, login))
        if found or not login.exists(package):
            return found
    except HostError as exc:
        return [Problem(None, str(exc) if str(exc).startswith("host ") else f"host {host.name}: {exc}", unreachable=True)]
    return python_problems(host, client, slurm.python or "python3", package)
