"""The shared single-row timing: every row is predicted alone, warm-up calls untimed."""

from __future__ import annotations

from benchmarks import _predict_timing as timing


def test_single_row_ms_predicts_one_row_per_call_after_the_warm_up():
    seen = []
    rows = [[1], [2], [3]]
    out = timing.single_row_ms(seen.append, rows, calls=20)
    assert len(seen) == timing.WARM_CALLS + 20
    assert all(row in rows for row in seen)
    assert seen[timing.WARM_CALLS :][:3] == rows  # the timed calls cycle through the rows
    assert 0 <= out["p50_ms"] <= out["p99_ms"]
