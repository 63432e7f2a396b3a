"""The TabM family (pytabkit): missing values, categories unseen in training, folds that lack a
class, reproducibility, and its cost model."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.metrics import roc_auc_score

pytest.importorskip("pytabkit")
torch = pytest.importorskip("torch")

from ensel.library.families import get_family  # noqa: E402
from ensel.library.planning.estimate import estimate_run  # noqa: E402
from ensel.library.planning.predict_work import predict_work  # noqa: E402

FAMILY = get_family("tabm")
PARAMS = {**FAMILY.params, "k": 2, "d_block": 32, "n_blocks": 2, "max_epochs": 30}


def _data():
    """Breast cancer with missing cells and a 3-level categorical column (index 30)."""
    X, y = load_breast_cancer(return_X_y=True)
    rng = np.random.default_rng(0)
    X = X.copy()
    X[rng.random(X.shape) < 0.05] = np.nan
    level = rng.integers(0, 3, len(X)).astype(float)
    return np.hstack([X, level[:, None]]), y


def _fit(X, y, n_classes=2, seed=0):
    return FAMILY.fit(
        X, y, n_classes=n_classes, params=PARAMS, stages=None, random_state=seed,
        categorical={30: 3},
    )  # fmt: skip


def test_learns_through_missing_values_and_unseen_categories():
    X, y = _data()
    run = _fit(X[:400], y[:400])
    test = X[400:].copy()
    test[:20, 30] = 7  # a level training never saw
    test[20:40, 30] = np.nan
    proba = run.predict(test)["none"]
    assert proba.shape == (1, len(test), 2)
    assert np.allclose(proba.sum(axis=2), 1.0)
    assert roc_auc_score(y[400:], proba[0, :, 1]) > 0.95


def test_a_fold_without_a_class_predicts_zero_for_it():
    X, y = _data()
    rows = y == 1
    run = _fit(X[rows][:200], np.where(np.arange(200) % 2, 0, 2), n_classes=3)
    proba = run.predict(X[:30])["none"][0]
    assert proba.shape == (30, 3)
    assert np.all(proba[:, 1] == 0.0)
    assert np.allclose(proba.sum(axis=1), 1.0)


def test_the_same_seed_gives_the_same_net_and_threads_are_restored():
    X, y = _data()
    before = torch.get_num_threads()
    a = _fit(X[:300], y[:300], seed=3).predict(X[300:350])["none"]
    assert torch.get_num_threads() == before
    b = _fit(X[:300], y[:300], seed=3).predict(X[300:350])["none"]
    c = _fit(X[:300], y[:300], seed=4).predict(X[300:350])["none"]
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_one_class_gives_a_constant_run():
    X, _ = _data()
    run = _fit(X[:50], np.ones(50, dtype=int))
    assert np.all(run.predict(X[:5])["none"][0, :, 1] == 1.0)


@pytest.mark.parametrize(
    ("change", "stages"),
    [({"k": 0}, None), ({"dropout": 1.0}, None), ({"lr": 0.0}, None), ({}, (4,))],
)
def test_bad_parameters_are_refused(change, stages):
    with pytest.raises(ValueError, match="tabm"):
        FAMILY.validate({**FAMILY.params, **change}, stages)


def test_its_cost_grows_with_rows_members_and_width_and_matches_the_fitted_work():
    small = estimate_run("tabm", FAMILY.params, None, 1000, 10, 2)
    large = estimate_run("tabm", FAMILY.params, None, 8000, 10, 2)
    wide = estimate_run("tabm", {**FAMILY.params, "k": 32, "d_block": 512}, None, 1000, 10, 2)
    assert large.fit_seconds > 2 * small.fit_seconds
    assert wide.fit_seconds > 4 * small.fit_seconds
    assert wide.predict_ms > 10 * small.predict_ms
    X, y = _data()
    run = _fit(X[:200], y[:200])
    (calls, units), = predict_work("tabm", run, PARAMS, [None], 31, 2)  # fmt: skip
    # inputs: 30 numeric columns, their missing indicators, 3 levels plus "missing or unseen"
    width = 30 + int(np.isnan(X[:200, :30]).any(axis=0).sum()) + 4
    assert units == 2 * (width * 32 + 32 * 32 + 32 * 2)
    assert calls == 1.0
