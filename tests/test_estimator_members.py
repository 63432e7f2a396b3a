"""Selection settings chosen per fit (``choose_selection``, ``tune_selection=True``) and library
growth through the estimator (``grow=``)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_classification

from ensel import EnsembleSelectionClassifier
from ensel.strategies import SELECTION_CANDIDATES, choose_selection

OPTIONS = {"n_iter": 20, "n_bags": 5, "random_state": 0}


def _library_predictions(n_good=3, n_noise=40, n=300, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    signal = np.where(y == 1, 0.75, 0.25)
    good = np.clip(signal + rng.normal(0, 0.15, (n_good, n)), 0.02, 0.98)
    noise = rng.uniform(0.02, 0.98, (n_noise, n))
    return np.vstack([good, noise]), y


def test_choose_selection_picks_the_best_mean_held_out_score():
    P, y = _library_predictions()
    chosen, table = choose_selection(P, y, "mxe", OPTIONS)
    assert len(table) == len(SELECTION_CANDIDATES)
    scores = [row["score"] for row in table]
    best = int(np.argmin(scores))  # mxe: lower is better
    assert chosen == {**OPTIONS, **SELECTION_CANDIDATES[best]}
    assert all(row["se"] >= 0 for row in table)


def test_choose_selection_keeps_the_given_options_on_a_tie():
    P, y = _library_predictions(n_good=1, n_noise=0)  # one member: every setting is the same
    chosen, table = choose_selection(P, y, "roc", OPTIONS)
    assert len({round(row["score"], 12) for row in table}) == 1
    assert chosen == OPTIONS


def _data(seed=0):
    X, y = make_classification(
        n_samples=300, n_features=6, n_informative=4, n_redundant=0, random_state=seed
    )
    return X, y


SPEC = {"families": [{"family": "logreg", "params": {"ridge": [0.01, 1.0, 100.0]}}]}


def test_estimator_tunes_selection_per_fit():
    X, y = _data()
    clf = EnsembleSelectionClassifier(
        library=SPEC, n_jobs=1, cv=3, tune_selection=True, n_bags=5
    ).fit(X, y)
    assert len(clf.selection_comparison_) == len(SELECTION_CANDIDATES)
    changes = [{**clf.get_params(), **c} for c in SELECTION_CANDIDATES]
    assert any(
        all(clf.selection_options_[k] == c.get(k) for k in ("prune_fraction", "n_bags"))
        for c in changes
    )
    assert clf.predict_proba(X[:5]).shape == (5, 2)


def test_estimator_without_tuning_keeps_its_options():
    X, y = _data(seed=1)
    clf = EnsembleSelectionClassifier(
        library=SPEC, n_jobs=1, cv=3, n_bags=5, prune_fraction=0.5
    ).fit(X, y)
    assert clf.selection_comparison_ == []
    assert clf.selection_options_["prune_fraction"] == 0.5


def test_estimator_grows_its_library():
    pytest.importorskip("optuna")
    X, y = _data(seed=2)
    clf = EnsembleSelectionClassifier(
        library=SPEC, cv=3, n_bags=5, grow={"trials": 2, "families": ["extra_trees"]}
    ).fit(X, y)
    families = clf.leaderboard_["family"].value_counts()
    assert families["logreg"] == 3
    # one or two runs (those that raised the ensemble's score) x stages (64, 256) x (none, platt)
    assert families["extra_trees"] in (2 * 2, 2 * 2 * 2)
    assert clf.predict_proba(X[:5]).shape == (5, 2)


def test_estimator_grow_errors_name_the_argument():
    X, y = _data(seed=3)
    with pytest.raises(ValueError, match=r"'grow' parameter .* Got 'many'"):
        EnsembleSelectionClassifier(library=SPEC, n_jobs=1, cv=3, grow="many").fit(X, y)
