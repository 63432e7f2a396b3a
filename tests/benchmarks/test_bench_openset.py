"""bench_openset's digits experiment (Steele's Fig. 1 protocol): the split and one small trial."""

from __future__ import annotations

import json

import numpy as np
from sklearn.datasets import load_digits

from benchmarks import bench_openset


def test_digits_split_keeps_classes_apart_and_rows_disjoint():
    _, y = load_digits(return_X_y=True)
    (known, val_c, test_c), (train, val, test) = bench_openset._digits_split(y, 3)
    assert sorted([*known, *val_c, *test_c]) == list(range(10)) and len(known) == 4
    assert np.isin(y[np.concatenate([train, val, test])], known).all()
    assert len(set(train) | set(val) | set(test)) == train.size + val.size + test.size
    assert abs(train.size / (train.size + val.size + test.size) - 0.6) < 0.01


def test_digits_trial_rows_and_table(tmp_path):
    path = tmp_path / "rows.jsonl"
    table = bench_openset.run_digits(1, 5, path)
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(rows) == 16  # 4 settings x 0-3 unknown classes
    assert {"commit", "versions", "peak_mb"} <= set(rows[0])
    original = {r["unknown_classes"]: r["accuracy"] for r in rows if r["setting"] == "original"}
    # the original forest rejects nothing: k unknown classes of one known class's size each
    # leave its known accuracy times 4 / (4 + k)
    for k in (1, 2, 3):
        assert abs(original[k] - original[0] * 4 / (4 + k)) < 1e-9
    assert table.loc[("ensel (digits)", "min")].between(0, 1).all()
    assert table.loc[("Steele (MNIST)", "original"), 0] == 0.96
