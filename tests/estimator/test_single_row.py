"""Single rows and small batches on the fast path: each row predicted alone equals the same row
in a large batch (which takes the full path), for a fitted ensemble of forests, bagged trees,
xgboost, LightGBM and logistic regression over native and one-hot views; and a row alone does
take the fast path (no frame check, no thread pool, the compiled tree walk of all fold siblings
at once, the boosters' C calls rather than their wrappers)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import ensel.library.storage.members as members_module
from ensel import EnsembleSelectionClassifier
from ensel.library import build_library
from ensel.library.families import _treepack
from ensel.library.families import trees as trees_module
from ensel.library.storage.members import SMALL_ROWS, FittedMembers

pytest.importorskip("xgboost")
pytest.importorskip("lightgbm")

FAMILIES = [
    {"family": "random_forest", "params": {"max_features": 2}, "stages": [8, 16]},
    {"family": "bagged_trees", "stages": [4, 8], "calibration": ["none", "platt"]},
    {"family": "xgboost", "stages": [4, 16], "calibration": ["none", "platt"]},
    {"family": "lightgbm", "stages": [4, 16]},
    {"family": "logreg", "params": {"ridge": [1.0]}},
]
TOLERANCE = 1e-12
"""A row alone against the same row in a batch: summation order may differ in the last bit
(a one-hot view's matrix product), nothing more."""


def _table(n: int, seed: int) -> tuple[pd.DataFrame, np.ndarray]:
    """Numbers with missing cells, an integer, a text category and a boolean; the label
    follows x0 and the category."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(
        {
            "x0": rng.normal(size=n),
            "x1": rng.normal(size=n),
            "count": rng.integers(0, 20, size=n),
            "city": rng.choice(["a", "b", "c"], size=n).astype(object),
            "member": rng.random(n) < 0.5,
        }
    )
    X.loc[rng.random(n) < 0.1, "x1"] = np.nan
    X.loc[rng.random(n) < 0.05, "city"] = None
    signal = X["x0"] + (X["city"] == "a") * 1.5 + rng.normal(scale=0.5, size=n)
    return X, (signal > signal.median()).to_numpy().astype(int)


@pytest.fixture(scope="module")
def fitted():
    """``(classifier, every member of its library with their fitted runs, new rows)``: more
    new rows than a small batch, so the batch takes the full path."""
    X, y = _table(240, 0)
    lib = build_library(X, y, spec={"families": FAMILIES}, cv=3, random_state=0, verbose=0)
    clf = EnsembleSelectionClassifier(library=lib, cv=3, n_bags=4, n_jobs=1, random_state=0)
    new, _ = _table(SMALL_ROWS + 20, 1)
    new.loc[3, "city"] = "never seen"
    return clf.fit(X, y), lib.subset(lib.members["id"]), new


def test_rows_alone_equal_the_rows_of_a_large_batch(fitted):
    clf, every_member, new = fitted
    assert {fitted_run.run.family for fitted_run in every_member.runs.values()} == {
        entry["family"] for entry in FAMILIES
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the unseen category
        batch = every_member.predict(new)
        proba = clf.predict_proba(new)
        for i in range(40):
            row = new.iloc[[i]]
            np.testing.assert_allclose(
                every_member.predict(row), batch[:, [i]], rtol=0, atol=TOLERANCE
            )
            np.testing.assert_allclose(clf.predict_proba(row), proba[[i]], rtol=0, atol=TOLERANCE)
        few = new.iloc[10:30]  # a small batch, on the fast path too
        np.testing.assert_allclose(
            every_member.predict(few), batch[:, 10:30], rtol=0, atol=TOLERANCE
        )


def _refuse(*_, **__):
    raise AssertionError("a single row left the small-batch path")


def test_a_row_alone_takes_the_small_batch_path(fitted, monkeypatch):
    """With everything only the full path (or a wrapper) would call made to fail, a row is
    still predicted, to the same numbers."""
    import lightgbm
    import xgboost

    _, every_member, new = fitted
    row = new.iloc[[5]]
    expected = every_member.predict(row)
    with monkeypatch.context() as patched:
        patched.setattr(FittedMembers, "frame", _refuse)  # the full path's frame checks
        patched.setattr(members_module, "ThreadPoolExecutor", _refuse)
        patched.setattr(xgboost.XGBClassifier, "predict_proba", _refuse)
        patched.setattr(xgboost.Booster, "inplace_predict", _refuse)
        patched.setattr(lightgbm.LGBMClassifier, "predict_proba", _refuse)
        patched.setattr(lightgbm.Booster, "predict", _refuse)
        patched.setattr(trees_module._StagedRun, "predict", _refuse)  # fold siblings one by one
        if _treepack._compiled_walk is not None:
            patched.setattr(_treepack.TreePack, "walk", _refuse)  # the numpy walk
        got = every_member.predict(row, n_jobs=4)
    np.testing.assert_array_equal(got, expected)
