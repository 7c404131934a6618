"""The walk, fast: scheduling, GPU exclusivity, checks while the server is
up, abandonment, promotion, interruption and a no-op re-apply, driven by
`apply_plan` with real processes (stdlib server doubles, a real uv
environment over this interpreter) and real state."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import attrs
import pytest

from specdsl.apply import Reason, Status, apply_plan
from specdsl.apply.refresh import refresh
from specdsl.graph.build import build_graph
from specdsl.hosts import HostRegistry
from specdsl.plan.diff import make_plan
from specdsl.plan.model import Refresh
from specdsl.resolve.resolver import resolve_file
from specdsl.state import load_state, locked

HERE = Path(__file__).parent
DOUBLE = str(HERE / "walk_double.py")
PROBE = str(HERE / "walk_probe.py")


@pytest.fixture(scope="module")
def env_root(tmp_path_factory):
    """One environment root for the module: the stack is built once, reused after."""
    return tmp_path_factory.mktemp("envs")


def server(name: str, speed: float, life: Path, *extra: str) -> str:
    argv = [sys.executable, DOUBLE, "{port}", "--speed", str(speed), "--life", str(life), *extra]
    items = ", ".join(f'"{a}"' for a in argv)
    return f'server "{name}" {{\n  engine = "command"\n  model = "m"\n  command = [{items}]\n  ready_timeout = 30s\n}}\n'


def workload(sleep: float = 0.0, runs: int = 2) -> str:
    """`block = 1`: a paired comparison of `runs` pairs of one run each (the
    tests here count pairs; plan.economy)."""
    argv = [sys.executable, PROBE, "{base_url}"] + (["--sleep", str(sleep)] if sleep else [])
    items = ", ".join(f'"{a}"' for a in argv)
    return (f'workload "w" {{\n  command = [{items}]\n  runs = {runs}\n  block = 1\n  timeout = 60s\n'
            '  metric "tps" { regex = "tps: ([0-9.]+)" }\n}\n')


COMMON = 'host "a" {}\nhost "b" {}\nstack "sys" {\n  python = "system"\n}\n'


class Recording:
    """Hooks that keep the order of events."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []
        self.said: list[tuple[str, str]] = []  # (step, progress message)
        self.on_start = None

    def start(self, addr, kind):
        self.events.append(("start", addr))
        if self.on_start:
            self.on_start(addr)

    def progress(self, addr, message):
        self.said.append((addr, message))

    def finish(self, outcome):
        self.events.append(("finish", outcome.addr))


def apply_spec(folder: Path, text: str, env_root: Path, **kw):
    spec = folder / "walk.spec"
    spec.write_text(text)
    resolved = resolve_file(spec)
    assert resolved.ok, [d.summary for d in resolved.diags]
    cfg = resolved.config
    graph = build_graph(cfg, spec_dir=folder)
    state_dir = folder / ".specdsl"
    state = load_state(state_dir)
    registry = HostRegistry(env_root=env_root)
    wanted = {st.identity: st.payload["host"] for st in graph.steps.values() if st.kind == "provision"}
    fresh = refresh(state, registry, {h.name: h for h in cfg.hosts}, wanted)
    plan = make_plan(graph, state, fresh, spec=str(spec), spec_digest="d")
    with locked(state_dir, "apply") as lock:
        result = apply_plan(plan, graph, state_dir=state_dir, state=state, lock=lock, spec_dir=folder, registry=registry, **kw)
    return plan, result, load_state(state_dir)


def lives(path: Path) -> list[tuple[float, float]]:
    starts, spans = {}, []
    for line in path.read_text().splitlines():
        what, name, t = line.split()
        if what == "start":
            starts[name] = float(t)
        else:
            spans.append((starts.pop(name), float(t)))
    assert not starts, f"servers never stopped: {starts}"
    return sorted(spans)


def failures(result) -> str:
    return "\n".join(f"{o.addr}: {o.detail}" for o in result.outcomes if o.status is Status.FAILED)


def outcome(result, addr):
    return next(o for o in result.outcomes if o.addr == addr)


def test_one_server_per_machine_checks_while_up_and_promotion(tmp_path, env_root):
    life = tmp_path / "life.txt"
    slow_workload = workload(sleep=1.5, runs=1).replace('workload "w"', 'workload "w2"')
    text = COMMON + server("slow", 50, life) + server("fast", 100, life) + workload() + slow_workload + '''
experiment "base" {
  host     = host.a
  stack    = stack.sys
  server   = server.slow
  workload = workload.w
  assert "some" { tps > 0 }
}
experiment "later" {
  host     = host.a
  stack    = stack.sys
  server   = server.slow
  workload = workload.w2
}
experiment "cand" {
  host     = host.b
  stack    = stack.sys
  server   = server.fast
  workload = workload.w
  baseline = experiment.base
  assert "faster" { tps >= baseline.tps * 1.5 }
  promote  = "t"
}
'''
    hooks = Recording()
    plan, result, state = apply_spec(tmp_path, text, env_root, hooks=hooks)
    assert result.exit_code() == 0, failures(result)
    # two host blocks, one machine: base's own benchmark alone, then the
    # pairs, each on two fresh launches side by side (a CPU host fits both):
    # the two arms of a pair overlap, nothing else does
    # (3 pairs: the look at 2 pairs, at the level the O'Brien-Fleming-type
    # spending allows it, could not decide anything and is not taken)
    spans = lives(life)
    assert len(spans) == 7, spans
    groups = [spans[:1], spans[1:3], spans[3:5], spans[5:7]]
    assert all(a[1] <= b[0] for g, h in zip(groups, groups[1:]) for a in g for b in h), spans
    assert all(max(x[0] for x in g) < min(x[1] for x in g) for g in groups[1:]), spans  # both arms up at once
    assert result.launches == 7
    for k in (1, 3, 5):
        assert sorted(name.split("@")[0] for name in _names(life)[k:k + 2]) == ["100", "50"]
    # a check ran as soon as its results were recorded, while its server still served another benchmark
    assert hooks.events.index(("finish", "benchmark.base")) < hooks.events.index(("start", "benchmark.later"))
    assert hooks.events.index(("finish", "check.base.some")) < hooks.events.index(("finish", "benchmark.later"))
    # every run of every pair and arm is announced once, by its place in the step (a block of
    # one run is not `run 1/1` each time), in the order it ran
    # (a round a burst of other work hit is measured again: `run 3/6 again, ...`, specdsl.apply.bursts)
    runs = [m for a, m in hooks.said if a == "benchmark.cand" and m.startswith("run") and " again, " not in m]
    assert runs == ["run 1/6, pair 1 arm A: the command", "run 2/6, pair 1 arm B: the command",
                    "run 3/6, pair 2 arm B: the command", "run 4/6, pair 2 arm A: the command",
                    "run 5/6, pair 3 arm B: the command", "run 6/6, pair 3 arm A: the command"], runs
    verdicts = {v.name: v for _, v in result.verdicts}
    assert verdicts["faster"].status == "pass" and verdicts["faster"].decision.n == 3
    # every planned step has one outcome: the summary counts what the plan listed
    assert sorted(o.addr for o in result.outcomes) == sorted(c.addr for c in plan.changes)
    # promoted, with the argv of the candidate's server in the lock (read from state)
    assert state.baseline("t") is not None
    # the launch step records its seconds from start to ready (what plan estimates launches from)
    (launch_run,) = state.runs_of("launch.slow")
    assert launch_run.metric("launch_s") is not None and launch_run.metric("launch_s") > 0
    lock = (tmp_path / "stacks" / "t.lock.toml").read_text()
    assert "walk_double.py" in lock and '"100"' in lock


def _names(life: Path) -> list[str]:
    return [line.split()[1] for line in life.read_text().splitlines() if line.startswith("start")]


def test_noop_reapply_writes_nothing_and_counts_every_step(tmp_path, env_root):
    life = tmp_path / "life.txt"
    text = COMMON + server("s", 70, life) + workload(runs=2) + '''
experiment "e" {
  host     = host.a
  stack    = stack.sys
  server   = server.s
  workload = workload.w
  assert "some" { tps > 0 }
}
'''
    _, first, state = apply_spec(tmp_path, text, env_root)
    assert first.exit_code() == 0, failures(first)
    folders = sorted((tmp_path / ".specdsl" / "runs").iterdir())
    plan, again, state2 = apply_spec(tmp_path, text, env_root)
    assert again.exit_code() == 0
    assert again.launches == 0
    assert state2.serial == state.serial  # nothing new was decided: nothing written
    assert sorted((tmp_path / ".specdsl" / "runs").iterdir()) == folders
    statuses = {o.addr: o.status for o in again.outcomes}
    assert len(statuses) == len(plan.changes)
    assert statuses["benchmark.e"] is Status.REUSED and statuses["check.e.some"] is Status.COMPLETED


def test_failed_launch_abandons_its_dependants_once_and_the_rest_goes_on(tmp_path, env_root):
    life = tmp_path / "life.txt"
    # runs = 2: a promotion needs a gating check its runs can decide (one run cannot)
    text = COMMON + server("broken", 1, life, "--fail-start") + server("fine", 2, life) + workload(runs=2) + '''
experiment "bad" {
  host     = host.a
  stack    = stack.sys
  server   = server.broken
  workload = workload.w
  assert "ok" { tps > 0 }
  promote  = "t"
}
experiment "good" {
  host     = host.a
  stack    = stack.sys
  server   = server.fine
  workload = workload.w
}
'''
    _, result, state = apply_spec(tmp_path, text, env_root)
    assert result.exit_code() == 5
    failed = outcome(result, "launch.broken")
    assert failed.status is Status.FAILED and "exited with code 3" in failed.detail
    assert "weights are missing" in failed.detail  # the log's last lines
    for addr in ("benchmark.bad", "check.bad.ok", "promote.bad"):
        o = outcome(result, addr)
        assert (o.status, o.reason, o.root) == (Status.SKIPPED, Reason.UPSTREAM_FAILED, "launch.broken"), o
        assert o.detail == "skipped because launch.broken failed"
    assert outcome(result, "benchmark.good").status is Status.COMPLETED
    assert state.baseline("t") is None
    assert [r.status for r in state.runs if r.step == "launch.broken"] == ["failed"]


def test_stop_during_a_benchmark_is_an_interrupted_run(tmp_path, env_root):
    life = tmp_path / "life.txt"
    text = COMMON + server("s", 5, life) + workload(sleep=30, runs=1) + '''
experiment "e" {
  host     = host.a
  stack    = stack.sys
  server   = server.s
  workload = workload.w
}
'''
    stop = threading.Event()
    hooks = Recording()
    hooks.on_start = lambda addr: addr == "benchmark.e" and threading.Timer(0.5, stop.set).start()
    _, result, state = apply_spec(tmp_path, text, env_root, hooks=hooks, stop=stop)
    assert result.interrupted and result.exit_code() == 130
    o = outcome(result, "benchmark.e")
    assert (o.status, o.reason) == (Status.INTERRUPTED, Reason.CANCELLED)
    assert [r.status for r in state.runs if r.step == "benchmark.e"] == ["interrupted"]
    assert not state.servers
    assert len(lives(life)) == 1  # the server was stopped
    assert not [p for p in os.popen("ps -eo args").read().splitlines() if str(life) in p]


def test_plan_sees_an_environment_the_cache_holds_although_state_does_not(tmp_path, env_root):
    life = tmp_path / "life.txt"
    text = COMMON + server("s", 9, life) + workload(runs=1) + '''
experiment "e" {
  host     = host.a
  stack    = stack.sys
  server   = server.s
  workload = workload.w
}
'''
    first_dir, second_dir = tmp_path / "one", tmp_path / "two"
    first_dir.mkdir()
    second_dir.mkdir()
    apply_spec(first_dir, text, env_root)
    plan, result, _ = apply_spec(second_dir, text, env_root)  # a new state folder, the same environment cache
    change = plan.change("provision.sys")
    assert (change.action.word, change.reason) == ("reuse", "environment exists")
    assert outcome(result, "provision.sys").status is Status.REUSED


def test_more_runs_accumulate_and_a_longer_timeout_reruns_nothing(tmp_path, env_root):
    life = tmp_path / "life.txt"
    spec = COMMON + server("s", 11, life) + workload(runs=2) + '''
experiment "e" {
  host     = host.a
  stack    = stack.sys
  server   = server.s
  workload = workload.w
}
'''
    _, first, state = apply_spec(tmp_path, spec, env_root)
    assert first.exit_code() == 0, failures(first)
    assert state.result(state.runs_of("benchmark.e")[-1].identity).runs == 2
    # a longer timeout changes nothing measured: reused
    plan, again, _ = apply_spec(tmp_path, spec.replace("timeout = 60s", "timeout = 90s"), env_root)
    assert plan.change("benchmark.e").action.word == "reuse" and again.launches == 0
    # two more runs wanted: only those two are made, the result holds four
    plan, more, state = apply_spec(tmp_path, spec.replace("runs = 2", "runs = 4"), env_root)
    reason = plan.change("benchmark.e").reason  # then the command workload's argv, as it will run
    assert reason.startswith("2 more runs needed (2 recorded, 4 wanted); runs ") and "walk_probe.py" in reason
    assert more.exit_code() == 0, failures(more)
    result = state.result(state.runs_of("benchmark.e")[-1].identity)
    assert result.runs == 4
    logs = sorted(p.name for p in (tmp_path / ".specdsl" / result.folder).glob("command-run-*.log"))
    assert logs == ["command-run-0.log", "command-run-1.log"]  # this apply made two runs
    import json
    doc = json.loads((tmp_path / ".specdsl" / result.folder / "result.json").read_text())
    assert [r["index"] for r in doc["runs"]] == [0, 1, 2, 3]


def test_console_keeps_cell_names_that_look_like_markup():
    import io

    from specdsl.apply import Outcome
    from specdsl.cli.apply_view import ConsoleHooks

    out = io.StringIO()
    hooks = ConsoleHooks(stream=out)
    addr = "benchmark.sweep[backend=fa3,concurrency=16]"
    hooks.start(addr, "benchmark")
    hooks.finish(Outcome(addr, "benchmark", Status.FAILED, Reason.ERROR, "boom [x=1]"))
    hooks.close()
    assert out.getvalue().count(addr) == 2 and "boom [x=1]" in out.getvalue()


def _drifting(name: str, speed: float, life: Path, epoch: float, seed: int) -> str:
    return server(name, speed, life, "--drift", "0.05", "--epoch", f"{epoch:.3f}", "--noise", "0.02", "--seed", str(seed))


def _pair_spec(base: str, cand: str, margin: str, runs: int = 3) -> str:
    return COMMON + base + cand + workload(runs=runs) + f'''
experiment "base" {{
  host     = host.a
  stack    = stack.sys
  server   = server.b
  workload = workload.w
}}
experiment "cand" {{
  host     = host.a
  stack    = stack.sys
  server   = server.c
  workload = workload.w
  baseline = experiment.base
  assert "faster" {{ tps >= baseline.tps * {margin} }}
}}
'''


def test_aa_pairs_under_drift_never_pass_a_margin_they_do_not_have(tmp_path, env_root):
    # the same server on both arms, a machine that speeds up 5% a second and
    # 2% noise: the candidate is not 5% faster, whatever order the arms ran in
    import time

    life = tmp_path / "life.txt"
    epoch = time.time()
    text = _pair_spec(_drifting("b", 100, life, epoch, 1), _drifting("c", 100, life, epoch, 2), "1.05")
    _, result, state = apply_spec(tmp_path, text, env_root)
    verdict = next(v for _, v in result.verdicts if v.name == "faster")
    assert verdict.status in ("fail", "inconclusive"), verdict.detail
    assert verdict.decision.low < 1.05 or verdict.decision.high < 1.05
    assert 0.9 < verdict.decision.estimate < 1.1, verdict.detail  # drift cancelled by the ABBA order


def test_a_known_effect_passes_with_its_interval_and_the_json_says_so(tmp_path, env_root):
    import json
    import subprocess
    import time

    life = tmp_path / "life.txt"
    epoch = time.time()
    text = _pair_spec(_drifting("b", 100, life, epoch, 3), _drifting("c", 130, life, epoch, 4), "1.1")
    (tmp_path / "walk.spec").write_text(text)
    env = dict(os.environ, SPECDSL_ENV_ROOT=str(env_root))
    proc = subprocess.run([sys.executable, "-m", "specdsl.cli.main", "apply", "walk.spec", "--yes", "--json"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["format_version"] == 1 and doc["exit_code"] == 0
    (verdict,) = [v for v in doc["verdicts"] if v["assertion"] == "faster"]
    ev = verdict["evidence"]
    assert verdict["verdict"] == "pass" and verdict["gating"] is True
    assert ev["low"] > 1.1 and ev["high"] is None and ev["n"] >= 3 and ev["threshold"] == 1.1
    assert 1.2 < ev["estimate"] < 1.4
    (bench,) = [b for b in doc["benchmarks"] if b["addr"] == "benchmark.cand"]
    assert [[blk["arm"] for blk in p["blocks"]] for p in bench["pairs"]][:3] == [["A", "B"], ["B", "A"], ["B", "A"]]
    assert {s["status"] for s in doc["steps"]} <= {"completed", "reused"}


def test_calibrate_records_the_noise_and_plan_prints_the_detectable_effect(tmp_path, env_root):
    import subprocess
    import time

    life = tmp_path / "life.txt"
    epoch = time.time()
    # no block declared: calibrate runs 2 on every launch, and its suggestion is the walk's
    text = _pair_spec(_drifting("b", 100, life, epoch, 5), _drifting("c", 100, life, epoch, 6), "1.03").replace("  block = 1\n", "")
    (tmp_path / "walk.spec").write_text(text)
    env = dict(os.environ, SPECDSL_ENV_ROOT=str(env_root))

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "specdsl.cli.main", *args], cwd=tmp_path, capture_output=True, text=True,
                              timeout=300, env=env)

    before = cli("plan", "--no-refresh", "walk.spec")
    assert "noise of tps unknown: measure it with `specdsl calibrate cand walk.spec`" in before.stdout, before.stdout
    done = cli("calibrate", "cand", "walk.spec", "--pairs", "4", "--yes")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Noise of cand (4 A/A pairs" in done.stdout and "tps" in done.stdout
    state = load_state(tmp_path / ".specdsl")
    (run,) = [r for r in state.runs if r.step == "calibrate.cand"]
    sd = dict(run.metrics)["noise.tps"]
    assert 0.0 < sd < 0.2 and run.runs == 4
    assert len(lives(life)) == 8  # 4 pairs of two fresh launches each, and no separate run of the twin
    # launch and run noise apart (2 runs on every launch), the costs, and the runs per launch they suggest
    metrics = dict(run.metrics)
    assert metrics["noise_run.tps"] >= 0 and metrics["noise_launch.tps"] >= 0
    assert metrics["cost.launch_s"] > 0 and metrics["cost.run_s"] > 0
    assert 1 <= metrics["block.suggested"] <= 16 and metrics["block.suggested"] == int(metrics["block.suggested"])
    assert "Launch and run noise apart" in done.stdout and "Runs per launch that buy the most precision" in done.stdout
    from specdsl.plan.looks import block_of

    cand = resolve_file(tmp_path / "walk.spec").config.experiment("cand")
    # the suggestion, at most `runs` (plan.economy: `runs` counts the runs of each arm)
    assert cand.workload.block is None and block_of(cand.workload, state, "cand") == min(int(metrics["block.suggested"]), 3)
    assert block_of(attrs.evolve(cand.workload, block=3), state, "cand") == 3  # a declared block wins
    after = cli("plan", "--no-refresh", "walk.spec")
    assert "detectable effect" in after.stdout and f"noise {sd:.3g}" in after.stdout, after.stdout


def test_an_undecided_budget_is_inconclusive_and_says_what_a_decision_needs(tmp_path, env_root):
    import time

    life = tmp_path / "life.txt"
    epoch = time.time()
    # 1% faster against a 1% margin, 5% noise, no adaptive budget: undecidable in 3 pairs
    base = server("b", 100, life, "--noise", "0.05", "--seed", "7")
    cand = server("c", 101, life, "--noise", "0.05", "--seed", "8")
    text = _pair_spec(base, cand, "1.01", runs=3).replace("  runs = 3\n", "  runs = 3\n  max_runs = 3\n")
    _, result, state = apply_spec(tmp_path, text, env_root)
    verdict = next(v for _, v in result.verdicts if v.name == "faster")
    assert verdict.status == "inconclusive" and result.exit_code() == 4, verdict.detail
    assert "a decision would need" in verdict.detail and "pairs" in verdict.detail
    # the pairs so far are recorded
    assert state.result(state.runs_of("benchmark.cand")[-1].identity).runs == 3
    # with the verdict, the numbers a later plan reads back: n and the noise of the pairs' log ratios
    (vrun,) = state.runs_of("check.cand.faster")
    assert vrun.verdict == verdict and vrun.verdict.decision.n == 3 and vrun.verdict.noise > 0
    # the plan after it: base has no benchmark of its own (measured as the pairs' arm A); the
    # verdict is undecided, nothing was promoted, and it says what would decide
    plan = make_plan_again(tmp_path, text, env_root)
    assert "benchmark.base" not in [c.addr for c in plan.changes] and not plan.has_changes and plan.pending
    (undecided,) = plan.undecided
    assert undecided.check == "check.cand.faster" and undecided.pairs == 3 and undecided.run == vrun.id
    assert "raise `max_runs` of workload w to" in undecided.advice or "no affordable amount" in undecided.advice
    # report (and diff) read base from the pairs' A arm
    from specdsl.report import gather

    view = gather(state, tmp_path / ".specdsl", "base")
    assert view.name == "cand" and view.notes[0].startswith("base has no benchmark of its own: it was measured as the "
                                                            "baseline arm (A) of cand's pairs"), view.notes


def test_an_undecided_comparison_continues_when_max_runs_is_raised_or_more_is_asked(tmp_path, env_root):
    """Evidence grows: raising `max_runs` after an undecided apply keeps every
    recorded pair (same identity) and launches servers for the new pairs
    only; `--more N` goes on past `max_runs` the same way. The looks keep
    the first apply's horizon (docs/verdicts.md: the reserve)."""
    import json

    life = tmp_path / "life.txt"
    base = server("b", 100, life, "--noise", "0.05", "--seed", "7")
    cand = server("c", 101, life, "--noise", "0.05", "--seed", "8")
    text = _pair_spec(base, cand, "1.01", runs=3).replace("  runs = 3\n", "  runs = 3\n  max_runs = 3\n")
    plan, first, state = apply_spec(tmp_path, text, env_root)
    assert first.exit_code() == 4, failures(first)
    run1 = state.result(state.runs_of("benchmark.cand")[-1].identity)
    doc1 = json.loads((tmp_path / ".specdsl" / run1.folder / "result.json").read_text())
    assert doc1["looks"]["horizon"] == 3 and len(doc1["pairs"]) == 3 and len(doc1["launches"]) == 6
    # nothing changed, the budget is spent: nothing to run
    again = make_plan_again(tmp_path, text, env_root)
    assert again.change("benchmark.cand").action.word == "reuse"
    # raise the budget: the same benchmark goes on
    raised = text.replace("  max_runs = 3\n", "  max_runs = 5\n")
    plan = make_plan_again(tmp_path, raised, env_root)
    change = plan.change("benchmark.cand")
    assert change.action.word == "run" and change.identity == run1.identity, change.reason
    assert "continue: check.cand.faster undecided at 3 pairs" in change.reason and "kept); up to 2 more pairs, 4 launches at most" in change.reason
    before = len(lives(life))
    _, second, state = apply_spec(tmp_path, raised, env_root)
    run2 = state.result(run1.identity)
    doc2 = json.loads((tmp_path / ".specdsl" / run2.folder / "result.json").read_text())
    new_pairs = len(doc2["pairs"]) - 3
    assert 1 <= new_pairs <= 2 and doc2["continued"] == 3, doc2["pairs"]
    assert second.launches == 2 * new_pairs and len(lives(life)) - before == 2 * new_pairs  # only the new pairs launched
    # every recorded pair is kept as it was: its runs, their values and their launches
    runs1 = {r["index"]: r["metrics"] for r in doc1["runs"]}
    runs2 = {r["index"]: r["metrics"] for r in doc2["runs"]}
    assert doc2["pairs"][:3] == doc1["pairs"] and all(runs2[i] == runs1[i] for i in runs1)
    assert doc2["launches"][:6] == doc1["launches"] and doc2["looks"] == doc1["looks"]
    verdict = next(v for _, v in second.verdicts if v.name == "faster")
    assert verdict.decision.n == 3 + new_pairs, verdict.detail
    # --more 1: one pair past max_runs, kept the same way, while undecided; a decided one goes no further
    spec = tmp_path / "walk.spec"
    graph = build_graph(resolve_file(spec).config, spec_dir=tmp_path)
    st = load_state(tmp_path / ".specdsl")
    more = make_plan(graph, st, Refresh.from_state(st), spec=str(spec), spec_digest="d", more=1).change("benchmark.cand")
    if verdict.status == "inconclusive":  # (5% noise against a 1% margin: the likely end)
        assert more.action.word == "run" and more.identity == run1.identity, more.reason
        assert "up to 1 more pairs (--more 1), 2 launches at most" in more.reason, more.reason
    else:
        assert more.action.word == "reuse", more.reason


TRACK_PAIRED = '''
experiment "seed" {
  host     = host.a
  stack    = stack.sys
  server   = server.seed
  workload = workload.w
  assert "answers" { tps > 0 }
  promote  = "t"
}
experiment "up" {
  host     = host.a
  stack    = stack.sys
  server   = server.up
  workload = workload.w
  baseline = track.t
  assert "faster" { tps >= baseline.tps * 1.5 }
  promote  = "t"
}
'''


def test_a_track_baseline_is_rebuilt_from_its_lock_and_measured_beside_the_candidate(tmp_path, env_root):
    import json

    from specdsl.plan.render import render_text

    life = tmp_path / "life.txt"
    text = COMMON + server("seed", 50, life) + server("up", 100, life) + workload(runs=2) + TRACK_PAIRED
    # no lock yet: up's comparison is an ERROR naming the missing lock; seed is promoted
    plan, first, state = apply_spec(tmp_path, text, env_root)
    assert "no stack lock to rebuild it from" in plan.change("check.up.faster").reason
    [faster] = [v for _, v in first.verdicts if v.name == "faster"]
    assert faster.status == "error" and "stacks/t.lock.toml is missing" in faster.detail, faster.detail
    assert first.exit_code() == 4 and state.baseline("t").experiment == "seed", failures(first)
    # the lock exists: the track's promoted configuration (seed's server, as
    # the lock records it) is rebuilt and measured beside up, ABBA, on up's host
    before = len(lives(life))
    plan, second, state = apply_spec(tmp_path, text, env_root)
    reason = plan.change("benchmark.up").reason
    assert "paired with track t rebuilt from stacks/t.lock.toml (two fresh launches a pair): 3 pairs to the first look, 6 launches, 6 runs" in reason, reason
    assert plan.change("launch.seed").action.word == "reuse"  # seed's own results are recorded: its server is not started
    [faster] = [v for _, v in second.verdicts if v.name == "faster"]
    assert faster.status == "pass" and faster.decision.n == 3 and "paired t on log ratios" in faster.detail, faster.detail
    assert second.launches == 6  # 3 pairs, each a fresh launch of the track's arm and of up
    names = [n.split("@")[0] for n in _names(life)[before:]]
    assert [sorted(names[k:k + 2]) for k in (0, 2, 4)] == [["100", "50"]] * 3, names
    run = state.result(state.runs_of("benchmark.up")[-1].identity)
    doc = json.loads((tmp_path / ".specdsl" / run.folder / "result.json").read_text())
    assert doc["arms"] == {"A": "track.t", "B": "up"}
    assert state.baseline("t").experiment == "up", failures(second)
    lock = (tmp_path / "stacks" / "t.lock.toml").read_text()
    assert "[previous]" in lock and 'experiment = "seed"' in lock
    # up is the track now: its arm stays what its promotion replaced (the
    # lock's [previous]), so nothing changes and nothing is written
    plan = make_plan_again(tmp_path, text, env_root)
    assert not plan.has_changes, render_text(plan)
    _, third, again = apply_spec(tmp_path, text, env_root)
    assert third.exit_code() == 0 and third.launches == 0 and again.serial == state.serial


def make_plan_again(folder: Path, text: str, env_root: Path):
    spec = folder / "walk.spec"
    spec.write_text(text)
    resolved = resolve_file(spec)
    graph = build_graph(resolved.config, spec_dir=folder)
    state = load_state(folder / ".specdsl")
    registry = HostRegistry(env_root=env_root)
    wanted = {st.identity: st.payload["host"] for st in graph.steps.values() if st.kind == "provision"}
    fresh = refresh(state, registry, {h.name: h for h in resolved.config.hosts}, wanted)
    return make_plan(graph, state, fresh, spec=str(spec), spec_digest="d")


def test_a_cold_first_run_is_flagged_in_the_verdict(tmp_path, env_root):
    # the candidate's server answers its first run at a third of its speed (a
    # warm-up the workload's warm-up did not cover): the interval widens past
    # the margin and the verdict says which run did it
    life = tmp_path / "life.txt"
    text = _pair_spec(server("b", 100, life), server("c", 130, life, "--cold", "0.33"), "1.1", runs=4)
    _, result, _ = apply_spec(tmp_path, text.replace("  runs = 4\n", "  runs = 4\n  max_runs = 4\n"), env_root)
    verdict = next(v for _, v in result.verdicts if v.name == "faster")
    assert verdict.status == "inconclusive", verdict.detail
    assert "outlier in arm B (the candidate): pair 1 (42.9, x0.33 of the median 130" in verdict.detail, verdict.detail
    assert "arm A" not in verdict.detail  # the baseline's runs agree: none flagged


def test_a_bad_dataset_file_is_a_located_error_before_any_server_starts(tmp_path):
    import subprocess

    life = tmp_path / "life.txt"
    text = COMMON + server("s", 10, life) + '''
workload "w" {
  dataset  = "prompts.jsonl"
  requests = 2
}
experiment "e" {
  host     = host.a
  stack    = stack.sys
  server   = server.s
  workload = workload.w
}
'''
    (tmp_path / "walk.spec").write_text(text)
    elsewhere = tmp_path / "elsewhere"  # a relative dataset is the spec's folder's, not the current directory's
    elsewhere.mkdir()
    for content, why in ((None, "No such file or directory"), ("", "has no prompts"), ('{"prompt": "a"}\n{oops\n', "prompts.jsonl:2: not JSON")):
        if content is not None:
            (tmp_path / "prompts.jsonl").write_text(content)
        proc = subprocess.run([sys.executable, "-m", "specdsl.cli.main", "apply", str(tmp_path / "walk.spec"), "--yes"],
                              cwd=elsewhere, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        line = text[:text.index('workload "w"')].count("\n") + 1
        assert f"walk.spec:{line}:1: error: Workload `w`: its dataset cannot be used" in proc.stderr, proc.stderr
        assert why in proc.stderr, proc.stderr
        assert not life.exists()  # no server was started
    (tmp_path / "prompts.jsonl").write_text('{"prompt": "a b c"}\n')
    plan = subprocess.run([sys.executable, "-m", "specdsl.cli.main", "plan", str(tmp_path / "walk.spec"), "--no-refresh"],
                          cwd=elsewhere, capture_output=True, text=True, timeout=120)
    assert plan.returncode == 0, plan.stderr


def _measured(values, **kw):
    from specdsl.apply import judge
    from specdsl.apply.checks import Results

    runs = tuple(Results(({"output_throughput": v},), {}, {}) for v in values)
    mine = Results(tuple({"output_throughput": v} for v in values), {}, {})
    return judge.Measured(mine, None, candidate_runs=runs, **kw)


def test_no_gating_verdict_on_client_bound_runs_and_a_missing_server_metric_is_named(tmp_path):
    from specdsl.apply import judge

    spec = tmp_path / "j.spec"
    spec.write_text(COMMON + server("s", 1, tmp_path / "life.txt") + '''
workload "w" { runs = 3 }
experiment "e" {
  stack    = stack.sys
  server   = server.s
  workload = workload.w
  assert "fast"   { output_throughput >= 90 }
  assert "accept" { spec_accept_length >= 2 }
  assert "up"     { output_throughput > 0 or output_throughput < 0 }
}
''')
    exp = resolve_file(spec).config.experiments[0]
    clean = judge.judge_experiment(exp, _measured([100, 101, 99]), {})
    assert clean["fast"].status == "pass"
    # the engine exported no acceptance length: ERROR naming it, not a silent inconclusive
    assert clean["accept"].status == "error" and "did not export `spec_accept_length`" in clean["accept"].detail
    doc = {"runs": [{"index": 0, "warnings": []}, {"index": 1, "warnings": ["client-bound: the client's event loop was busy 97%"]}]}
    bound = judge.judge_experiment(exp, _measured([100, 101, 99], client_bound=judge.client_bound_of(doc)), {})
    assert bound["fast"].status == "error", bound["fast"]
    assert bound["fast"].detail.startswith("not decided: the client may have limited the numbers (run 1: client-bound: "
                                            "the client's event loop was busy 97%)")
    assert bound["up"].status == "pass"  # decided exactly, not from the measured numbers' level
    assert judge.client_bound_of({"runs": [{"index": 0, "warnings": ["no server metrics: unavailable: GET /metrics answered http 404"]}]}) == ""


