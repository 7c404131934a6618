"""Push generated and mutated specs through `validate`, `fmt --check` and
`plan --no-refresh`, as the CLI runs them (in process, `specdsl.cli.main`),
and count what must never happen: a traceback (an exception escaping the
command, or "Traceback" in what it printed) and a command over 2 s.

    python benchmarks/fuzz_specs.py [--count 100000] [--seed 1] [--workers 2]
                                    [--slow-s 2] [--keep DIR] [--json FILE]
                                    [--checkpoint FILE] [--from-task N]

Inputs, in equal parts, all from `--seed` (the same seed gives the same inputs):
- `mutate`: token-level edits of the example specs (delete, duplicate,
  swap, replace with a punctuation or keyword token, truncate);
- `bytes`: byte-level edits of them (flip, insert, delete, duplicate a
  run of bytes, splice two examples), invalid UTF-8 included;
- `generated`: hypothesis strategies that build specs from the blocks,
  attribute names and values the examples use, with generated values
  (numbers, quantities, strings, references, lists, maps, expressions,
  deep nesting), so many of them validate and reach `plan`.

A command counts as slow when its wall time is over `--slow-s`; its CPU
time is reported too (on shared cores wall time includes waiting). Each
offending input is written to `--keep` (default `fuzz-failures/`) with
the command's output, to rerun by hand. Exit 0 when there was neither.

The inputs are cut into tasks of `--chunk` inputs, each its own seed, so
a run can stop and go on: with `--checkpoint FILE` the figures so far and
the tasks done are written there (atomically) after every task, and a
second run with the same file and the same `--count --seed --chunk
--slow-s` does only the tasks left and adds them up. `--from-task N`
skips the tasks before N (inputs a run of the same seed already did). The figures name the
slowest command by CPU time and by wall time, and the 1-minute load
average seen after each task (lowest, highest).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import multiprocessing
import os
import random
import re
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").rglob("*.spec"))
TOKEN = re.compile(r'"(?:[^"\\\n]|\\.)*"|(?:#|//)[^\n]*|[A-Za-z0-9_.%-]+|\s+|.', re.S)
PUNCT = ['"', "{", "}", "[", "]", "(", ")", "=", ",", ".", "-", "1e999", "not", "assert", "x-", "5mb", "matrix.q",
         "${", "import", "extends", "\\", "\0", "999999999999999999999", "-0", "0x1", "1.5.5", "var.", "//", "#"]
KINDS = ("mutate", "bytes", "generated")
# what a seed draws: bumped when a strategy or mutation changes, so a
# checkpoint of other inputs is refused, not added to (2: identifiers
# drawn from their parts, not st.from_regex)
INPUTS_VERSION = 2


# -- the examples' vocabulary --------------------------------------------------
def _vocabulary(texts: list[str]) -> dict[str, list[str]]:
    """block kind -> attribute names the examples give blocks of that kind."""
    vocab: dict[str, set[str]] = {}
    kind = None
    for text in texts:
        for line in text.splitlines():
            m = re.match(r"^(\w+)\s+\"", line)
            if m:
                kind = m.group(1)
                vocab.setdefault(kind, set())
                continue
            m = re.match(r"^\s+([\w-]+)\s*=", line)
            if m and kind:
                vocab[kind].add(m.group(1))
    return {k: sorted(v) for k, v in sorted(vocab.items())}


SEED_TEXTS = [p.read_text() for p in EXAMPLES]
VOCAB = _vocabulary(SEED_TEXTS)


# -- mutations --------------------------------------------------------------------
def mutate_tokens(text: str, rnd: random.Random) -> bytes:
    tokens = TOKEN.findall(text)
    for _ in range(1 if rnd.random() < 0.5 else rnd.randint(2, 6)):  # one edit: often still valid, so plan runs
        op = rnd.choice(["delete", "duplicate", "swap", "replace", "truncate", "replace", "delete"])
        i = rnd.randrange(len(tokens)) if tokens else 0
        if op == "delete" and tokens:
            del tokens[i]
        elif op == "duplicate" and tokens:
            tokens.insert(i, tokens[i] * rnd.randint(1, 3))
        elif op == "swap" and len(tokens) > 1:
            j = rnd.randrange(len(tokens))
            tokens[i], tokens[j] = tokens[j], tokens[i]
        elif op == "replace" and tokens:
            tokens[i] = rnd.choice(PUNCT)
        elif op == "truncate" and rnd.random() < 0.3:
            tokens = tokens[:i]
    return "".join(tokens).encode("utf-8", "surrogatepass")


def mutate_bytes(data: bytes, rnd: random.Random) -> bytes:
    buf = bytearray(data)
    for _ in range(rnd.randint(1, 8)):
        op = rnd.choice(["flip", "insert", "delete", "dup", "splice"])
        i = rnd.randrange(len(buf) + 1)
        if op == "flip" and buf:
            i = min(i, len(buf) - 1)
            buf[i] ^= 1 << rnd.randrange(8)
        elif op == "insert":
            buf[i:i] = bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 8)))
        elif op == "delete" and buf:
            del buf[i:i + rnd.randint(1, 64)]
        elif op == "dup" and buf:
            j = min(len(buf), i + rnd.randint(1, 200))
            buf[i:i] = buf[i:j] * rnd.randint(1, 4)
        elif op == "splice":
            other = rnd.choice(SEED_TEXTS).encode()
            a = rnd.randrange(len(other) + 1)
            buf[i:i] = other[a:a + rnd.randint(1, 400)]
    return bytes(buf)


# -- generated specs (hypothesis) -------------------------------------------------
def _strategies():
    from hypothesis import strategies as st

    lower, alnum = "abcdefghijklmnopqrstuvwxyz", "abcdefghijklmnopqrstuvwxyz0123456789"
    # [a-z][a-z0-9_]{0,5}(-[a-z0-9]{1,3})?, built from its parts: several
    # times cheaper to draw than st.from_regex (which filters what it draws)
    ident = st.builds(lambda a, b, c: a + b + c, st.sampled_from(lower), st.text(alnum + "_", max_size=5),
                      st.just("") | st.text(alnum, min_size=1, max_size=3).map(lambda t: "-" + t))
    kinds = sorted(VOCAB)
    strings = st.text(st.characters(blacklist_categories=("Cs",)), max_size=10).map(json.dumps)
    numbers = st.integers(-(10**15), 10**15).map(str) | st.floats(allow_nan=False, allow_infinity=False).map(repr)
    quantities = st.builds(lambda n, u: f"{n}{u}", st.integers(0, 10**6), st.sampled_from(["s", "ms", "m", "h", "mb", "gb", "%"]))
    refs = st.builds(lambda k, n: f"{k}.{n}", st.sampled_from(kinds + ["var", "matrix", "baseline", "effective"]), ident)
    atoms = strings | numbers | quantities | refs | st.sampled_from(["true", "false", "null"])

    def extend(children):
        ops = st.sampled_from(["+", "-", "*", "/", "==", "!=", "<", ">=", "and", "or"])
        return st.one_of(
            st.builds(lambda a, o, b: f"{a} {o} {b}", children, ops, children),
            st.builds(lambda xs: "[" + ", ".join(xs) + "]", st.lists(children, max_size=4)),
            st.builds(lambda ks, vs: "{ " + ", ".join(f"{k} = {v}" for k, v in zip(ks, vs)) + " }",
                      st.lists(ident, max_size=3), st.lists(children, max_size=3)),
            st.builds(lambda f, a: f"{f}({a})", st.sampled_from(["p99", "p50", "mean", "max", "min", "len", "nope"]), children),
            st.builds(lambda a: f"not {a}", children),
            st.builds(lambda a: f"({a})", children),
        )

    values = st.recursive(atoms, extend, max_leaves=10)
    deep = st.builds(lambda n, op: "1" + f" {op} 1" * n, st.integers(0, 1200), st.sampled_from(["-", "+", "*"])) | st.builds(
        lambda n: "[" * n + "]" * n, st.integers(0, 1200))

    @st.composite
    def block(draw):
        kind = draw(st.sampled_from(kinds + ["nonsense"]))
        names = VOCAB.get(kind) or ["x"]
        lines = []
        for _ in range(draw(st.integers(0, 7))):
            name = draw(st.sampled_from(names) | ident)
            if name == "assert" or draw(st.integers(0, 12)) == 0:
                lines.append(f'  assert {draw(strings)} {{ {draw(values)} }}')
            else:
                lines.append(f"  {name} = {draw(values | deep if draw(st.integers(0, 30)) == 0 else values)}")
        head = f'{kind} "{draw(ident)}"'
        if draw(st.integers(0, 5)) == 0:
            head += f' extends {kind}.{draw(ident)}'
        return head + " {\n" + "\n".join(lines) + "\n}\n"

    return st.lists(block(), min_size=1, max_size=6).map("\n".join)


# -- running the CLI ------------------------------------------------------------
def _run(argv: list[str]) -> tuple[int | str, str, float, float]:
    from specdsl.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code: int | str = main(argv)
    except SystemExit as exc:  # argparse's usage errors
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # noqa: BLE001  what the CLI let escape: a traceback for a user
        code = "traceback"
        err.write(traceback.format_exc())
    return code, out.getvalue() + err.getvalue(), time.perf_counter() - wall, time.process_time() - cpu


class Tally:
    def __init__(self) -> None:
        self.inputs = 0
        self.by_kind = {k: 0 for k in KINDS}
        self.commands = 0
        self.valid = 0
        self.planned = 0
        self.tracebacks: list[str] = []
        self.slow: list[str] = []  # over slow_s of wall time
        self.slow_cpu: list[str] = []  # over slow_s of CPU time
        self.max_wall = 0.0
        self.max_cpu = 0.0
        self.max_wall_at = ""  # the command that took max_wall, and its cpu
        self.max_cpu_at = ""  # the command that took max_cpu, and its wall
        self.exit_codes: dict[str, int] = {}

    def note(self, name: str, wall: float, cpu: float) -> None:
        if wall > self.max_wall:
            self.max_wall, self.max_wall_at = wall, f"{name} ({wall:.2f}s wall, {cpu:.2f}s cpu)"
        if cpu > self.max_cpu:
            self.max_cpu, self.max_cpu_at = cpu, f"{name} ({cpu:.2f}s cpu, {wall:.2f}s wall)"

    def merge(self, other: dict) -> None:
        for key in ("inputs", "commands", "valid", "planned"):
            setattr(self, key, getattr(self, key) + other[key])
        for k, v in other["by_kind"].items():
            self.by_kind[k] += v
        for k, v in other["exit_codes"].items():
            self.exit_codes[k] = self.exit_codes.get(k, 0) + v
        self.tracebacks += other["tracebacks"]
        self.slow += other["slow"]
        self.slow_cpu += other["slow_cpu"]
        if other["max_wall"] > self.max_wall:
            self.max_wall, self.max_wall_at = other["max_wall"], other["max_wall_at"]
        if other["max_cpu"] > self.max_cpu:
            self.max_cpu, self.max_cpu_at = other["max_cpu"], other["max_cpu_at"]

    def as_dict(self) -> dict:
        return dict(vars(self))


def check(data: bytes, kind: str, tally: Tally, work: Path, keep: Path, slow_s: float, label: str) -> None:
    spec = work / "fuzz.spec"
    spec.write_bytes(data)
    tally.inputs += 1
    tally.by_kind[kind] += 1
    commands = [["validate", str(spec)], ["fmt", "--check", str(spec)]]
    for argv in commands + [["plan", str(spec), "--no-refresh", "--state", str(work / "state")]]:
        code, output, wall, cpu = _run(argv)
        tally.commands += 1
        name = f"{label}-{argv[0]}"
        tally.note(name, wall, cpu)
        key = f"{argv[0]}:{code}"
        tally.exit_codes[key] = tally.exit_codes.get(key, 0) + 1
        bad = code == "traceback" or "Traceback (most recent call last)" in output
        slow = wall > slow_s or cpu > slow_s
        if bad or slow:
            keep.mkdir(parents=True, exist_ok=True)
            (keep / f"{name}.spec").write_bytes(data)
            (keep / f"{name}.out").write_text(f"$ specdsl {' '.join(argv)}\nexit {code}, wall {wall:.2f}s, cpu {cpu:.2f}s\n{output}")
            what = f"{name} ({wall:.2f}s wall, {cpu:.2f}s cpu)"
            if bad:
                tally.tracebacks.append(what)
            if wall > slow_s:
                tally.slow.append(what)
            if cpu > slow_s:
                tally.slow_cpu.append(what)
        if argv[0] == "validate":
            if code != 0:
                return  # fmt would say the same; plan too
            tally.valid += 1
        if argv[0] == "plan" and code in (0, 2):
            tally.planned += 1


def worker(args: tuple) -> dict:
    index, count, seed, slow_s, keep = args
    tally = Tally()
    third = count // 3
    with tempfile.TemporaryDirectory(prefix="specdsl-fuzz-") as tmp:
        work = Path(tmp)
        os.environ["SPECDSL_KEY_FILE"] = str(work / "identity.key")  # never the user's key
        rnd = random.Random(seed * 1_000_003 + index)
        for i in range(third + count % 3):
            check(mutate_tokens(rnd.choice(SEED_TEXTS), rnd), "mutate", tally, work, Path(keep), slow_s, f"w{index}-m{i}")
        for i in range(third):
            base = rnd.choice(SEED_TEXTS).encode()
            check(mutate_bytes(base, rnd), "bytes", tally, work, Path(keep), slow_s, f"w{index}-b{i}")
        if third:
            from hypothesis import HealthCheck, given, seed as hseed, settings

            n = [0]

            @hseed(seed * 1_000_003 + index)
            @settings(max_examples=third, deadline=None, database=None, derandomize=False,
                      suppress_health_check=list(HealthCheck), phases=["generate"])
            @given(_strategies())
            def generated(text):
                n[0] += 1
                check(text.encode("utf-8", "surrogatepass"), "generated", tally, work, Path(keep), slow_s,
                      f"w{index}-g{n[0]}")

            generated()
    return tally.as_dict()


def _load_checkpoint(path: Path | None, key: dict) -> tuple[set[int], Tally, float, list[float]]:
    """The tasks a stopped run finished, their figures, the seconds it ran and
    the load averages it saw."""
    tally = Tally()
    if path is None or not path.exists():
        return set(), tally, 0.0, []
    saved = json.loads(path.read_text())
    if saved["key"] != key:
        raise SystemExit(f"{path}: a checkpoint of another run ({saved['key']}, not {key}); remove it or pass another file")
    for name, value in saved["tally"].items():
        setattr(tally, name, value)
    return set(saved["done"]), tally, saved["wall_s"], saved.get("load_1min_seen", [])


def _save_checkpoint(path: Path, key: dict, done: set[int], tally: Tally, wall_s: float, loads: list[float]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps({"key": key, "done": sorted(done), "tally": tally.as_dict(), "wall_s": wall_s,
                               "load_1min_seen": [min(loads), max(loads)]}))
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=100_000, help="inputs in all (default 100,000)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--chunk", type=int, default=300, help="inputs per task (progress is printed per task)")
    ap.add_argument("--slow-s", type=float, default=2.0)
    ap.add_argument("--keep", default="fuzz-failures", help="folder for offending inputs")
    ap.add_argument("--json", help="write the figures to this file too")
    ap.add_argument("--checkpoint", help="record the tasks done here; a run given it again goes on from there")
    ap.add_argument("--from-task", type=int, default=0, metavar="N",
                    help="skip the tasks before N (done by another run): the inputs from N * chunk on")
    args = ap.parse_args(argv)
    key = {"count": args.count, "seed": args.seed, "chunk": args.chunk, "slow_s": args.slow_s, "from_task": args.from_task, "inputs": INPUTS_VERSION}
    checkpoint = Path(args.checkpoint) if args.checkpoint else None
    done, tally, before_s, loads = _load_checkpoint(checkpoint, key)
    tasks, left, i = [], args.count, 0
    while left > 0:
        n = min(args.chunk, left)
        if i not in done and i >= args.from_task:
            tasks.append((i, n, args.seed, args.slow_s, args.keep))
        left -= n
        i += 1
    if done:
        print(f"checkpoint {checkpoint}: {len(done)} tasks ({tally.inputs} inputs) done, {len(tasks)} left", flush=True)
    started = time.monotonic()
    loads = loads + [os.getloadavg()[0]]
    if args.workers <= 1:
        results = ((t[0], worker(t)) for t in tasks)
    else:
        pool = multiprocessing.get_context("spawn").Pool(args.workers)
        results = pool.imap_unordered(_indexed_worker, tasks)

    def figures(finished: bool) -> dict:
        return tally.as_dict() | {"seed": args.seed, "wall_s": round(before_s + time.monotonic() - started, 1),
                                  "slow_threshold_s": args.slow_s, "count_asked": args.count, "finished": finished,
                                  "workers": args.workers, "chunk": args.chunk, "cpus": os.cpu_count(),
                                  "load_1min_seen": [min(loads), max(loads)],
                                  "tasks_from_checkpoint": resumed, "from_task": args.from_task}

    resumed = len(done)
    for index, result in results:
        tally.merge(result)
        done.add(index)
        loads.append(os.getloadavg()[0])
        print(f"[{time.monotonic() - started:7.0f}s] {tally.inputs} inputs ({tally.by_kind}), {tally.commands} commands, "
              f"{tally.valid} valid, {tally.planned} planned, {len(tally.tracebacks)} tracebacks, "
              f"{len(tally.slow)} over {args.slow_s:g}s wall, {len(tally.slow_cpu)} over {args.slow_s:g}s cpu, "
              f"max {tally.max_wall:.2f}s wall / {tally.max_cpu:.2f}s cpu, load {loads[-1]:.1f}", flush=True)
        if checkpoint:
            _save_checkpoint(checkpoint, key, done, tally, before_s + time.monotonic() - started, loads)
        if args.json:  # after every task: a run stopped early still leaves its figures
            Path(args.json).write_text(json.dumps(figures(False), indent=2, sort_keys=True) + "\n")
    final = figures(True)
    print(json.dumps(final, indent=2, sort_keys=True))
    if args.json:
        Path(args.json).write_text(json.dumps(final, indent=2, sort_keys=True) + "\n")
    return 0 if not tally.tracebacks and not tally.slow and not tally.slow_cpu else 1


def _indexed_worker(task: tuple) -> tuple[int, dict]:
    return task[0], worker(task)


if __name__ == "__main__":
    sys.exit(main())
