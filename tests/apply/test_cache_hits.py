"""A paired comparison whose arms ran at different prefix-cache hit rates
says so and is not decided (specdsl/apply/cache_hits.py, apply.judge):
its ratio and difference verdicts are ERROR with both arms' rates; the
same pairs at equal rates are decided; an arm without hit counters, or an
invalid run, changes nothing."""

from __future__ import annotations

from specdsl.apply import cache_hits, judge
from specdsl.resolve.resolver import resolve_file

SPEC = '''stack "s" {}
server "v" {
  engine = "command"
  model  = "m"
  command = ["srv", "{port}"]
}
workload "w" { runs = 4 }
experiment "base" {
  stack    = stack.s
  server   = server.v
  workload = workload.w
}
experiment "cand" {
  stack    = stack.s
  server   = server.v { args = { x = 1 } }
  workload = workload.w
  baseline = experiment.base
  assert "faster" { output_throughput >= baseline.output_throughput * 1.05 }
  assert "ttft"   { median_ttft_ms <= baseline.median_ttft_ms + 5ms }
  assert "floor"  { output_throughput >= 10 }
}
'''


def doc(a_rates, b_rates, a_tput=100.0, b_tput=150.0, invalid=()):
    """A paired result: pair k's arm A run at a_rates[k], arm B at b_rates[k]."""
    runs, pairs = [], []
    for k, (ra, rb) in enumerate(zip(a_rates, b_rates)):
        blocks = []
        for arm, rate, tput in (("A", ra, a_tput + k), ("B", rb, b_tput + k)):
            metrics = {"output_throughput": tput, "median_ttft_ms": 20.0}
            if rate is not None:
                metrics["prefix_cache_hit_rate"] = rate
            run = {"index": len(runs), "metrics": metrics, "samples": {}, "failures": {}, "records_file": ""}
            if run["index"] in invalid:
                run["invalid"] = "x"
            runs.append(run)
            blocks.append({"arm": arm, "runs": [run["index"]], "launch": len(runs) - 1})
        pairs.append({"pair": k, "blocks": blocks})
    return {"runs": runs, "pairs": pairs}


def verdicts(tmp_path, result):
    spec = tmp_path / "c.spec"
    spec.write_text(SPEC)
    exp = next(e for e in resolve_file(spec).config.experiments if e.name == "cand")
    base, cand, pairs = judge.blocks_of(result, {})
    return judge.judge_experiment(exp, judge.Measured(cand, base, pairs, cache_mismatch=cache_hits.mismatch(result)), {})


def test_arms_at_different_hit_rates_are_not_decided(tmp_path):
    result = doc([0.72, 0.70, 0.71, 0.73], [0.10, 0.12, 0.11, 0.10])
    rates = cache_hits.arm_rates(result)
    assert rates.keys() == {"A", "B"} and abs(rates["A"][0] - 0.715) < 1e-9 and abs(rates["B"][0] - 0.1075) < 1e-9
    assert rates["A"][1] == rates["B"][1] == 4
    got = verdicts(tmp_path, result)
    for name in ("faster", "ttft"):
        assert got[name].status == "error", got[name]
        assert got[name].detail.startswith("not decided: the arms ran at different prefix-cache hit rates: arm A 71.5% "
                                           "(4 runs), arm B 10.8% (4 runs), more than 2% apart")
    assert got["floor"].status == "pass"  # the candidate against a constant: the baseline's cache is not read


def test_equal_rates_decide_and_an_arm_without_counters_says_nothing(tmp_path):
    same = doc([0.50, 0.51, 0.50, 0.49], [0.50, 0.50, 0.51, 0.50])
    assert cache_hits.mismatch(same) == ""
    assert verdicts(tmp_path, same)["faster"].status == "pass"
    assert cache_hits.mismatch(doc([0.7] * 4, [None] * 4)) == ""  # arm B's engine reports no hits
    # the one run that differs is invalid: not read, so not compared
    mostly = doc([0.5, 0.5, 0.5, 0.5], [0.5, 0.5, 0.5, 0.0], invalid={7})
    assert cache_hits.mismatch(mostly) == ""
