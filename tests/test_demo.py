"""The demo's comparison: every row held out once by outer folds over out-of-fold member
predictions, and ES-minus-other differences with standard errors (no library build)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ensel.demo import STRATEGIES, compare, differences, format_differences
from ensel.metrics import METRICS


def _lib(n=200, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    signal = np.where(y == 1, 0.7, 0.3)
    P = np.clip(signal + rng.normal(0, [[0.1], [0.2], [0.3], [0.4]], (4, n)), 0.01, 0.99)
    return SimpleNamespace(predictions=P.astype(np.float32), y=y)


def test_compare_scores_every_strategy_and_metric_on_every_fold():
    table = compare(_lib(), n_folds=2)
    assert set(table) == set(STRATEGIES)
    for strategy in STRATEGIES:
        assert set(table[strategy]) == set(METRICS)
        assert all(v.shape == (2,) and np.isfinite(v).all() for v in table[strategy].values())


def test_differences_are_signed_so_that_positive_means_es_is_better():
    folds = np.array([0.1, 0.2, 0.3])
    table = {s: {m: folds.copy() for m in METRICS} for s in STRATEGIES}
    table["es"]["roc"] = folds + 0.05  # higher AUC: better
    table["es"]["mxe"] = folds - 0.05  # lower log loss: better
    diffs = differences(table)
    assert diffs["modsel"]["roc"][0] > 0 and diffs["modsel"]["mxe"][0] > 0
    assert diffs["bayesavg"]["acc"] == (0.0, 0.0)
    text = format_differences(diffs)
    assert "+0.0500 ± 0.0000*" in text
