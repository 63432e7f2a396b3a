"""bench_predict_budget: the drops' bar it sets inside the estimator, and its report on
hand-made rows (no fits)."""

from __future__ import annotations

import json

import numpy as np

import ensel.estimator._base as base
from benchmarks.bench_predict_budget import drops_at, report
from ensel.strategies import drop_costly_runs


def test_drops_at_holds_the_estimators_drops_to_the_bar_and_restores_them():
    with drops_at(0.25):
        assert base.drop_costly_runs.func is drop_costly_runs
        assert base.drop_costly_runs.keywords == {"n_se": 0.25}
    assert base.drop_costly_runs is drop_costly_runs
    with drops_at(None):
        weights, dropped = base.drop_costly_runs(None, None, "mxe", None, np.array([2.0, 0, 2.0]))
    np.testing.assert_array_equal(weights, [0.5, 0, 0.5])
    assert dropped == [] and base.drop_costly_runs is drop_costly_runs


def _row(dataset, variant, logloss, us=10.0, members=5):
    scores = {"auc": 1 - logloss, "logloss": logloss}
    return {"dataset": dataset, "seed": 0, "variant": variant, **scores,
            "predict_us_per_row": us, "members_with_weight": members}  # fmt: skip


def test_each_variant_is_paired_with_auto_by_dataset(tmp_path):
    rows = [_row(d, "auto", 0.50 + i / 100) for i, d in enumerate("abc")]
    rows += [_row(d, "none", 0.49 + i / 100, us=40, members=30) for i, d in enumerate("abc")]
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    lines = report(path)
    none = next(x for x in lines if x.startswith("- none vs auto, logloss"))
    assert "better on 3 of 3 datasets, mean +0.0100" in none
    assert "- none: 30 members, 40.0 us/row" in lines
