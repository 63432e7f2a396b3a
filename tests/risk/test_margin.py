"""Margin risk (Sandia report §2.2): the formula, Laplace-smoothed leaves, a given classifier."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import make_column_transformer
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder

from ensel.risk import MarginRisk
from ensel.risk._forest import laplace_leaf_proba
from ensel.risk.margin import margin_risk


def test_margin_is_one_minus_gap_between_top_two_classes():
    P = np.array([[0.7, 0.2, 0.1], [0.4, 0.2, 0.4], [0.0, 1.0, 0.0], [0.2, 0.3, 0.5]])
    np.testing.assert_allclose(margin_risk(P), [0.5, 1.0, 0.0, 0.8])
    np.testing.assert_allclose(margin_risk(np.array([0.9, 0.5])), [0.2, 1.0])  # positive class


def test_laplace_smoothed_leaf_probabilities_on_a_stump():
    # one unbootstrapped stump: left leaf holds classes (3, 0), right leaf (0, 2)
    X = np.array([[0.0], [1.0], [2.0], [3.0], [4.0]])
    y = np.array([0, 0, 0, 1, 1])
    stump = RandomForestClassifier(1, max_depth=1, bootstrap=False, random_state=0).fit(X, y)
    table = laplace_leaf_proba(stump, 2)
    leaves = stump.estimators_[0].apply(np.array([[0.0], [4.0]]))
    np.testing.assert_allclose(table[leaves], [[4 / 5, 1 / 5], [1 / 4, 3 / 4]])


def test_own_forest_margin_uses_the_smoothed_leaf_counts():
    # two far clusters: every tree puts each cluster in one pure leaf of its bootstrap count n,
    # so p = (n + 1) / (n + 2) and the margin risk is 2 / (n + 2), never 0
    X = np.r_[np.zeros(30), np.full(20, 10.0)][:, None]
    y = np.r_[np.zeros(30, int), np.ones(20, int)]
    det = MarginRisk(n_estimators=5, random_state=0).fit(X, y)
    risks = []
    for est in det.forest_.estimators_:
        leaf = est.apply(np.zeros((1, 1)).astype(np.float32))[0]
        n = est.tree_.weighted_n_node_samples[leaf]
        risks.append((n + 1) / (n + 2))
    p = np.mean(risks)
    np.testing.assert_allclose(det.risk(np.zeros((1, 1))), [1 - (p - (1 - p))])
    assert 0 < det.risk(np.zeros((1, 1)))[0] < 0.1


def test_margin_is_high_where_classes_overlap():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 2))
    y = (X[:, 0] + 0.3 * rng.normal(size=600) > 0).astype(int)
    det = MarginRisk(n_estimators=30, random_state=0).fit(X, y)
    boundary = np.column_stack([np.zeros(20), np.linspace(-1, 1, 20)])
    deep = np.column_stack([np.full(20, 1.5), np.linspace(-1, 1, 20)])
    assert det.risk(boundary).mean() > det.risk(deep).mean() + 0.3


def test_given_estimator_margin_equals_its_predict_proba_gap():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 3))
    y = np.digitize(X[:, 0] + X[:, 1], [-0.5, 0.5])  # three classes
    clf = LogisticRegression().fit(X, y)
    det = MarginRisk(estimator=clf).fit(X, y)
    Xt = rng.normal(scale=0.8, size=(50, 3))
    P = np.sort(clf.predict_proba(Xt), axis=1)
    np.testing.assert_allclose(det.risk(Xt), 1 - (P[:, -1] - P[:, -2]))
    np.testing.assert_allclose(det.predict_proba(Xt), clf.predict_proba(Xt))
    assert not hasattr(det, "forest_")  # nothing trained


def test_given_estimator_sees_raw_rows_and_not_rows_outside_the_box():
    frame = pd.DataFrame(
        {"x": np.linspace(0, 1, 40), "colour": np.tile(["red", "green", "blue", "red"], 10)}
    )
    y = (frame["x"] > 0.5).astype(int).to_numpy()
    encode = make_column_transformer((OneHotEncoder(), ["colour"]), remainder="passthrough")
    clf = make_pipeline(encode, LogisticRegression()).fit(frame, y)
    seen = []

    class Spy:
        classes_ = clf.classes_

        def predict_proba(self, X):
            seen.append(X)
            return clf.predict_proba(X)

        def __sklearn_is_fitted__(self):
            return True

    det = MarginRisk(estimator=Spy()).fit(frame)  # y is optional with an estimator
    new = frame.iloc[[0, 5, 30]].copy()
    new.iloc[1, 0] = 7.0  # outside the box
    r = det.risk(new)
    assert r[1] == 1.0
    assert isinstance(seen[-1], pd.DataFrame) and list(seen[-1].index) == [0, 30]
    P = np.sort(clf.predict_proba(frame.iloc[[0, 30]]), axis=1)
    np.testing.assert_allclose(r[[0, 2]], 1 - (P[:, 1] - P[:, 0]))


def test_estimator_errors_are_clear():
    X = np.random.default_rng(0).normal(size=(20, 2))
    with pytest.raises(ValueError, match="not fitted"):
        MarginRisk(estimator=LogisticRegression()).fit(X)
    with pytest.raises(TypeError, match="predict_proba"):
        MarginRisk(estimator=object()).fit(X)
    det = MarginRisk(estimator=LogisticRegression().fit(X, X[:, 0] > 0)).fit(X)
    with pytest.raises(ValueError, match="feature"):
        det.risk(X[:, :1])


def test_own_forest_needs_labels():
    with pytest.raises(ValueError, match="needs the class labels"):
        MarginRisk().fit(np.zeros((10, 2)))
