"""benchmarks/bench_svm_decision.py on a small case: one row per case, equal values."""

from benchmarks import bench_svm_decision as bench


def test_a_case_reports_both_timings_and_equal_values(monkeypatch):
    monkeypatch.setattr(bench, "PREDICT_ROWS", 150)
    monkeypatch.setattr(bench, "REPEATS", 1)
    row = bench.case(300, 6, "poly2")
    assert row["classes"] == 6 and 0 < row["support_vectors"] <= 300
    assert row["max_abs_diff"] < 1e-9
    assert row["speedup_1_thread"] == row["libsvm_ms"] / row["ensel_ms_1_thread"]


def test_a_regression_case_compares_svr_predict(monkeypatch):
    monkeypatch.setattr(bench, "PREDICT_ROWS", 150)
    monkeypatch.setattr(bench, "REPEATS", 1)
    row = bench.case(300, 0, "rbf")
    assert row["classes"] == 0 and 0 < row["support_vectors"] <= 300
    assert row["max_abs_diff"] < 1e-9
