"""benchmarks/bench_deploy.py's --quick code path: one row with the export's difference,
every timing and the file sizes, on a tiny spec (k-NN left out by exportable=True)."""

import json

import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("skl2onnx")
pytest.importorskip("torch")

from benchmarks import _predict_timing
from benchmarks import bench_deploy as bench


def test_quick_mode_writes_a_complete_row(monkeypatch, tmp_path):
    monkeypatch.setattr(bench, "SINGLE_CALLS", 20)
    monkeypatch.setattr(_predict_timing, "WARM_CALLS", 2)
    results = tmp_path / "deploy.jsonl"
    bench.main(["--quick", "--results", str(results)])
    (row,) = [json.loads(line) for line in results.read_text().splitlines()]
    assert row["quick"] and row["dataset"] == "breast_cancer"
    assert row["max_abs_diff"] <= 1e-5
    for name in ("python", "onnx", "mimic_onnx"):
        assert 0 < row[f"{name}_p50_ms"] <= row[f"{name}_p99_ms"]
        assert row[f"{name}_batch_us_per_row"] > 0
    assert row["exportable"]["members"] < row["exportable"]["of"]  # k-NN left out
    assert row["onnx_over_saved"] == row["ensemble_onnx_bytes"] / row["model_pkl_bytes"]
    assert "commit" in row and "utc" in row
