"""Repeated cross-validation: a library averaged over builds with different folds."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer

from ensel import EnsembleSelectionClassifier
from ensel.library import build_library
from ensel.library.storage.repeated import RepeatedLibrary, RepeatedRun

SPEC = {
    "name": "repeat",
    "families": [
        {"family": "logreg", "params": {"ridge": [1.0]}, "calibration": ["none", "platt"]},
        {"family": "random_forest", "params": {"max_features": [2]}, "stages": [5, 10]},
        {"family": "tree", "params": {"max_depth": [3]}},
    ],
}


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    X_train, y_train, X_test = X.iloc[:240], y.iloc[:240], X.iloc[240:300]
    root = tmp_path_factory.mktemp("repeated")
    libs = [
        build_library(X_train, y_train, spec=SPEC, cv=3, store=root / f"r{seed}", random_state=seed)
        for seed in (0, 1)
    ]
    return libs, X_train, y_train, X_test


def test_hillclimb_predictions_are_the_mean_over_builds(builds):
    (a, b), *_ = builds
    assert not np.allclose(a.predictions, b.predictions)  # other folds, other predictions
    both = RepeatedLibrary([a, b])
    assert list(both.members["id"]) == list(a.members["id"])
    assert both.repeats == 2
    order = [list(b.members["id"]).index(i) for i in a.members["id"]]
    want = (np.asarray(a.predictions, float) + np.asarray(b.predictions, float)[order]) / 2
    np.testing.assert_allclose(both.predictions, want, atol=1e-6)


def test_test_time_predictions_average_every_builds_siblings(builds):
    (a, b), _, _, X_test = builds
    both = RepeatedLibrary([a, b])
    ids = list(a.members["id"])
    want = (a.predict(X_test, ids) + b.predict(X_test, ids)) / 2
    np.testing.assert_allclose(both.predict(X_test, ids), want, atol=1e-12)
    members = both.subset(ids[:3])
    assert all(isinstance(run, RepeatedRun) for run in members.runs.values())
    again = pickle.loads(pickle.dumps(members))  # a saved model holds them
    np.testing.assert_allclose(again.predict(X_test), want[:3], atol=1e-12)


def test_a_run_one_build_lacks_keeps_the_builds_that_have_it(builds):
    (a, b), _, _, X_test = builds
    both = RepeatedLibrary([a, b])
    run = a.members["run"].iloc[0]
    rows = np.flatnonzero(a.members["run"] == run)
    b_ok = {r: rec for r, rec in b.store.records.items()}
    b_ok[run] = {**b_ok[run], "status": "failed"}
    lacking = RepeatedLibrary.__new__(RepeatedLibrary)
    lacking.__dict__.update(both.__dict__)
    lacking._loaded = {}
    lacking._libraries = [a, _Records(b, b_ok)]
    ids = list(a.members["id"].iloc[rows])
    np.testing.assert_allclose(lacking.predict(X_test, ids), a.predict(X_test, ids), atol=1e-12)


class _Records:
    """A library whose store reports other statuses (a run failed in this build)."""

    def __init__(self, lib, records):
        self._lib, self.store = lib, type("S", (), {"records": records})()

    def _fitted(self, run_id):
        return self._lib._fitted(run_id)


def test_the_estimator_selects_from_a_repeated_library(builds):
    (a, b), X_train, y_train, X_test = builds
    clf = EnsembleSelectionClassifier(library=RepeatedLibrary([a, b]), n_jobs=1, n_bags=5)
    proba = clf.fit(X_train, y_train).predict_proba(X_test)
    assert proba.shape == (len(X_test), 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)


def test_libraries_of_other_rows_are_refused(builds, tmp_path):
    (a, _), X_train, y_train, _ = builds
    other = build_library(
        X_train.iloc[:200], y_train.iloc[:200], spec=SPEC, cv=3, store=tmp_path / "o"
    )
    with pytest.raises(ValueError, match="different rows or labels"):
        RepeatedLibrary([a, other])
    with pytest.raises(ValueError, match="at least 2"):
        RepeatedLibrary([a])
