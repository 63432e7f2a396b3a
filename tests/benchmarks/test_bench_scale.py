"""The tables, the memory sampler and the resumable results of benchmarks/bench_scale.py (no
timed fits)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from benchmarks import bench_scale
from benchmarks._scale_data import make_table


def test_synthetic_table_has_what_the_benchmark_promises():
    X, y = make_table(5000, random_state=1)
    assert X.shape == (5000, 22) and set(np.unique(y)) == {0, 1}
    assert 0.08 < X.isna().to_numpy().mean() < 0.12
    assert isinstance(X["c0"].dtype, pd.CategoricalDtype) and len(X["c0"].cat.categories) == 6000
    again, _ = make_table(5000, random_state=1)
    pd.testing.assert_frame_equal(X, again)


def test_load_table_splits_the_synthetic_train_and_test_rows(monkeypatch):
    monkeypatch.setitem(bench_scale.SYNTHETIC, "synth_tiny", 1000)
    X, y, X_te, y_te = bench_scale.load_table("synth_tiny", 0)
    assert (len(X), len(y), len(X_te), len(y_te)) == (1000, 1000, 200, 200)
    with pytest.raises(ValueError, match="unknown table 'nope'; valid tables"):
        bench_scale.load_table("nope", 0)


def test_block_resumes_and_records_errors(tmp_path, monkeypatch):
    calls = []

    def fake(X, y, X_test, y_test, budget, seed, n_jobs):
        calls.append(budget)
        if budget == 2:
            raise RuntimeError("boom")
        return {"fit_seconds": 1.0, "auc": 0.8, "logloss": 0.5, "peak_mb": 10.0}

    monkeypatch.setitem(bench_scale.RUNNERS, "ensel", fake)
    monkeypatch.setitem(bench_scale.SYNTHETIC, "synth_tiny", 300)
    path = tmp_path / "scale.jsonl"
    bench_scale.run_block(["synth_tiny"], [1.0, 2.0], ["ensel"], [0], 1, path)
    bench_scale.run_block(["synth_tiny"], [1.0, 2.0], ["ensel"], [0], 1, path)  # resumes
    assert calls == [1.0, 2.0]
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert rows[1]["error"] == "RuntimeError: boom" and rows[0]["rows"] == 300
    assert {"commit", "versions", "load", "load_after"} <= set(rows[0])
    table = bench_scale.report(path)
    assert list(table.index) == [("synth_tiny", 1.0, "ensel")]
