"""`specdsl report`, from real applies: two servers of known timing (the
streaming test double tests/bench/timed_server.py: TTFT 60 ms / ITL 60 ms
against 30 ms / 30 ms, then 25 ms; gaps long enough that the load
generator's timer lag on a busy machine stays under its client-bound
limit, a tenth of the ITL) measured in pairs by the built-in load
generator, promoted twice to a track, plus a three-cell matrix; the pages
are opened in headless Chromium and every plot is found, pixel for pixel,
in its screenshot."""

from __future__ import annotations

import base64
import html
import io
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from specdsl.cli.main import main
from specdsl.state import load_state

HERE = Path(__file__).parent
TIMED = str(HERE.parent / "bench" / "timed_server.py")
FAILING = str(HERE.parent / "apply" / "walk_double.py")


def server(name: str, ttft: float, itl: float, extra: str = "") -> str:
    argv = [sys.executable, TIMED, "--port", "{port}", "--ttft-ms", str(ttft), "--itl-ms", str(itl)]
    items = ", ".join(f'"{a}"' for a in argv)
    return f'server "{name}" {{\n  engine = "command"\n  model = "m"\n  command = [{items}]\n  ready_timeout = 30s\n{extra}}}\n'


SPEC = '''host "a" {{}}
stack "sys" {{
  python = "system"
}}
{servers}
workload "w" {{
  endpoint    = "completions"
  input_len   = 16
  output_len  = 8
  requests    = 8
  concurrency = 4
  runs        = 2
  block       = 1
}}
experiment "base" {{
  host     = host.a
  stack    = stack.sys
  server   = server.slow
  workload = workload.w
}}
experiment "cand" {{
  host     = host.a
  stack    = stack.sys
  server   = server.fast
  workload = workload.w
  baseline = experiment.base
  assert "faster" {{ output_throughput >= baseline.output_throughput * 1.2 }}
  assert "ttft"   {{ p99(ttft) <= p99(baseline.ttft) * 1.0 }}
  promote  = "t"
}}
experiment "grid" {{
  matrix   = {{ itl = [20, 40, 80] }}
  host     = host.a
  stack    = stack.sys
  server   = server.slow {{ args = {{ itl-ms = matrix.itl }} }}
  workload = workload.w
  assert "no-failures" {{ failed == 0 }}
}}
'''


def spec(fast_itl: float) -> str:
    return SPEC.format(servers=server("slow", 60, 60) + server("fast", 30, fast_itl, '  env = { REPORT_ARM = "fast" }\n'))


def apply(folder: Path, text: str, env_root: Path) -> subprocess.CompletedProcess:
    (folder / "walk.spec").write_text(text)
    env = dict(os.environ, SPECDSL_ENV_ROOT=str(env_root))
    return subprocess.run([sys.executable, "-m", "specdsl.cli.main", "apply", "walk.spec", "--yes"], cwd=folder,
                          capture_output=True, text=True, timeout=300, env=env)


@pytest.fixture(scope="module")
def envs(tmp_path_factory):
    return tmp_path_factory.mktemp("envs")


@pytest.fixture(scope="module")
def applied(tmp_path_factory, envs):
    """A state of two real applies: cand promoted to track t, then a faster
    cand promoted again; and the grid's three cells."""
    folder = tmp_path_factory.mktemp("applied")
    for itl in (30, 25):
        done = apply(folder, spec(itl), envs)
        assert done.returncode == 0, done.stdout + done.stderr
    return folder


def report(folder: Path, *args: str) -> tuple[int, str, str]:
    import contextlib

    out, err = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["report", *args])
    finally:
        os.chdir(cwd)
    return code, out.getvalue(), err.getvalue()


def embedded_plots(page: str) -> dict[str, bytes]:
    found = re.findall(r'<img class="plot" data-plot="([^"]+)" alt="[^"]*" src="data:image/png;base64,([A-Za-z0-9+/=]+)">', page)
    return {name: base64.b64decode(data) for name, data in found}


def assert_offline(page: str) -> None:
    assert "<script" not in page.lower()
    # nothing is fetched: every src is inline data, no stylesheet or link points anywhere
    assert re.findall(r'src="(?!data:image/png;base64,)', page) == []
    assert "<link" not in page and "@import" not in page and "url(" not in page


def not_blank(rgb) -> None:
    """A drawn image: several colors and real variance, not one flat fill."""
    import numpy as np

    arr = np.asarray(rgb, dtype=float)
    inked = (arr < 245).any(axis=2).mean()
    assert inked > 0.01, f"almost nothing drawn: {inked:.2%} of the pixels"
    colors = np.unique(packed(np.asarray(rgb)))
    assert len(colors) > 16, f"only {len(colors)} colors"
    assert (arr.mean(axis=2) < 128).mean() > 0.005, "almost no dark pixels: no axes, text or marks"


def packed(rgb):
    """Each pixel's color as one integer."""
    import numpy as np

    rgb = rgb.astype(np.uint32)
    return (rgb[..., 0] << 16) | (rgb[..., 1] << 8) | rgb[..., 2]


def screenshot(page: Path, out: Path, height: int) -> "Image":
    from PIL import Image

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium, "chromium is not installed: `apt-get install -y chromium fonts-dejavu-core` (.ci/run does)"
    argv = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--force-device-scale-factor=1",
            "--force-color-profile=srgb", f"--user-data-dir={out.parent / 'chromium-profile'}", "--no-first-run",
            f"--screenshot={out}", f"--window-size=1200,{height}", page.resolve().as_uri()]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        log, _ = proc.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # its zygote and helpers, if any outlived it
        except ProcessLookupError:
            pass
    assert out.exists(), log.decode(errors="replace")[-2000:]
    return Image.open(out).convert("RGB")


def locate(shot, plot) -> tuple[int, int]:
    """Where `plot` is drawn in `shot`, pixel for pixel: (x, y) of its
    top-left corner. AssertionError when it is not there."""
    import numpy as np

    s = np.asarray(shot)
    p = np.asarray(plot)
    h, w = p.shape[:2]
    # the row of the plot with the most colors identifies it
    colors = packed(p)
    r = max(range(h), key=lambda i: len(np.unique(colors[i])))
    needle = p[r].tobytes()
    for y in range(r, s.shape[0] - (h - r) + 1):
        at = s[y].tobytes().find(needle)
        while at >= 0 and at % 3:
            at = s[y].tobytes().find(needle, at + 1)
        if at >= 0:
            x, top = at // 3, y - r
            region = s[top:top + h, x:x + w]
            if region.shape == p.shape and (region == p).all(axis=2).mean() > 0.99:
                return x, top
    raise AssertionError("the plot is not drawn on the page")


def check_in_browser(html_file: Path, plots: dict[str, bytes], height: int) -> "Image":
    from PIL import Image

    shot = screenshot(html_file, html_file.with_suffix(".png"), height)
    not_blank(shot)
    for name, png in plots.items():
        image = Image.open(io.BytesIO(png)).convert("RGB")
        not_blank(image)
        try:
            x, y = locate(shot, image)
        except AssertionError:
            raise AssertionError(f"plot {name} ({image.size}) is not drawn in the {shot.size} screenshot of {html_file}") from None
        not_blank(shot.crop((x, y, x + image.width, y + image.height)))
    return shot


def test_an_experiment_report_shows_verdicts_runs_latencies_and_differences(applied, tmp_path):
    out = tmp_path / "cand.html"
    code, stdout, stderr = report(applied, "cand", "walk.spec", "-o", str(out))
    assert code == 0, stderr
    assert f"Report of experiment cand: {out}" in stdout and "3 plots" in stdout
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    page = out.read_text()
    assert_offline(page)
    state = load_state(applied / ".specdsl")
    # the verdict table: each check with its recorded line, ratio, interval, threshold, verdict and n
    for check in ("faster", "ttft"):
        (vrun,) = [r for r in state.runs if r.step == f"check.cand.{check}"][-1:]
        detail = vrun.verdict.detail
        assert detail.startswith("ratio ") and detail in html.unescape(page)
        estimate, interval = re.match(r"ratio (\S+) (\S+ \S+)", detail).groups()
        row = re.search(rf"<tr class=\"pass\"><td>{check}</td>.*?</tr>", page).group(0)
        assert f">{estimate}<" in row and f">{interval}<" in row and ">PASS<" in row and "pairs<" in row
    assert "<code>output_throughput &gt;= baseline.output_throughput * 1.2</code>" in page
    # the runs in the order they ran: the arms of result.json's pairs, ABBA
    bench = state.result(state.step("benchmark.cand").identity)
    import json

    doc = json.loads((applied / ".specdsl" / bench.folder / "result.json").read_text())
    order = [b["arm"] for p in doc["pairs"] for b in p["blocks"] for _ in b["runs"]]
    shown = re.findall(r"<tr><td class=\"num\">\d+</td><td>([AB]): ", page)
    assert shown == order and order[:4] == ["A", "B", "B", "A"]
    # latencies of both arms, as the double served them: 60 ms against 30 ms to the first token
    p50 = {arm: float(v) for arm, v in re.findall(r"<td>TTFT \(ms\)</td><td>([AB]): \w+</td><td class=\"num\">\d+</td><td class=\"num\">([\d.]+)</td>", page)}
    assert p50["A"] >= 59.5 and 29.5 <= p50["B"] < p50["A"], p50
    assert "ITL (ms)" in page and "E2E latency (ms)" in page
    # the stack and server difference: the flag that differs
    assert re.search(r"<td>server</td><td>command</td>.*--itl-ms.*60.*--itl-ms.*25", page)
    # the diagnosis (specdsl.diagnose) ranks what differs: here the server's environment; on a
    # PASS they are differences, not causes: none marked as a fault
    assert "<h2>Diagnosis</h2>" not in page
    diagnosis = page[page.index("<h2>Differences between the arms, ranked</h2>"):]
    assert re.search(r"<td>env</td><td><code>REPORT_ARM</code></td><td>\(absent\)</td><td>fast</td>", diagnosis), diagnosis[:2000]
    assert "Every verdict passed: these are the differences between the arms" in diagnosis
    assert '<tr class="fail">' not in diagnosis.split("</table>")[0]
    # what a release needs beside the verdicts (issue 25): each figure says what it is, each
    # pair's ratio with its launches, the interval labelled as what it is, the workload, both
    # arms in full, host, version, identity, the command again, the promotion and why
    plain = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", re.sub(r'src="data:[^"]*"', "", page))).split())
    faster = re.search(r'<tr class="pass"><td>faster</td>.*?</tr>', page).group(0)
    assert "geometric mean of the pair ratios (candidate / baseline, " in faster
    level = re.search(r"one-sided, ([\d.]+)%", faster).group(1)  # Holm's level, or a look's boundary (adaptive pairs)
    assert f"one-sided {level}% confidence bound (the end that decided; the other end is open)" in faster
    assert "interval (one-sided)" not in page
    pairs = page[page.index('<h3 class="pairs" data-check="faster">'):]
    rows = re.findall(r'<tr><td class="num">(\d+)</td><td class="num">launch (\d+)</td><td class="num">launch (\d+)</td>'
                      r'<td class="num">([\d.]+)</td><td class="num">([\d.]+)</td><td class="num">([\d.]+)</td></tr>', pairs)
    launches = [(str(p["pair"] + 1), *(str(b["launch"]) for b in sorted(p["blocks"], key=lambda b: b["arm"]))) for p in doc["pairs"]]
    assert [r[:3] for r in rows[:len(launches)]] == launches
    for _, _, _, base, cand, ratio in rows[:len(launches)]:
        assert abs(float(cand) / float(base) / float(ratio) - 1) < 2e-3  # candidate / baseline, as shown
    import hashlib
    import math

    (faster_run,) = [r for r in state.runs if r.step == "check.cand.faster"][-1:]
    assert faster_run.verdict.status == "pass" and faster_run.verdict.decision.statistic == "ratio"
    estimate = faster_run.verdict.decision.estimate
    ratios = [float(r[5]) for r in rows[:len(launches)]]
    assert abs(math.exp(sum(map(math.log, ratios)) / len(ratios)) / estimate - 1) < 2e-3
    promotion = next(p for p in state.promotions if p.run == bench.id)
    # the bottom line first, in words a release note can quote: both arms' figures, the ratio with
    # its interval, every verdict, the promotion
    line = re.search(r'<p class="bottom-line"><b>Bottom line:</b> (.*?)</p>', page)
    assert line and page.index("bottom-line") < page.index("<h2>Verdicts</h2>")
    line = html.unescape(line.group(1))
    from statistics import median

    arm_runs = {a: [r["metrics"]["output_throughput"] for r in doc["runs"]
                    if any(r["index"] in b["runs"] and b["arm"] == a for p in doc["pairs"] for b in p["blocks"])] for a in "AB"}
    from specdsl.report.markup import num

    d = faster_run.verdict.decision
    assert line.startswith(f"cand {num(median(arm_runs['B']))} tok/s against base {num(median(arm_runs['A']))} tok/s "
                           f"(output_throughput, the median of each arm's runs, {bench.runs} pairs, paired); "
                           f"ratio x{num(d.estimate)}, {num(d.level * 100)}% interval [{num(d.low)}, ∞) over {d.n} pairs, "
                           "against faster's threshold >= 1.2; verdicts: faster PASS, ttft PASS; "
                           f"promoted: run {bench.id} became the baseline of track t"), line
    for fact in ("output_throughput (tok/s)", "p99 (ms)", "input_len 16", "output_len 8", "concurrency 4",
                 "server block as declared", "env.REPORT_ARM (absent) fast", "python system system",
                 "host block a", "machine this machine (no ssh)", "GPUs, driver none recorded", "specdsl that measured 0.1.0",
                 f"benchmark identity (digest of both arms' stacks, servers and the workload) {bench.identity}",
                 "spec sha256 " + hashlib.sha256((applied / "walk.spec").read_bytes()).hexdigest(),
                 "the spec as read now plans this same benchmark identity",
                 "command that reproduces the run specdsl apply walk.spec --target cand",
                 f"promoted: run {bench.id} became the baseline of track t", "every check passed (faster, ttft)"):
        assert fact in plain, fact
    assert "--itl-ms 25" in plain and "--itl-ms 60" in plain  # each arm's command line
    assert '"--itl-ms", "60"]' in plain and '"--itl-ms", "25"]' in plain  # each arm's server block as declared
    ids = re.sub(r"\b[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}\b|\b\d{8}T\d{6}Z-[0-9a-f]{8}\b", "", plain)
    # (without the lineage and run ids: a uuid whose first group reads 7398976e-1... is no number)
    assert not re.search(r"(?<![\w.-])\d+(?:\.\d+)?e[+-]\d", ids)  # no exponent anywhere
    plots = embedded_plots(page)
    assert sorted(plots) == ["intervals", "latency", "runs"]
    shot = check_in_browser(out, plots, 3600)
    assert shot.width == 1200
    # base has no benchmark of its own (only cand reads it, paired): its report is those pairs, saying so
    code, _, stderr = report(applied, "base", "walk.spec", "-o", str(tmp_path / "base.html"))
    assert code == 0, stderr
    base_page = html.unescape((tmp_path / "base.html").read_text())
    assert "base has no benchmark of its own: it was measured as the baseline arm (A) of cand's pairs" in base_page
    # said first, in the title and at the top: not cand's page unannounced
    assert "<title>Experiment base: measured as the baseline arm of cand</title>" in base_page
    assert base_page.index("measured only as the baseline arm (A) of cand's pairs") < base_page.index("Bottom line")


def test_the_output_defaults_to_the_name_in_the_current_folder(applied):
    out = applied / "cand.html"
    assert not out.exists()
    try:
        code, stdout, stderr = report(applied, "cand", "walk.spec")
        assert code == 0, stderr
        assert "Report of experiment cand: cand.html" in stdout and out.read_text().startswith("<!DOCTYPE html>")
    finally:
        out.unlink(missing_ok=True)


def test_a_track_report_shows_every_promotion_and_the_latest_experiment(applied, tmp_path):
    out = tmp_path / "t.html"
    code, stdout, stderr = report(applied, "track.t", "--state", ".specdsl", "-o", str(out))
    assert code == 0, stderr
    page = out.read_text()
    assert_offline(page)
    state = load_state(applied / ".specdsl")
    promos = state.promotions_of("t")
    assert len(promos) == 2
    for p in promos:  # each promotion with its run and headline metric
        value = state.run(p.run).metric("output_throughput")
        assert f"<code>{p.run}</code></td><td class=\"num\">{value:.4g}</td>" in page
    assert page.index(promos[0].run) < page.index(promos[1].run)  # oldest first
    assert "Current stack lock" in page and "resolved packages" in page
    assert "The latest promotion: experiment cand" in page
    plots = embedded_plots(page)
    assert sorted(plots) == ["intervals", "latency", "runs", "track"]
    check_in_browser(out, plots, 6000)


def test_a_sweep_report_is_one_summary_and_a_few_plots(applied, tmp_path):
    out = tmp_path / "grid.html"
    code, _, stderr = report(applied, "grid", "walk.spec", "-o", str(out))
    assert code == 0, stderr
    page = out.read_text()
    assert_offline(page)
    assert "Sweep grid: 3 cells" in page and "3 completed" in page and "verdicts: 3 pass" in page
    rows = re.findall(r"<tr><td>(\d+)</td><td>completed</td><td class=\"num\">([\d.]+)</td>", page)
    # best first: the cell with the shortest inter-token gap streams fastest
    assert [r[0] for r in rows] == ["20", "40", "80"], rows
    plots = embedded_plots(page)
    assert sorted(plots) == ["axis-itl", "sweep"]
    check_in_browser(out, plots, 1600)


def test_a_failed_apply_shows_what_failed_and_why(tmp_path, envs):
    argv = [sys.executable, FAILING, "{port}", "--speed", "1", "--life", str(tmp_path / "life"), "--fail-start"]
    broken = 'server "fast" {\n  engine = "command"\n  model = "m"\n  command = [' + ", ".join(f'"{a}"' for a in argv) + "]\n}\n"
    text = SPEC.format(servers=server("slow", 60, 60) + broken).split('experiment "grid"')[0]
    done = apply(tmp_path, text, envs)
    assert done.returncode == 5, done.stdout + done.stderr
    out = tmp_path / "cand.html"
    code, _, stderr = report(tmp_path, "cand", "-o", str(out))
    assert code == 0 and "failed step" in stderr
    page = out.read_text()
    assert "What failed" in page and "This experiment has no benchmark result" in page
    assert "<b>benchmark.cand</b>: failed" in page and "weights are missing" in page and "exited with code 3" in page
    assert re.search(r"last lines of <code>runs/[^/]+/launch-1-B/server.log</code>", page)  # the arm that failed
    assert "No verdict: the checks of this experiment did not run" in page
    assert page.count("<b>benchmark.cand</b>") == 1


def test_bad_names_and_no_results_are_clear_errors_and_write_nothing(applied, tmp_path):
    from specdsl.state import RunRecord, State, locked, write_state

    out = tmp_path / "x.html"
    code, _, err = report(applied, "cnad", "walk.spec", "-o", str(out))
    assert code == 1 and "No experiment or track `cnad` recorded; did you mean `cand`?" in err and not out.exists()
    code, _, err = report(applied, "track.base", "walk.spec", "-o", str(out))
    assert code == 1 and "No track `base` recorded" in err and not out.exists()
    # an experiment whose benchmark never ran: what is recorded, and what to do
    state_dir = tmp_path / "idle"
    with locked(state_dir, "test") as lock:
        run = RunRecord(id="20260301T100000Z-aaaa0001", step="provision.sys", identity="p1", experiment="idle",
                        status="completed", started="2026-03-01T10:00:00Z")
        write_state(state_dir, State.new().with_run(run), lock=lock)
    code, _, err = report(tmp_path, "idle", "--state", str(state_dir), "-o", str(out))
    assert code == 1 and not out.exists()
    assert "No results of experiment `idle` recorded: its benchmark has not run (recorded steps: provision.sys)" in err
    code, _, err = report(tmp_path, "idle", "--state", str(tmp_path / "nowhere"), "-o", str(out))
    assert code == 1 and "No such state folder" in err and not out.exists()


def test_without_matplotlib_the_error_says_what_to_install(applied, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # not installed: importing it raises ImportError
    out = tmp_path / "x.html"
    code, _, err = report(applied, "cand", "walk.spec", "-o", str(out))
    assert code == 1 and "draws its plots with matplotlib, which is not installed here" in err and not out.exists()
