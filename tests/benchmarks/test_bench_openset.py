"""bench_openset's digits experiment (Steele's Fig. 1 protocol): the split and one small trial."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from scipy.stats import skew
from sklearn.datasets import load_digits
from sklearn.ensemble import RandomForestClassifier
from sklearn.model_selection import cross_val_score

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


def test_generated_quick_run_writes_both_settings_at_every_unknown_count(tmp_path, capsys):
    path = tmp_path / "generated.jsonl"
    bench_openset.main(["--generated", "--quick", "--results", str(path)])
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    sizes = bench_openset.GENERATED_QUICK
    counts = set(range(sizes.unknown + 1))
    for setting in ("original", "min"):
        assert {r["unknown_classes"] for r in rows if r["setting"] == setting} == counts
    assert len(rows) == 2 * len(counts) and {r["setting"] for r in rows} == {"original", "min"}
    # the original forest rejects nothing: each unknown class (a known class's test size)
    # scales its known accuracy by known / (known + k)
    original = {r["unknown_classes"]: r["accuracy"] for r in rows if r["setting"] == "original"}
    k = sizes.unknown
    assert abs(original[k] - original[0] * sizes.known / (sizes.known + k)) < 1e-9
    assert "Steele (generated)" in capsys.readouterr().out


def test_generated_data_classes_differ_and_follow_their_family():
    X, y = bench_openset.generated_data(classes=4, per_class=200, features=10, seed=1)
    assert X.shape == (800, 10) and np.bincount(y).tolist() == [200] * 4
    # half the classes are gamma (positive, skewed right), half normal (no skew)
    skews = np.array([skew(X[y == c]).mean() for c in range(4)])
    assert (skews > 0.3).sum() == 2 and (np.abs(skews) < 0.2).sum() == 2
    assert (X[y == np.flatnonzero(skews > 0.3)[0]] > 0).all()
    two = np.isin(y, [0, 1])
    forest = RandomForestClassifier(10, random_state=0)
    assert cross_val_score(forest, X[two], y[two], cv=3).mean() > 0.9  # chance is 0.5
    # no single feature separates them: the classes overlap along every one
    lo0, hi0 = X[y == 0].min(0), X[y == 0].max(0)
    lo1, hi1 = X[y == 1].min(0), X[y == 1].max(0)
    assert ((lo0 < hi1) & (lo1 < hi0)).all()


def test_generated_table_shows_the_papers_stated_points():
    rows = [
        {"trial": 0, "setting": s, "unknown_classes": k, "accuracy": 0.5, "trees": 5}
        for s in ("original", "min")
        for k in range(30)
    ]
    table = bench_openset.generated_table(pd.DataFrame(rows))
    assert list(table.columns) == list(bench_openset.REPORTED_UNKNOWN)
    assert table.loc[("Steele (generated)", "original"), 29] == 0.433
    assert table.loc[("Steele (generated)", "min"), 0] == 0.994
    assert np.isnan(table.loc[("Steele (generated)", "min"), 5])


def test_openset_generated_block_beside_the_papers_points(tmp_path):
    from benchmarks import papers_report

    path = tmp_path / "generated.jsonl"
    blocks = papers_report.openset_blocks(tmp_path / "d.jsonl", path)
    assert set(blocks) == {"openset-digits", "openset-generated"}
    assert "bench_openset --generated" in blocks["openset-generated"]
    bench_openset.run_generated(1, 5, path, bench_openset.GENERATED_QUICK)
    block = papers_report.openset_blocks(tmp_path / "d.jsonl", path)["openset-generated"]
    assert "| Steele (generated) | original | 1.000 |  |  |  |" in block
    assert "| ensel (generated) | min | 0." in block
