"""The user's own benchmark script as a workload.

`workload.command` is an argv list; `{host}`, `{port}`, `{model}` and
`{base_url}` are replaced in each argument, once (specdsl.model.placeholders:
braces in JSON arguments are left alone). The script runs on the server's
host, through its `Host`, `runs` times, each in its own process group, with
stdout and stderr in one log file (`command-run-N.log`, brought back into
`out_dir`) and at most `workload.timeout` seconds; on timeout or stop the
whole group is terminated, then killed (a stop raises `hosts.Cancelled`: an
interrupted benchmark, not a failed one).

Each run's metrics come from its log, one `MetricRule` each:
- `regex`: the first group of the last match (multiline mode);
- `json`: a dotted path (`a.b.0.c`) into the last JSON object printed.
A metric that is missing or not a number is an error, never a zero.
"""

from __future__ import annotations

import json
import math
import re
import threading
from pathlib import Path
from typing import Any

from specdsl import private
from specdsl.bench.results import BenchError, BenchResult, RunResult, stamped
from specdsl.hosts import Cancelled, Host, HostError
from specdsl.model.placeholders import expand_argv

_TAIL_CHARS = 800


def expand_command(command: tuple[str, ...] | list[str], *, host: str, port: int, model: str) -> list[str]:
    """The argv with placeholders replaced (one pass: a value holding
    `{port}` is not expanded again)."""
    values = {"host": host, "port": str(port), "model": model, "base_url": f"http://{host}:{port}"}
    return expand_argv(command, values)


def last_json_object(text: str) -> dict | None:
    """The last JSON object printed in `text`: a line holding one whole
    object, or an object spanning lines that starts at the beginning of a
    line. None when there is none."""
    decoder = json.JSONDecoder()
    found: dict | None = None
    for match in re.finditer(r"(?m)^[ \t]*\{", text):
        start = match.end() - 1
        try:
            obj, _end = decoder.raw_decode(text, start)
        except ValueError:
            continue
        if isinstance(obj, dict):
            found = obj
    return found


def _dotted(obj: Any, path: str) -> Any:
    for part in path.split("."):
        if isinstance(obj, dict) and part in obj:
            obj = obj[part]
        elif isinstance(obj, list) and part.lstrip("-").isdigit() and -len(obj) <= int(part) < len(obj):
            obj = obj[int(part)]
        else:
            raise KeyError(path)
    return obj


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def extract_metrics(text: str, rules: tuple[Any, ...], *, source: str) -> dict[str, float]:
    """Every rule's metric from `text`; BenchError naming each missing one."""
    metrics: dict[str, float] = {}
    problems: list[str] = []
    last_obj: dict | None = None
    searched_json = False
    for rule in rules:
        if rule.regex is not None:
            try:
                matches = list(re.finditer(rule.regex, text, re.MULTILINE))
            except re.error as exc:
                problems.append(f"{rule.name}: bad regex {rule.regex!r}: {exc}")
                continue
            if not matches:
                problems.append(f"{rule.name}: regex {rule.regex!r} matched nothing")
                continue
            last = matches[-1]
            raw = last.group(1) if last.re.groups >= 1 else last.group(0)
            where = f"regex {rule.regex!r}"
        elif rule.json is not None:
            if not searched_json:
                last_obj, searched_json = last_json_object(text), True
            if last_obj is None:
                problems.append(f"{rule.name}: no JSON object in the output")
                continue
            try:
                raw = _dotted(last_obj, rule.json)
            except KeyError:
                problems.append(f"{rule.name}: field {rule.json!r} not in the last JSON object")
                continue
            where = f"field {rule.json!r}"
        else:
            problems.append(f"{rule.name}: rule has neither regex nor json")
            continue
        number = _number(raw)
        if number is None:
            problems.append(f"{rule.name}: {where} gave {str(raw)[:60]!r}, not a number")
            continue
        metrics[rule.name] = number
    if problems:
        raise BenchError(f"{source}: " + "; ".join(problems))
    return metrics


def run_command_workload(
    workload: Any,
    *,
    host: Host,
    server_host: str,
    port: int,
    model: str,
    out_dir: Path,
    env: dict[str, str] | None = None,
    stop: threading.Event | None = None,
) -> BenchResult:
    """Run the user's script `workload.runs` times on `host` and read its
    metrics. `server_host:port` is the server as the script sees it (on the
    host); `env` adds to the host's environment. Raises BenchError when the
    script cannot start, fails, times out, or a metric is missing, and
    `hosts.Cancelled` when `stop` is set."""
    if not workload.command:
        raise BenchError(f"workload {workload.name!r} has no command")
    if not workload.metrics:
        raise BenchError(f"workload {workload.name!r}: a command workload needs at least one metric rule")
    out_dir = Path(out_dir)
    private.make_dirs(out_dir)
    there = host.run_folder(out_dir)
    argv = expand_command(workload.command, host=server_host, port=port, model=model)
    runs: list[RunResult] = []
    for index in range(max(1, workload.runs)):
        if index > 0 and workload.cooldown > 0:
            if stop is not None and stop.wait(workload.cooldown):
                raise Cancelled("benchmark stopped between runs")
            if stop is None:
                threading.Event().wait(workload.cooldown)
        name = f"command-run-{index}.log"
        text = _run_once(host, argv, there / name, out_dir / name, env or {}, float(workload.timeout), stop)
        metrics = extract_metrics(text, workload.metrics, source=f"run {index} ({out_dir / name})")
        runs.append(RunResult(index=index, metrics=metrics, records_file=str(out_dir / name)))
    result = BenchResult(runs=tuple(runs))
    private.write_text(out_dir / "result.json", json.dumps(stamped(result.to_json()), indent=1, sort_keys=True) + "\n")
    return result


def _run_once(host: Host, argv: list[str], log_there: Path, log_here: Path, env: dict[str, str], timeout: float,
              stop: threading.Event | None) -> str:
    try:
        result = host.run(argv, log_path=log_there, timeout=timeout, env=env, stop=stop, framed=False)
    except HostError as exc:
        raise BenchError(f"cannot start {argv[0]!r}: {exc}") from exc
    host.fetch(log_there, log_here)
    text = log_here.read_text(encoding="utf-8", errors="replace")
    if result.timed_out:
        raise BenchError(f"{argv[0]} ran past its timeout of {timeout:g}s (log: {log_here})")
    if result.returncode != 0:
        raise BenchError(f"{argv[0]} exited with status {result.returncode} (log: {log_here}):\n{text[-_TAIL_CHARS:]}")
    return text
