"""cv="auto": K folds on small tables, a held-out hillclimb set sized by what selection needs
on large ones; the estimator, the builder and the command line take it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ensel import EnsembleSelectionClassifier
from ensel.cli import _cv_argument
from ensel.library import build_library
from ensel.library.data import training
from ensel.library.data.training import (
    AUTO_FOLDS,
    AUTO_SWITCH_ROWS,
    auto_hillclimb_rows,
    resolve_cv,
)

SPEC = {
    "families": [
        {"family": "logreg", "params": {"ridge": [0.01, 100.0]}, "calibration": ["none", "platt"]},
        {"family": "tree", "params": {"max_depth": [2, 5]}, "calibration": ["none"]},
    ]
}


def _table(n: int, seed: int = 0, positive: float = 0.5):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.normal(size=(n, 4)), columns=list("abcd"))
    y = X["a"] + 0.5 * X["b"] ** 2 + rng.normal(size=n) > np.quantile(X["a"], 1 - positive)
    return X, y.astype(int)


def test_auto_gives_k_folds_below_the_switch_and_a_holdout_above():
    small = resolve_cv("auto", AUTO_SWITCH_ROWS - 1, np.arange(AUTO_SWITCH_ROWS - 1) % 2)
    assert (small.cv, small.hillclimb_rows(AUTO_SWITCH_ROWS - 1)) == (
        AUTO_FOLDS,
        AUTO_SWITCH_ROWS - 1,
    )
    for n in (AUTO_SWITCH_ROWS, 100_000, 1_000_000):
        big = resolve_cv("auto", n, np.arange(n) % 2)
        assert big.cv is None
        assert big.hillclimb_rows(n) == pytest.approx(auto_hillclimb_rows(n), abs=1)
    _, floor, cap = training.AUTO_HILLCLIMB
    assert auto_hillclimb_rows(10**7) == cap and auto_hillclimb_rows(AUTO_SWITCH_ROWS) >= floor


def test_auto_holds_out_enough_of_a_rare_class_or_keeps_folds():
    n = 200_000
    rare = np.zeros(n, int)
    rare[: n // 50] = 1  # 2%: needs 10,000 rows to hold 200 of them
    choice = resolve_cv("auto", n, rare)
    assert choice.cv is None
    assert choice.hillclimb_rows(n) * 0.02 >= training.AUTO_MIN_CLASS_ROWS - 1
    rarer = np.zeros(n, int)
    rarer[:100] = 1  # 0.05%: a held-out set would need half the table
    assert resolve_cv("auto", n, rarer).cv == AUTO_FOLDS


def test_integers_and_none_stand_and_other_strings_are_refused():
    assert resolve_cv(3, 10**6).cv == 3
    assert resolve_cv(None, 10, hillclimb_fraction=0.3).hillclimb_fraction == 0.3
    with pytest.raises(ValueError, match=r"cv='five'.*'auto'"):
        resolve_cv("five", 100)


def test_the_builder_holds_out_the_auto_set_on_a_large_table(monkeypatch):
    monkeypatch.setattr(training, "AUTO_SWITCH_ROWS", 500)
    monkeypatch.setattr(training, "AUTO_HILLCLIMB", (0.1, 150, 300))
    monkeypatch.setattr(training, "AUTO_MIN_CLASS_ROWS", 20)
    X, y = _table(1200)
    lib = build_library(X, y, spec=SPEC, verbose=0)  # cv="auto" is the default
    assert lib.store.header["cv"] is None
    assert lib.predictions.shape[1] == pytest.approx(150, abs=1)
    small = build_library(X.iloc[:400], y.iloc[:400], spec=SPEC, verbose=0)
    assert small.store.header["cv"] == AUTO_FOLDS and small.predictions.shape[1] == 400


def test_refit_full_works_with_the_auto_holdout(monkeypatch):
    monkeypatch.setattr(training, "AUTO_SWITCH_ROWS", 500)
    monkeypatch.setattr(training, "AUTO_HILLCLIMB", (0.1, 150, 300))
    monkeypatch.setattr(training, "AUTO_MIN_CLASS_ROWS", 20)
    X, y = _table(1200, seed=1)
    lib = build_library(X, y, spec=SPEC, verbose=0)
    clf = EnsembleSelectionClassifier(library=lib, n_bags=2, refit="full", backend="local")
    clf.fit(X, y)
    for fitted in clf.fitted_members_.runs.values():
        assert len(fitted.siblings) == 1
    assert np.isfinite(clf.predict_proba(X.iloc[:50])).all()


def test_cli_cv_argument():
    assert _cv_argument("auto") == "auto" and _cv_argument("None") is None
    assert _cv_argument("3") == 3
    with pytest.raises(ValueError, match="--cv 'x'"):
        _cv_argument("x")
