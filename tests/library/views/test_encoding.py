"""The ``te`` view: out-of-fold target encoding (no row sees its own label), count encoding,
numeric crosses, unseen and missing categories, and a library built on it that stays at chance
on a noise categorical and finds a real one."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from ensel.data import Columns
from ensel.library import build_library
from ensel.library.views.base import make_view
from ensel.library.views.encoding import SMOOTHING, TOP_NUMERIC


def _noise(n=1200, levels=300, seed=0):
    """A categorical of many levels and a label, independent of each other."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(
        {
            "city": rng.integers(0, levels, n).astype(str),
            "x1": rng.normal(size=n),
            "x2": rng.normal(size=n),
        }
    )
    return X, rng.integers(0, 2, n)


def _view(X, native_missing=True):
    return make_view("te", Columns.infer(X), native_missing)


def test_training_rows_are_encoded_without_their_own_label():
    X, y = _noise()
    base = len(Columns.infer(X).numeric) + 1  # numeric columns, then the code of 'city'
    Z = _view(X).fit_transform(X, y, 2)
    flipped = y.copy()
    flipped[7] = 1 - flipped[7]
    Z_flipped = _view(X).fit_transform(X, flipped, 2)
    assert Z_flipped[7, base] == Z[7, base]  # row 7's own encoding ignores its label
    same_level = np.flatnonzero((X["city"] == X["city"][7]).to_numpy())
    others = same_level[same_level != 7]
    assert others.size and np.any(Z_flipped[others, base] != Z[others, base])


def test_out_of_fold_encoding_of_a_noise_categorical_carries_no_label_but_naive_does():
    X, y = _noise()
    view = _view(X)
    base = len(view.columns.numeric) + 1
    oof = view.fit_transform(X, y, 2)[:, base]
    naive = view.transform(X)[:, base]  # every training row's statistics, its own included
    assert abs(roc_auc_score(y, oof) - 0.5) < 0.06
    assert roc_auc_score(y, naive) > 0.7


def test_unseen_and_missing_categories_and_crosses():
    rng = np.random.default_rng(1)
    n = 400
    X = pd.DataFrame(
        {
            "k": rng.choice(["a", "b", None], n),
            **{f"x{i}": rng.normal(size=n) for i in range(5)},
        }
    )
    X.loc[:9, "x0"] = np.nan
    y = (X["k"] == "a").to_numpy().astype(int)
    view = _view(X, native_missing=False)
    Z = view.fit_transform(X, y, 2)
    n_pairs = TOP_NUMERIC * (TOP_NUMERIC - 1) // 2
    n_indicators = 1  # x0 had missing cells and the view imputes
    assert Z.shape[1] == 5 + 1 + n_indicators + 1 + 1 + 3 * n_pairs
    new = pd.DataFrame({"k": ["never seen", None, "a"], **{f"x{i}": [1.0] * 3 for i in range(5)}})
    row = view.transform(new)
    te = 5 + 1 + n_indicators
    assert row[0, te] == pytest.approx(y.mean())  # unseen: the prior
    assert row[0, te + 1] == 0.0  # unseen: count share 0
    missing_rows = X["k"].isna().to_numpy()
    expected = (y[missing_rows].sum() + SMOOTHING * y.mean()) / (missing_rows.sum() + SMOOTHING)
    assert row[1, te] == pytest.approx(expected)  # missing is a level of its own
    assert row[2, te] > 0.9
    assert np.isfinite(row[:, : te + 2]).all()


def test_multiclass_gets_one_encoding_column_per_class_and_regression_one():
    rng = np.random.default_rng(2)
    X = pd.DataFrame({"k": rng.choice(list("pqrs"), 300), "x": rng.normal(size=300)})
    y3 = rng.integers(0, 3, 300)
    Z = _view(X).fit_transform(X, y3, 3)
    assert Z.shape[1] == 2 + 3 + 1  # x, the code, three class encodings, the count
    np.testing.assert_allclose(Z[:, 2:5].sum(axis=1), 1.0)
    Zr = _view(X).fit_transform(X, rng.normal(size=300), 0)
    assert Zr.shape[1] == 2 + 1 + 1


@pytest.mark.parametrize("family", ["lightgbm", "xgboost", "hist_gbdt"])
def test_library_on_the_te_view_stays_at_chance_on_noise_and_finds_signal(family):
    X, y = _noise(n=900, levels=200)
    spec = {"families": [{"family": family, "view": "te", "stages": [40]}]}
    lib = build_library(X, y, spec=spec, cv=3, random_state=0)
    assert abs(roc_auc_score(lib.y, lib.predictions[0]) - 0.5) < 0.08
    signal = (X["city"].astype(int) % 2).to_numpy()  # the level decides the label
    lib = build_library(X, signal, spec=spec, cv=3, random_state=0)
    assert roc_auc_score(lib.y, lib.predictions[0]) > 0.8
    new = X.iloc[:3].assign(city=["unseen", None, "3"], x1=[np.nan, 0.0, 1.0])
    with pytest.warns(UserWarning, match="never seen in training"):
        P = lib.predict(new)
    assert P.shape == (1, 3) and np.isfinite(P).all()


def test_regression_library_on_the_te_view():
    rng = np.random.default_rng(3)
    X = pd.DataFrame({"k": rng.choice(list("abcdef"), 300), "x": rng.normal(size=300)})
    y = X["k"].map(dict(zip("abcdef", range(6), strict=True))).to_numpy() + rng.normal(size=300)
    spec = {
        "task": "regression",
        "families": [{"family": "lightgbm", "view": "te", "stages": [30]}],
    }
    lib = build_library(X, y, spec=spec, cv=3)
    assert np.corrcoef(lib.predictions[0], lib.y)[0, 1] > 0.8


def test_crosses_pair_the_numeric_columns_most_correlated_with_the_target():
    rng = np.random.default_rng(4)
    X = pd.DataFrame({f"x{i}": rng.normal(size=500) for i in range(6)})
    y = (X["x4"] + 0.5 * X["x1"] + 0.3 * X["x5"] > 0).to_numpy().astype(int)
    X.loc[:4, "x4"] = np.nan
    view = _view(X)
    Z = view.fit_transform(X, y, 2)
    assert view.crossed == [(1, 4), (1, 5), (4, 5)]
    a, b = X["x1"].to_numpy(), X["x4"].to_numpy()
    np.testing.assert_allclose(Z[:, 6:9], np.column_stack([a * b, a - b, a / b]))
