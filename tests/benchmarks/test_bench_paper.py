"""The fold-averaged normalisation of benchmarks/bench_paper.py (Tables 4.1-4.2 structure) and
Table 4.3's percent loss reduction."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchmarks.bench_paper import (
    fold_means,
    normalise,
    outer_folds,
    perfect_score,
    scales,
    table_4_3,
)
from ensel.metrics import METRICS


def _row(fold, method, metric, value, dataset="d"):
    return {"dataset": dataset, "fold": fold, "method": method, "metric": metric, "score": value}


def test_outer_folds_test_every_row_once_stratified():
    y = pd.Series(np.r_[np.zeros(70), np.ones(30)].astype(int))
    folds = outer_folds(y, None, 5)
    tested = np.concatenate([test for _, test in folds])
    assert np.array_equal(np.sort(tested), np.arange(100))
    for train, test in folds:
        assert np.intersect1d(train, test).size == 0
        assert y.iloc[test].sum() == 6  # 30 positives spread evenly over 5 folds


def test_outer_folds_keep_groups_whole():
    rng = np.random.default_rng(0)
    groups = pd.Series(np.repeat(np.arange(40), 3))
    y = pd.Series(np.repeat(rng.integers(0, 2, 40), 3))
    for train, test in outer_folds(y, groups, 4):
        assert not set(groups.iloc[train]) & set(groups.iloc[test])


def test_scale_from_fold_means_and_members_missing_a_fold():
    rows = [
        _row(0, "_bottom", "acc", 0.5), _row(1, "_bottom", "acc", 0.6),
        _row(0, "_member:a", "acc", 0.8), _row(1, "_member:a", "acc", 0.9),
        _row(0, "_member:b", "acc", 0.99),  # failed in fold 1: must not set the top
        _row(0, "ES", "acc", 0.7), _row(1, "ES", "acc", 0.75),
        _row(0, "_bottom", "rms", 0.5), _row(1, "_bottom", "rms", 0.5),
        _row(0, "_member:a", "rms", 0.4), _row(1, "_member:a", "rms", 0.3),
        _row(0, "ES", "rms", 0.3), _row(1, "ES", "rms", 0.3),
    ]  # fmt: skip
    means = fold_means(rows)
    scale = scales(means)
    assert scale.loc[("d", "acc")].tolist() == pytest.approx([0.55, 0.85])
    assert scale.loc[("d", "rms")].tolist() == pytest.approx([0.5, 0.3])  # lower is better
    norm = normalise(means, scale).set_index("metric")["norm"]
    assert norm["acc"] == pytest.approx((0.725 - 0.55) / (0.85 - 0.55))
    assert norm["rms"] == pytest.approx(1.0)
    assert set(normalise(means, scale)["method"]) == {"ES"}


def test_degenerate_scale_is_an_error():
    rows = [_row(0, "_bottom", "acc", 0.5), _row(0, "_member:a", "acc", 0.5)]
    with pytest.raises(ValueError, match="acc on d"):
        scales(fold_means(rows))


def test_table_4_3_is_the_percent_loss_reduction_on_fold_averaged_scores():
    """The dissertation's example: model selection at 90% accuracy, ES-CV at 95%, halves the
    loss (50%); a loss measured from 0 for RMS; the MEAN^cv row against MODSEL-CV."""
    rows = []
    for fold, (es, mod, mod_cv) in enumerate([(0.94, 0.88, 0.92), (0.96, 0.92, 0.94)]):
        for metric in METRICS:
            low = metric in ("rms", "mxe")
            value = (lambda v: 1 - v) if low else (lambda v: v)
            rows += [
                _row(fold, "_perfect", metric, 0.0 if low else 1.0),
                _row(fold, "ES-BOTH-CV", metric, value(es)),
                _row(fold, "MODSEL-BOTH", metric, value(mod)),
                _row(fold, "MODSEL-BOTH-CV", metric, value(mod_cv)),
            ]
    table = table_4_3(fold_means(rows))
    assert table.loc["d", "acc"] == pytest.approx(50.0)  # loss 0.10 -> 0.05
    assert table.loc["d", "rms"] == pytest.approx(50.0)
    assert table.loc["MEAN^cv", "acc"] == pytest.approx(100 * (0.07 - 0.05) / 0.07)
    assert table.loc["MEAN", "MEAN"] == pytest.approx(50.0)


def test_perfect_lift_puts_every_positive_in_the_top_quarter():
    assert perfect_score("lft", np.r_[np.ones(10), np.zeros(90)]) == pytest.approx(4.0)
    assert perfect_score("lft", np.r_[np.ones(50), np.zeros(50)]) == pytest.approx(2.0)
    assert perfect_score("mxe", np.ones(3)) == 0.0 and perfect_score("roc", np.ones(3)) == 1.0
