"""The compiled walk of a binary xgboost model's trees gives xgboost's own values bit for bit
(missing values, numeric and categorical splits, categories outside the fitted set, every
stage), takes the place of the C call for small batches only, and is not pickled."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from ensel.library.families import _xgboost_pack, get_family
from ensel.library.families._native_predict import xgboost_value
from ensel.library.families._xgboost_pack import XGBoostPack

xgboost = pytest.importorskip("xgboost")
pytestmark = pytest.mark.skipif(
    _xgboost_pack._compiled_margins is None, reason="the walk needs numba"
)


def _data(n: int, seed: int):
    """Three numbers with missing cells, then two category codes (8 and 3 levels)."""
    rng = np.random.default_rng(seed)
    X = np.column_stack(
        [rng.normal(size=(n, 3)), rng.integers(0, 8, size=n), rng.integers(0, 3, size=n)]
    ).astype(np.float64)
    X[:, :3][rng.random((n, 3)) < 0.15] = np.nan
    y = np.nan_to_num(X[:, 0]) + (X[:, 3] % 3 == 1) + 0.5 * rng.normal(size=n) > 0.5
    return X, y.astype(int)


def _run(n_classes: int = 2):
    family = get_family("xgboost")
    X, y = _data(400, 0)
    if n_classes == 3:
        y = y + (X[:, 4] == 2)
    params = {**family.params, "max_depth": 4}
    return family.fit(
        X, y, n_classes=n_classes, params=params, stages=(3, 20, 60), random_state=0,
        categorical={3: 8, 4: 3},
    )  # fmt: skip


def test_the_walk_equals_xgboost_bit_for_bit():
    run = _run()
    model = run.inner.model
    booster = model.get_booster()
    pack = XGBoostPack.of(booster, model.missing)
    assert pack is not None
    X, _ = _data(300, 1)
    X[:5, 3] = np.nan  # an unseen category, as the view gives it
    X[5:10, 3] = 11.0  # a code past the fitted ones
    X[10:12] = np.nan
    for rounds in (1, 3, 20, 60):
        want = xgboost_value(booster, X, rounds, model.missing)
        np.testing.assert_array_equal(pack.values(X, rounds), want)


def test_small_batches_take_the_walk_and_large_ones_the_c_call(monkeypatch):
    import ensel.library.families.gbdt as gbdt

    run = _run()
    X, _ = _data(5000, 2)
    want = run.predict(X)["none"]  # 5000 rows times 60 rounds: the C call
    calls = []
    monkeypatch.setattr(gbdt, "xgboost_proba", lambda *a: calls.append(1) / 0)
    for rows in (slice(0, 1), slice(7, 40)):
        np.testing.assert_array_equal(run.predict(X[rows])["none"], want[:, rows])
    assert not calls
    again = pickle.loads(pickle.dumps(run))
    assert "_pack" not in again.inner.__dict__
    np.testing.assert_array_equal(again.predict(X[:3])["none"], want[:, :3])


def test_a_model_the_walk_does_not_cover_keeps_the_c_call():
    run = _run(n_classes=3)
    model = run.inner.model
    assert XGBoostPack.of(model.get_booster(), model.missing) is None  # softprob
    assert XGBoostPack.of(_run().inner.model.get_booster(), -1.0) is None  # missing not NaN
    X, _ = _data(4, 3)
    full = run.predict(np.vstack([X] * 1000))["none"]
    np.testing.assert_array_equal(run.predict(X)["none"], full[:, :4])
