"""The scoring and pairing of benchmarks/bench_automl.py (no fits)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import log_loss, roc_auc_score

from benchmarks.bench_automl import compare, pair_scores, summary


def test_scores_match_sklearn_for_two_and_three_classes():
    y = pd.Series(["a", "b", "b", "a", "b"])
    p = np.array([0.2, 0.7, 0.6, 0.4, 0.9])
    proba = np.column_stack([1 - p, p])
    out = pair_scores(y, ["a", "b"], proba)
    assert out["auc"] == pytest.approx(roc_auc_score(y == "b", p))
    assert out["logloss"] == pytest.approx(log_loss(y, proba, labels=["a", "b"]))
    y3 = pd.Series(["a", "b", "c", "a", "c", "b"])
    p3 = np.random.default_rng(0).dirichlet(np.ones(3), 6)
    out3 = pair_scores(y3, ["a", "b", "c"], p3)
    assert out3["auc"] == pytest.approx(roc_auc_score(y3, p3, multi_class="ovr"))


def _rows():
    rows = []
    for d, seed, ours_auc, their_auc, ours_ll, their_ll in [
        ("x", 0, 0.90, 0.88, 0.30, 0.32),
        ("x", 1, 0.85, 0.86, 0.35, 0.34),
        ("y", 0, 0.70, 0.65, 0.60, 0.70),
    ]:
        for config, auc, ll in (("ensel", ours_auc, ours_ll), ("autogluon", their_auc, their_ll)):
            rows.append(
                {
                    "dataset": d,
                    "seed": seed,
                    "config": config,
                    "budget": 60.0,
                    "auc": auc,
                    "logloss": ll,
                    "predict_ms_per_row": 0.1,
                }
            )
    return pd.DataFrame(rows)


def test_compare_pairs_by_dataset_and_seed_with_ensel_better_positive():
    out = compare(_rows(), ("ensel", 60.0), ("autogluon", 60.0))
    assert out["pairs"] == 3 and out["datasets"] == 2
    assert out["AUC wins"] == "2/3" and out["LL wins"] == "2/3"
    d = np.array([0.02, -0.01, 0.05])
    assert out["mean dAUC"] == pytest.approx(d.mean())
    assert out["se dAUC"] == pytest.approx(d.std(ddof=1) / np.sqrt(3))
    assert out["mean dLL"] == pytest.approx(np.mean([0.02, -0.01, 0.10]))


def test_summary_leaves_out_comparisons_without_pairs():
    table = summary(_rows())
    assert list(table["vs"]) == ["autogluon 60s"]
