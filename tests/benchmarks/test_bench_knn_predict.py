"""benchmarks/bench_knn_predict.py on a small case: both timings and the same neighbours."""

from benchmarks import bench_knn_predict as bench


def test_a_case_reports_each_timing_and_the_same_neighbour_sets(monkeypatch):
    monkeypatch.setattr(bench, "PREDICT_ROWS", 120)
    monkeypatch.setattr(bench, "REPEATS", 1)
    row = bench.case(600, 5)
    assert row["same_sets_brute"] == 1.0 and row["same_sets_auto"] == 1.0
    assert row["speedup_vs_brute"] == row["sklearn_brute_ms"] / row["ensel_ms"]
