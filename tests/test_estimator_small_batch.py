"""The small-batch predict path (a DataFrame of a few rows read once into a Table, the runs in
one thread) against the full path, on fitted ensembles with missing values, a text column read
as a category and categories never seen in training: every prediction bit for bit equal."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import ensel.library.storage.members as members_module
from ensel import EnsembleSelectionClassifier, EnsembleSelectionRegressor
from ensel.data import Table
from ensel.library import build_library

FAMILIES = [
    {"family": "logreg", "params": {"ridge": [0.01, 10.0]}, "calibration": ["none", "platt"]},
    {"family": "tree", "params": {"max_depth": 4}, "calibration": ["none", "isotonic"]},
    {"family": "adaboost", "params": {"max_depth": 1}, "stages": [4, 16]},
    {"family": "random_forest", "params": {"max_features": 2}, "stages": [8, 16]},
    {"family": "lightgbm", "view": "te", "stages": [8, 32]},
]
pytestmark = pytest.mark.filterwarnings("ignore:column 'city' has categories never seen")

REGRESSION = [
    {"family": "linear", "params": {"ridge": [None, 1.0]}},
    {"family": "tree", "params": {"max_depth": 4}},
    {"family": "knn", "params": {"weighting": "distance"}, "stages": [3, 9]},
    {"family": "hist_gbdt", "params": {"max_leaf_nodes": 7}, "stages": [8, 16]},
]


def _table(n: int, seed: int) -> tuple[pd.DataFrame, np.ndarray]:
    """Numeric columns with missing cells, an integer column and a text category with a
    missing level: the label follows x0 and the category."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(
        {
            "x0": rng.normal(size=n),
            "x1": rng.normal(size=n),
            "count": rng.integers(0, 20, size=n),
            "city": rng.choice(["a", "b", "c", "d"], size=n).astype(object),
        }
    )
    X.loc[rng.random(n) < 0.1, "x1"] = np.nan
    X.loc[rng.random(n) < 0.05, "city"] = None
    signal = X["x0"] + (X["city"] == "a") * 1.5 + rng.normal(scale=0.5, size=n)
    return X, signal.to_numpy()


def _new_rows(seed: int) -> pd.DataFrame:
    """Rows to predict: missing cells in every column and a category never seen in training."""
    X, _ = _table(40, seed)
    X.loc[3, "city"] = "never seen"
    X.loc[5, "x0"] = np.nan
    X.loc[7, ["x1", "city"]] = [np.nan, None]
    return X


@pytest.fixture(scope="module")
def classification():
    X, signal = _table(240, 0)
    y = np.where(signal > np.median(signal), "yes", "no")
    lib = build_library(X, y, spec={"families": FAMILIES}, cv=3, random_state=0, verbose=0)
    return X, y, lib


@pytest.fixture(scope="module")
def classifier(classification):
    X, y, lib = classification
    return EnsembleSelectionClassifier(library=lib, cv=3, n_bags=4, random_state=0).fit(X, y)


@pytest.fixture(scope="module")
def every_member(classification):
    """Every member of the classification library, with its fitted runs."""
    lib = classification[2]
    return lib.subset(lib.members["id"])


@pytest.fixture(scope="module")
def regressor():
    X, signal = _table(240, 1)
    spec = {"task": "regression", "families": REGRESSION}
    return EnsembleSelectionRegressor(library=spec, cv=3, n_bags=4, random_state=0).fit(X, signal)


def _full_path(monkeypatch, predict, X):
    """``predict(X)`` with the small-batch path turned off."""
    with monkeypatch.context() as patched:
        patched.setattr(members_module, "SMALL_ROWS", 0)
        return predict(X)


def _both_paths(model, monkeypatch, method: str, X: pd.DataFrame):
    predict = getattr(model, method)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the unseen category, on both paths
        assert model.fitted_members_.table(X) is not None  # the small-batch path is taken
        return predict(X), _full_path(monkeypatch, predict, X)


@pytest.mark.parametrize("rows", [slice(0, 40), slice(3, 4), slice(7, 8), slice(0, 1)])
def test_classifier_small_batches_equal_the_full_path_bit_for_bit(classifier, monkeypatch, rows):
    X = _new_rows(5).iloc[rows]
    fast, full = _both_paths(classifier, monkeypatch, "predict_proba", X)
    np.testing.assert_array_equal(fast, full)


@pytest.mark.parametrize("rows", [slice(0, 40), slice(3, 4), slice(5, 6)])
def test_regressor_small_batches_equal_the_full_path_bit_for_bit(regressor, monkeypatch, rows):
    X = _new_rows(6).iloc[rows]
    fast, full = _both_paths(regressor, monkeypatch, "predict", X)
    np.testing.assert_array_equal(fast, full)


def test_each_member_of_each_row_equals_the_full_path(every_member):
    """Each row alone and the rows together, through both paths (a row alone may differ from
    the same row in a batch in the last bit, matrix products grouping sums otherwise, on
    either path)."""
    X = _new_rows(7)
    fitted = every_member
    views = {fitted_run.run.view for fitted_run in fitted.runs.values()}
    assert views == {"standardized", "native", "te"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        np.testing.assert_array_equal(fitted.predict(X), fitted.predict(X, small_rows=0))
        for i in range(len(X)):
            row = X.iloc[[i]]
            np.testing.assert_array_equal(fitted.predict(row), fitted.predict(row, small_rows=0))


def test_the_small_path_warns_as_the_full_path(classifier):
    X = _new_rows(8).iloc[[3]]  # the unseen category
    with pytest.warns(UserWarning, match=r"'city' has categories never seen in training: \['never"):
        classifier.predict_proba(X)


def test_the_schema_is_planned_once_and_not_saved(classifier, tmp_path):
    fitted = classifier.fitted_members_
    X = _new_rows(9)
    fitted.table(X.iloc[:2])
    fitted.table(X.iloc[2:4])
    fitted.table(X.iloc[:2].astype({"count": "float64"}))  # another dtype: another schema
    assert len(fitted.__dict__["_schemas"]) == 2
    assert isinstance(fitted.table(X.iloc[:2]), Table)
    path = tmp_path / "model.pkl"
    classifier.save(path)
    assert "_schemas" not in EnsembleSelectionClassifier.load(path).fitted_members_.__dict__


def test_what_the_full_checks_must_say_goes_the_full_path(classifier):
    fitted = classifier.fitted_members_
    X = _new_rows(10)
    assert fitted.table(X.iloc[:2].to_numpy()) is None  # an array: named by the full path
    assert fitted.table(X, small_rows=10) is None  # more rows than a small batch
    assert fitted.table(X.iloc[:0]) is None  # no rows
    with pytest.raises(ValueError, match=r"lacks column\(s\) \['city'\]"):
        classifier.predict_proba(X.iloc[:2].drop(columns="city"))
    renamed = X.iloc[:2].set_axis(["x0", "x1", "count", "x0"], axis=1)
    with pytest.raises(ValueError, match="duplicate column name"):
        classifier.predict_proba(renamed)
