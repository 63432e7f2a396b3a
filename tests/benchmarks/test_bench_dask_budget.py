"""bench_dask_budget's row of a budgeted fit: what it reads from the estimator and its store."""

from __future__ import annotations

import pytest

from benchmarks._scale_data import make_table
from benchmarks.bench_dask_budget import WORKERS, fit_once


def test_the_row_counts_the_store_and_the_budget_alike(tmp_path):
    X, y = make_table(600, random_state=1, missing=0.0)
    row, ok = fit_once(X, y, "local", tmp_path / "store", time_limit=20)
    assert row["backend"] == "local"
    assert row["runs_built"] == len(ok) > 0
    assert row["statuses"].get("ok", 0) == len(ok)
    assert sum(row["statuses"].values()) == len(ok) + sum(row["not_built"].values())
    # busy share: the runs' own fit seconds over the build's seconds on every worker
    assert row["busy"] == pytest.approx(row["fitting_s"] / (row["build_s"] * WORKERS), abs=0.01)
    assert sum(ok.values()) <= row["fitting_s"] + 0.1
    assert 0 < row["busy"] <= 1
    assert row["plan"]["runs"]
