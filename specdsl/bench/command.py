"""The user's own benchmark script as a workload.

`workload.command` is an argv list; `{host}`, `{port}`, `{model}` and
`{base_url}` are replaced in each argument (nothing else is interpreted:
braces in JSON arguments are left alone). The script runs `runs` times, each
in its own process group, with stdout and stderr in one log file
(`command-run-N.log` in `out_dir`) and at most `workload.timeout` seconds;
on timeout or stop the whole group is terminated, then killed.

Each run's metrics come from its log, one `MetricRule` each:
- `regex`: the first group of the last match (multiline mode);
- `json`: a dotted path (`a.b.0.c`) into the last JSON object printed.
A metric that is missing or not a number is an error, never a zero.
"""

from __future__ import annotations

import json
import math
import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from specdsl.bench.results import BenchError, BenchResult, RunResult

_KILL_GRACE_S = 5.0
_POLL_S = 0.05
_TAIL_CHARS = 800


def expand_command(command: tuple[str, ...] | list[str], *, host: str, port: int, model: str) -> list[str]:
    """The argv with placeholders replaced."""
    values = {"{host}": host, "{port}": str(port), "{model}": model, "{base_url}": f"http://{host}:{port}"}
    argv = []
    for arg in command:
        for key, value in values.items():
            arg = arg.replace(key, value)
        argv.append(arg)
    return argv


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


def _stop_group(proc: subprocess.Popen) -> None:
    """TERM the process group, then KILL it after a grace period."""
    for sig, wait in ((signal.SIGTERM, _KILL_GRACE_S), (signal.SIGKILL, _KILL_GRACE_S)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _tail(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return text[-_TAIL_CHARS:]


def _run_once(argv: list[str], log_path: Path, env: dict[str, str], timeout: float, stop: threading.Event | None) -> str:
    with log_path.open("wb") as log:
        try:
            proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
        except OSError as exc:
            raise BenchError(f"cannot start {argv[0]!r}: {exc}") from exc
        deadline = time.monotonic() + timeout
        try:
            while proc.poll() is None:
                if stop is not None and stop.is_set():
                    raise BenchError(f"{argv[0]} stopped before it finished (log: {log_path})")
                if time.monotonic() > deadline:
                    raise BenchError(f"{argv[0]} ran past its timeout of {timeout:g}s (log: {log_path})")
                time.sleep(_POLL_S)
        finally:
            if proc.poll() is None:
                _stop_group(proc)
            else:
                # The script ended; anything it left in its group goes too.
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
    text = log_path.read_text(encoding="utf-8", errors="replace")
    if proc.returncode != 0:
        raise BenchError(f"{argv[0]} exited with status {proc.returncode} (log: {log_path}):\n{_tail(log_path)}")
    return text


def run_command_workload(
    workload: Any,
    *,
    host: str,
    port: int,
    model: str,
    out_dir: Path,
    env: dict[str, str] | None = None,
    stop: threading.Event | None = None,
) -> BenchResult:
    """Run the user's script `workload.runs` times and read its metrics.
    `env` adds to this process's environment. Raises BenchError when the
    script cannot start, fails, times out, is stopped, or a metric is
    missing."""
    if not workload.command:
        raise BenchError(f"workload {workload.name!r} has no command")
    if not workload.metrics:
        raise BenchError(f"workload {workload.name!r}: a command workload needs at least one metric rule")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    argv = expand_command(workload.command, host=host, port=port, model=model)
    full_env = {**os.environ, **(env or {})}
    runs: list[RunResult] = []
    for index in range(max(1, workload.runs)):
        if index > 0 and workload.cooldown > 0 and stop is not None and stop.wait(workload.cooldown):
            raise BenchError("benchmark stopped before it finished")
        if index > 0 and workload.cooldown > 0 and stop is None:
            time.sleep(workload.cooldown)
        log_path = out_dir / f"command-run-{index}.log"
        text = _run_once(argv, log_path, full_env, float(workload.timeout), stop)
        metrics = extract_metrics(text, workload.metrics, source=f"run {index} ({log_path})")
        runs.append(RunResult(index=index, metrics=metrics, records_file=str(log_path)))
    result = BenchResult(runs=tuple(runs))
    (out_dir / "result.json").write_text(json.dumps(result.to_json(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return result
