"""cv="auto": K stratified folds at every size (every run bagged); cv=None holds out a
hillclimb split as an explicit choice; the estimator, the builder and the command line take
it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ensel import EnsembleSelectionClassifier
from ensel.cli import _cv_argument
from ensel.library import build_library
from ensel.library.data.training import AUTO_FOLDS, resolve_cv

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


def test_auto_gives_k_folds_at_every_size():
    for n in (300, 19_999, 20_000, 100_000, 1_000_000):
        choice = resolve_cv("auto", n, np.arange(n) % 2)
        assert (choice.cv, choice.hillclimb_rows(n)) == (AUTO_FOLDS, n)
    assert resolve_cv("auto", 10**6, task="regression").cv == AUTO_FOLDS


def test_auto_takes_fewer_folds_where_the_rarest_class_has_fewer_rows():
    for n in (1_000, 200_000):
        rare = np.zeros(n, int)
        rare[:3] = 1
        assert resolve_cv("auto", n, rare).cv == 3
        rare[:100] = 1  # 0.05% of 200,000 rows: still enough for 5 stratified folds
        assert resolve_cv("auto", n, rare).cv == AUTO_FOLDS


def test_integers_and_none_stand_and_other_strings_are_refused():
    assert resolve_cv(3, 10**6).cv == 3
    assert resolve_cv(None, 10, hillclimb_fraction=0.3).hillclimb_fraction == 0.3
    with pytest.raises(ValueError, match=r"cv='five'.*'auto'"):
        resolve_cv("five", 100)


def test_the_builder_bags_every_run_under_auto_and_holds_out_under_none():
    X, y = _table(1200)
    lib = build_library(X, y, spec=SPEC, verbose=0)  # cv="auto" is the default
    assert lib.store.header["cv"] == AUTO_FOLDS and lib.predictions.shape[1] == 1200
    held = build_library(X, y, spec=SPEC, cv=None, hillclimb_fraction=0.25, verbose=0)
    assert held.store.header["cv"] is None
    assert held.predictions.shape[1] == pytest.approx(300, abs=1)


def test_refit_full_works_with_a_held_out_split():
    X, y = _table(1200, seed=1)
    lib = build_library(X, y, spec=SPEC, cv=None, verbose=0)
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


def test_a_budgeted_fit_on_a_large_table_bags_every_run():
    X, y = _table(25_000, seed=2)
    lib = build_library(X, y, spec="tiny", time_limit=20, n_jobs=2, verbose=0)
    assert lib.store.header["cv"] == AUTO_FOLDS
    assert lib.predictions.shape[1] == 25_000  # every row scored out of fold
    clf = EnsembleSelectionClassifier(library=lib, n_bags=2, random_state=0).fit(X, y)
    assert len(clf.fitted_members_.runs) > 0
    for fitted in clf.fitted_members_.runs.values():
        assert len(fitted.siblings) == AUTO_FOLDS  # the test-time prediction averages K
    assert np.isfinite(clf.predict_proba(X.iloc[:100])).all()
