"""benchmarks/bench_svm_decision.py on small cases: one row per case, equal values, for an SVC
and for an SVR (``classes`` 0)."""

import pytest

from benchmarks import bench_svm_decision as bench


@pytest.mark.parametrize(("classes", "kernel"), [(6, "poly2"), (0, "rbf")])
def test_a_case_reports_both_timings_and_equal_values(classes, kernel, monkeypatch):
    monkeypatch.setattr(bench, "PREDICT_ROWS", 150)
    monkeypatch.setattr(bench, "REPEATS", 1)
    row = bench.case(300, classes, kernel)
    assert row["classes"] == classes and 0 < row["support_vectors"] <= 300
    assert row["max_abs_diff"] < 1e-9
    assert row["speedup_1_thread"] == row["libsvm_ms"] / row["ensel_ms_1_thread"]
