"""The user's own benchmark script as a workload.

`workload.command` is an argv list; `{host}`, `{port}`, `{model}`,
`{base_url}`, `{python}`, `{bin}` and `{result_file}` are replaced in each
argument, once (specdsl.model.placeholders: braces in JSON arguments are
left alone). `{python}` and `{bin}` are the stack's environment (its
interpreter, its console scripts' folder: `StackEnv`), so the engine's own
client runs from the stack under test; the stack's and the server's
environment variables reach the process. `{result_file}` is a fresh path
per run (`command-run-N.result.json` beside the log) that the command
writes and specdsl reads. The script runs on the server's host, through its
`Host`, `runs` times, each in its own process group, with stdout and stderr
in one log file (`command-run-N.log`, brought back into `out_dir`) and at
most `workload.timeout` seconds; on timeout or stop the whole group is
terminated, then killed (a stop raises `hosts.Cancelled`: an interrupted
benchmark, not a failed one).

Each run's metrics come from its log, or from its result file when the
command names `{result_file}`:
- a preset (`workload.metrics_preset`, specdsl.facts.bench_clients): the
  fields of the last JSON object of the result file that an engine's own
  client writes (`vllm bench serve --save-result`, SGLang's
  `bench_serving --output-file`), mapped to specdsl's metric names;
- one `MetricRule` each: `regex`, the first group of the last match
  (multiline mode); `json`, a dotted path (`a.b.0.c`) into the last JSON
  object.
A metric that is missing or not a number is an error, never a zero (a
preset's optional fields are left out when the client did not measure them).
"""

from __future__ import annotations

import json
import math
import re
import threading
from pathlib import Path
from typing import Any

import attrs

from specdsl import private
from specdsl.bench.results import BenchError, BenchResult, RunResult, stamped
from specdsl.bench.validity import run_invalid
from specdsl.hosts import Cancelled, Host, HostError
from specdsl.model.placeholders import RESULT_FILE, STACK_ENV, expand_argv, uses

_TAIL_CHARS = 800


@attrs.frozen
class StackEnv:
    """The stack's environment as a command workload's process sees it:
    `python` its interpreter and `bin` the folder of its console scripts
    (paths on the server's host), `env` the variables it gets (the stack's,
    then the server's)."""

    python: str
    bin: str
    env: dict[str, str] = attrs.field(factory=dict)


def expand_command(command: tuple[str, ...] | list[str], *, host: str, port: int, model: str,
                   stack: StackEnv | None = None, result_file: str | None = None) -> list[str]:
    """The argv with placeholders replaced (one pass: a value holding
    `{port}` is not expanded again). `{python}`, `{bin}` and `{result_file}`
    are replaced only when given (else left as written: the caller refuses
    them first)."""
    values = {"host": host, "port": str(port), "model": model, "base_url": f"http://{host}:{port}"}
    if stack is not None:
        values |= {"python": stack.python, "bin": stack.bin}
    if result_file is not None:
        values[RESULT_FILE] = result_file
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


def preset_metrics(text: str, preset_name: str, *, source: str) -> dict[str, float]:
    """The metrics of preset `preset_name` from the last JSON object in
    `text` (a client's result file); BenchError naming each required field
    that is missing or not a number."""
    from specdsl.facts.bench_clients import presets

    preset = presets().get(preset_name)
    if preset is None:
        raise BenchError(f"{source}: unknown metrics preset {preset_name!r}")
    obj = last_json_object(text)
    if obj is None:
        raise BenchError(f"{source}: no JSON object in the result file ({preset.client} writes one)")
    metrics: dict[str, float] = {}
    for field in preset.fields:
        if field.metric in metrics or field.field not in obj:
            continue
        raw = obj[field.field]
        if field.read == "count_nonempty":
            if isinstance(raw, list):
                metrics[field.metric] = float(sum(1 for item in raw if item))
            continue
        number = _number(raw)
        if number is not None:
            metrics[field.metric] = number
    missing = [m for m in preset.required if m not in metrics]
    if missing:
        said = ", ".join(f"{m} (field {next(f.field for f in preset.fields if f.metric == m)!r})" for m in missing)
        raise BenchError(f"{source}: the {preset.client} result has no number for {said}")
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
    stack: StackEnv | None = None,
) -> BenchResult:
    """Run the user's script `workload.runs` times on `host` and read its
    metrics. `server_host:port` is the server as the script sees it (on the
    host); `stack` is the stack's environment there (`{python}`, `{bin}`;
    its variables reach the process); `env` adds to the host's environment
    last. Raises BenchError when the script cannot start, fails, times out,
    writes no result file where it names `{result_file}`, or a metric is
    missing, and `hosts.Cancelled` when `stop` is set."""
    if not workload.command:
        raise BenchError(f"workload {workload.name!r} has no command")
    preset = getattr(workload, "metrics_preset", None)
    if not workload.metrics and not preset:
        raise BenchError(f"workload {workload.name!r}: a command workload needs at least one metric rule")
    if stack is None and uses(workload.command, STACK_ENV):
        raise BenchError(f"workload {workload.name!r}: the stack's environment is not known here, "
                         "so `{python}` and `{bin}` cannot be given")
    to_file = uses(workload.command, RESULT_FILE)
    if preset and not to_file:
        raise BenchError(f"workload {workload.name!r}: metrics preset {preset!r} reads `{{result_file}}`, "
                         "which the command does not name")
    out_dir = Path(out_dir)
    private.make_dirs(out_dir)
    there = host.run_folder(out_dir)
    proc_env = {**(stack.env if stack is not None else {}), **(env or {})}
    runs: list[RunResult] = []
    for index in range(max(1, workload.runs)):
        if index > 0 and workload.cooldown > 0:
            if stop is not None and stop.wait(workload.cooldown):
                raise Cancelled("benchmark stopped between runs")
            if stop is None:
                threading.Event().wait(workload.cooldown)
        name = f"command-run-{index}.log"
        result_name = f"command-run-{index}.result.json"
        if to_file:
            host.mkdir(there)
            host.remove_tree(there / result_name)  # a client that appends (SGLang) must start an empty file
        argv = expand_command(workload.command, host=server_host, port=port, model=model, stack=stack,
                              result_file=str(there / result_name) if to_file else None)
        text = _run_once(host, argv, there / name, out_dir / name, proc_env, float(workload.timeout), stop)
        source = f"run {index} ({out_dir / name})"
        if to_file:
            text = _result_file(host, there / result_name, out_dir / result_name, argv[0], out_dir / name)
            source = f"run {index} ({out_dir / result_name})"
        metrics = preset_metrics(text, preset, source=source) if preset else {}
        if workload.metrics:
            metrics |= extract_metrics(text, workload.metrics, source=source)
        # a script that reports `failed` (and `completed`) is held to `max_failed` as the built-in client is
        invalid = run_invalid(metrics, workload) if "failed" in metrics else ""
        runs.append(RunResult(index=index, metrics=metrics, records_file=str(out_dir / name), invalid=invalid))
    result = BenchResult(runs=tuple(runs))
    private.write_text(out_dir / "result.json", json.dumps(stamped(result.to_json()), indent=1, sort_keys=True) + "\n")
    return result


def _result_file(host: Host, there: Path, here: Path, program: str, log: Path) -> str:
    """The text of the result file a run wrote at `there` (brought to `here`)."""
    if not host.exists(there):
        raise BenchError(f"{program} wrote no result file at {there} (the command's `{{result_file}}`; log: {log})")
    host.fetch(there, here)
    return here.read_text(encoding="utf-8", errors="replace")


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
