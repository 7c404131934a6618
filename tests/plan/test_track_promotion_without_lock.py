"""An experiment that compares with a track that has no stack lock and
promotes: its baseline checks can only be ERROR and its promotion never
happen, a located error at plan; unless another experiment of the spec
gives the track its first baseline (the lock is written in that apply)."""

from __future__ import annotations

from test_track_arm import SPEC, _graph

PROMOTES = SPEC.replace('  assert "faster" { output_throughput >= baseline.output_throughput * 1.03 }\n',
                        '  assert "faster" { output_throughput >= baseline.output_throughput * 1.03 }\n  promote  = "prod"\n')


def test_a_promotion_that_can_only_be_an_error_is_a_located_error(tmp_path):
    assert PROMOTES != SPEC
    [diag] = _graph(tmp_path, PROMOTES, lock=None).diags
    assert diag.summary == "Experiment `up` can never be promoted: track `prod` has no stack lock to compare with"
    assert diag.span is not None and diag.span.line == 13  # the experiment block
    assert "stacks/prod.lock.toml is missing" in diag.detail and "`faster` can only be ERROR" in diag.detail
    assert 'baseline_mode = "recorded"' in diag.detail


def test_a_first_promotion_by_another_experiment_or_a_lock_is_fine(tmp_path):
    seed = '''experiment "seed" {
  stack    = stack.s
  server   = server.new
  workload = workload.w
  assert "fast" { output_throughput >= 1 }
  promote  = "prod"
}
'''
    for sub in ("a", "b"):
        (tmp_path / sub).mkdir()
    assert not _graph(tmp_path / "a", PROMOTES + seed, lock=None).diags  # seed writes the lock first
    assert not _graph(tmp_path / "b", SPEC, lock=None).diags  # no promotion: the check's ERROR says why, at apply
    assert not _graph(tmp_path, PROMOTES).diags  # the lock is there: its arm is rebuilt
