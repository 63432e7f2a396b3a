"""Tree families predict from the compiled trees directly (``tree_leaves``, ``tree_values``),
skipping scikit-learn's per-call checks: the members must equal what the estimators' own
``predict`` / ``predict_proba`` give, missing values included."""

from __future__ import annotations

import numpy as np
import pytest

from ensel.library.families import get_family


def _data(n_classes: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(300, 5))
    X[rng.random(X.shape) < 0.1] = np.nan
    y = (np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1]) > 0).astype(int)
    if n_classes == 3:
        y += (np.nan_to_num(X[:, 2]) > 0.8).astype(int)
    return X, y


def _fit(name: str, X, y, n_classes: int, stages, task="classification", **params):
    family = get_family(name, task)
    return family.fit(
        X,
        y,
        n_classes=n_classes,
        params={**family.params, **params},
        stages=stages,
        random_state=0,
    )


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("name", ["random_forest", "extra_trees"])
def test_forest_members_equal_the_trees_predict_proba(name, n_classes):
    X, y = _data(n_classes)
    params = {"max_features": 2} if name == "random_forest" else {}
    run = _fit(name, X, y, n_classes, (3, 8), **params)
    members = run.predict(X)["none"]
    for stage, size in enumerate((3, 8)):
        want = np.mean([t.tree.predict_proba(X) for t in run.trees[:size]], axis=0)
        np.testing.assert_allclose(members[stage], want, rtol=1e-12)


@pytest.mark.parametrize("resample", [True, False])
def test_adaboost_votes_equal_the_learners_predict(resample):
    X, y = _data(3)
    X = np.nan_to_num(X)  # adaboost sees the imputed view
    run = _fit("adaboost", X, y, 3, (4, 16), max_depth=2, resample=resample)
    votes = np.zeros((len(y), 3))
    for est, w in zip(run.estimators[:16], run.weights, strict=False):
        votes[np.arange(len(y)), est.predict(X).astype(int)] += w
    np.testing.assert_allclose(run.predict(X)["none"][1], votes / votes.sum(1, keepdims=True))


def test_smoothed_tree_leaves_equal_apply():
    X, y = _data(2)
    run = _fit("tree", X, y, 2, (1,))
    tree = run.trees[0]
    np.testing.assert_array_equal(run.predict(X)["none"][0], tree.table[tree.tree.apply(X)])


def test_regression_forest_members_equal_the_trees_predict():
    X, y = _data(2)
    target = np.nan_to_num(X[:, 0]) * 2.0 + y
    family = get_family("random_forest", "regression")
    run = family.fit(
        X, target, n_classes=0, params=dict(family.params), stages=(2, 6), random_state=0
    )
    got = np.asarray(run.predict(X)["none"]).reshape(2, len(y))
    np.testing.assert_allclose(got[1], np.mean([t.predict(X) for t in run.trees[:6]], axis=0))


def test_compiled_tree_reads_equal_the_estimators_own():
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

    from ensel.library.families._base import tree_input, tree_leaves, tree_values

    X, y = _data(3)
    clf = DecisionTreeClassifier(max_depth=4, random_state=0).fit(X, y)
    reg = DecisionTreeRegressor(max_depth=4, random_state=0).fit(X, np.nan_to_num(X[:, 3]))
    X32 = tree_input(X)
    np.testing.assert_array_equal(tree_values(clf)[tree_leaves(clf, X32)], clf.predict_proba(X))
    np.testing.assert_array_equal(tree_values(reg)[tree_leaves(reg, X32), 0], reg.predict(X))
