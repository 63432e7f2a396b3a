"""FSPT (Gu & Easwaran 2019): §4.2 candidates, Eq. 5-8 gain, §4.1 stopping counter, Eq. 9 score
and its Hooker-scale risk, missing values, importances, errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ensel.risk import FSPT
from ensel.risk._fspt_tree import best_split, candidate_splits, gini_gain, route
from ensel.risk.fspt import decreasing_fit


def eq5_gain(n_left, n, s, low, high):
    """Eq. 2 and 5-7 with explicit counts: |R-| = |R+| = n E-points spread by side length."""
    e_left = n * (s - low) / (high - low)  # Eq. 6
    e_right = n - e_left  # Eq. 7

    def gini(pos, neg):
        tot = pos + neg
        return 0.0 if tot == 0 else 2 * (pos / tot) * (neg / tot)

    n_right = n - n_left
    g_hat = (n_left + e_left) / (2 * n) * gini(n_left, e_left)
    g_hat += (n_right + e_right) / (2 * n) * gini(n_right, e_right)
    return 0.5 - g_hat


def test_candidates_are_those_of_section_4_2():
    # s = 1, 2, 4 (2 twice) in the box [0, 5]: {max(low, s1-ε), s1, s2-ε, s2, s3-ε, s3}
    boundary, cdf, below = candidate_splits(np.array([2.0, 1.0, 4.0, 2.0]), np.ones(4), 0, 5)
    np.testing.assert_array_equal(boundary, [1, 1, 2, 2, 4, 4])
    np.testing.assert_array_equal(below, [True, False, True, False, True, False])
    np.testing.assert_allclose(cdf, [0, 0.25, 0.25, 0.75, 0.75, 1.0])
    # when the data touch the box, splits leaving a zero-width child are dropped
    boundary, cdf, below = candidate_splits(np.array([2.0, 1.0, 4.0, 2.0]), np.ones(4), 1, 4)
    np.testing.assert_array_equal(boundary, [2, 2])
    np.testing.assert_allclose(cdf, [0.25, 0.75])
    # missing values are left out; weights count
    boundary, cdf, _ = candidate_splits(np.array([3.0, np.nan, 1.0]), np.array([3.0, 9, 1]), 0, 5)
    np.testing.assert_allclose(cdf, [0, 0.25, 0.25, 1.0])
    # a categorical value c + 0.5 fills [c, c + 1): candidates at integer boundaries
    boundary, cdf, _ = candidate_splits(np.array([0.5, 2.5, 2.5]), np.ones(3), 0, 4, True)
    np.testing.assert_array_equal(boundary, [1, 2, 3])
    np.testing.assert_allclose(cdf, [1 / 3, 1 / 3, 1.0])


def test_no_split_value_beats_the_candidate_set():
    rng = np.random.default_rng(0)
    for _ in range(20):
        v = rng.uniform(2, 8, size=12).round(1)
        low, high = 0.0, 10.0
        boundary, cdf, _ = candidate_splits(v, np.ones(v.size), low, high)
        best = gini_gain(cdf, (boundary - low) / (high - low)).max()
        grid = np.linspace(low, high, 20001)[1:-1]
        dense = gini_gain((v[None] <= grid[:, None]).mean(1), (grid - low) / (high - low))
        assert dense.max() <= best + 1e-12


def test_gain_equals_eq_5_on_a_hand_case():
    # box [0, 1], rows 0.1 0.2 0.3 0.9, split after 0.3: |R1+| = 3, |R1-| = 1.2 of 4 + 4
    # Ĝ = 4.2/8 · 2(3/4.2)(1.2/4.2) + 3.8/8 · 2(1/3.8)(2.8/3.8) = 0.3984962, ΔG = 0.1015038
    assert gini_gain(0.75, 0.3) == pytest.approx(0.1015038, abs=1e-7)
    assert eq5_gain(3, 4, 0.3, 0, 1) == pytest.approx(0.1015038, abs=1e-7)
    assert gini_gain(0.0, 0.4) == pytest.approx(eq5_gain(0, 4, 0.4, 0, 1))  # an empty child
    assert gini_gain(0.5, 0.5) == pytest.approx(0.0)  # data as dense as the background


def brute_force_eq8(Z, low, high, root_width, f):
    """Eq. 8 by enumeration: every candidate of every feature, gain from Eq. 5-7 counts."""
    best = (-np.inf, None, None)
    for j in range(Z.shape[1]):
        boundary, cdf, _ = candidate_splits(Z[:, j], np.ones(len(Z)), low[j], high[j])
        for b, c in zip(boundary, cdf, strict=True):
            gain = eq5_gain(c * len(Z), len(Z), b, low[j], high[j])
            crit = f[j] * (high[j] - low[j]) / root_width[j] * gain
            if crit > best[0] + 1e-12:
                best = (crit, j, gain)
    return best


@pytest.mark.parametrize("use_numba", [True, False])
def test_best_split_maximises_eq_8(use_numba):
    rng = np.random.default_rng(3)
    Z = np.column_stack([rng.uniform(0, 1, 30), rng.uniform(0, 2, 30) ** 2])
    low, high, root = np.array([0.0, 0.0]), np.array([1.0, 4.0]), np.array([2.0, 4.0])
    for f in ([0.5, 0.5], [0.9, 0.1], [0.05, 0.95]):
        f = np.array(f)
        split = best_split(
            Z, np.ones(30), low, high, root, f, np.zeros(2, bool), use_numba=use_numba
        )
        crit, j, gain = brute_force_eq8(Z, low, high, root, f)
        assert split.feature == j
        assert split.gain == pytest.approx(gain)
        assert f[j] * (high[j] - low[j]) / root[j] * split.gain == pytest.approx(crit)


def test_importance_changes_the_chosen_split():
    # feature 0 has the larger plain gain (a big empty slab), feature 1 a smaller one
    rng = np.random.default_rng(0)
    Z = np.column_stack([rng.uniform(0, 0.5, 200), rng.uniform(0, 0.9, 200)])
    args = (np.zeros(2), np.ones(2), np.ones(2))
    cat = np.zeros(2, bool)
    assert best_split(Z, np.ones(200), *args, np.array([0.5, 0.5]), cat).feature == 0
    assert best_split(Z, np.ones(200), *args, np.array([0.1, 0.9]), cat).feature == 1
    # zero importance: never split on that feature
    assert best_split(Z, np.ones(200), *args, np.array([0.0, 1.0]), cat).feature == 1


def test_numba_and_numpy_split_agree():
    rng = np.random.default_rng(1)
    for _ in range(200):
        n, d = int(rng.integers(1, 40)), int(rng.integers(1, 4))
        Z = rng.normal(size=(n, d)).round(int(rng.integers(0, 3)))
        cat = rng.random(d) < 0.3
        Z[:, cat] = rng.integers(0, 4, size=(n, int(cat.sum()))) + 0.5
        Z[rng.random((n, d)) < 0.1] = np.nan
        low = np.where(cat, 0.0, -4.0)
        high = np.where(cat, 4.0, 4.0)
        f = rng.random(d)
        args = (Z, rng.random(n) + 0.5, low, high, high - low + 1, f, cat)
        a, b = best_split(*args), best_split(*args, use_numba=False)
        assert (a is None) == (b is None)
        if a is not None:  # the same best criterion (exact ties may break either way)
            crit_a = f[a.feature] * (high - low)[a.feature] / (high - low + 1)[a.feature] * a.gain
            crit_b = f[b.feature] * (high - low)[b.feature] / (high - low + 1)[b.feature] * b.gain
            assert crit_a == pytest.approx(crit_b, rel=1e-9)
            assert a.best_gain == pytest.approx(b.best_gain, rel=1e-9)
            if crit_a == crit_b:
                assert (a.feature, a.threshold) == (b.feature, b.threshold)
                assert a.cdf == pytest.approx(b.cdf)


def test_stopping_counter_waits_patience_flat_splits():
    # Figure 7: two opposite quadrants of the unit square. Both marginals are uniform, so no
    # split of the root gains anything, yet the data are far from uniform.
    rng = np.random.default_rng(0)
    X = np.vstack([rng.uniform(0, 0.5, (400, 2)), rng.uniform(0.5, 1, (400, 2))])
    fit = dict(n_estimators=1, epsilon="auto", bounds=([0, 0], [1, 1]))
    # λ = 0: the counter exceeds λ at the root, which stays a leaf
    assert FSPT(patience=0, **fit).fit(X).trees_[0].n_nodes == 1
    # λ = 1: one flat split is allowed; its children see the empty quadrants (a gain above ε
    # resets the counter) and the tree separates them
    det = FSPT(patience=1, **fit).fit(X)
    empty = np.array([[0.25, 0.75], [0.75, 0.25]])
    full = np.array([[0.25, 0.25], [0.75, 0.75]])
    assert det.risk(empty).min() > 0.9 and det.risk(full).max() < 0.5


@pytest.mark.parametrize("patience", [0, 1, 3])
def test_stopping_counter_on_every_path(patience):
    """Replay §4.1 on the grown tree: c = c_parent + 1 when the node's best gain is <= ε, else
    0; every split node has c <= λ and every leaf that could split has c > λ."""
    X = np.random.default_rng(1).normal(size=(300, 2))
    eps = 0.03
    det = FSPT(1, epsilon=eps, patience=patience, min_samples_split=5).fit(X)
    tree, f = det.trees_[0], det.feature_importances_
    width, cat = det.space_.width, det.space_.categorical
    stack = [(0, np.arange(len(X)), 0)]
    n_flat = n_stopped = 0
    while stack:
        node, rows, c_parent = stack.pop()
        split = best_split(
            X[rows], np.ones(rows.size), tree.low[node], tree.high[node], width, f, cat
        )
        if rows.size < 5 or split is None:
            assert tree.feature[node] < 0
            continue
        c = c_parent + 1 if split.best_gain <= eps else 0
        n_flat += split.best_gain <= eps
        if tree.feature[node] < 0:
            assert c > patience
            n_stopped += 1
            continue
        assert c <= patience
        go_left = X[rows, tree.feature[node]] <= tree.threshold[node]
        stack += [(tree.left[node], rows[go_left], c), (tree.right[node], rows[~go_left], c)]
    assert n_stopped > 0  # the counter stopped branches ...
    assert (n_flat > n_stopped) == (patience > 0)  # ... and let flat splits through when λ > 0


def test_min_samples_split_stops_small_nodes():
    X = np.random.default_rng(0).normal(size=(200, 2))
    tree = FSPT(1, min_samples_split=50).fit(X).trees_[0]
    parents = tree.feature >= 0
    assert (tree.n_plus[parents] >= 50).all()
    assert FSPT(1, min_samples_split=500).fit(X).trees_[0].n_nodes == 1


def test_score_is_eq_9():
    X = np.random.default_rng(0).normal(size=(300, 3))
    det = FSPT(1, feature_importances=[0.2, 0.3, 0.5], e_points=40.0).fit(X)
    tree, width = det.trees_[0], det.space_.width
    leaf = tree.leaves[np.argmax(tree.n_plus[tree.leaves])]
    side = (tree.high[leaf] - tree.low[leaf]) / width
    n = tree.n_plus[leaf]
    expected = sum(f * n / (n + s * 40.0) for f, s in zip([0.2, 0.3, 0.5], side, strict=True))
    centre = ((tree.low[leaf] + tree.high[leaf]) / 2)[None]
    assert det.score_samples(centre)[0] == pytest.approx(expected)
    assert det.leaf_score_[0][leaf] == pytest.approx(expected)
    assert det.score_samples(np.array([[99.0, 0, 0]]))[0] == 0.0  # outside the box


def test_risk_is_a_decreasing_function_of_the_score():
    X = np.random.default_rng(0).normal(size=(500, 3))
    det = FSPT(1).fit(X)
    leaves = det.trees_[0].leaves
    s, r = det.leaf_score_[0][leaves], det.leaf_risk_[0][leaves]
    order = np.argsort(s)
    assert (np.diff(r[order]) <= 1e-12).all()
    raw = FSPT(1, calibration="none").fit(X)
    np.testing.assert_allclose(raw.leaf_risk_[0][leaves], 1 - s)


def test_scores_a_rounding_error_apart_get_a_finite_risk():
    # doctor_aus: two leaves' scores 1.1e-16 apart at the top; isotonic regression merges them
    # into one threshold, and the other leaf's risk was NaN, so the detector was dropped
    top = 0.6789188754590847
    score = np.array([0.0, 0.3, 0.6, top, np.nextafter(top, 1.0)])
    target = np.array([0.9, 0.6, 0.4, 0.1, 0.1])
    risk = decreasing_fit(score, target, np.ones(5))
    assert np.isfinite(risk).all()
    assert risk[-1] == risk[-2] <= risk[2]
    # the same through FSPT's own leaf calibration: a leaf one ulp above the best-scored one
    det = FSPT(1).fit(np.random.default_rng(0).normal(size=(500, 3)))
    tree, leaves = det.trees_[0], det.trees_[0].leaves
    score = det.leaf_score_[0].copy()
    best, other = leaves[np.argmax(score[leaves])], leaves[np.argmin(score[leaves])]
    score[other] = np.nextafter(score[best], 1.0)
    risk = det._leaf_risk(tree, score, det.space_.width, 500.0)[leaves]
    assert np.isfinite(risk).all()


def test_uniform_data_have_risk_near_one_half():
    # Hooker's scale: where the data are as dense as the uniform background, risk is 0.5
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(2000, 3))
    det = FSPT(n_estimators=10, random_state=0, bounds=(np.zeros(3), np.ones(3))).fit(X)
    r = det.risk(rng.uniform(size=(1000, 3)))
    assert 0.4 < r.mean() < 0.6


def test_far_points_rank_above_the_centre_and_outside_is_one():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1000, 4))
    y = (X[:, 0] > 0).astype(int)
    det = FSPT(n_estimators=5, random_state=0).fit(X, y)
    centre = 0.3 * rng.normal(size=(100, 4))
    far = np.where(rng.random((100, 4)) > 0.5, 0.9 * X.max(0), 0.9 * X.min(0))
    assert det.risk(far).mean() > det.risk(centre).mean() + 0.3
    out = centre.copy()
    out[:, 2] = X[:, 2].min() - 0.1
    np.testing.assert_array_equal(det.risk(out), 1.0)


def test_same_seed_same_trees():
    X = np.random.default_rng(0).normal(size=(300, 3))
    y = X[:, 0] > 0
    a = FSPT(n_estimators=4, random_state=7).fit(X, y)
    b = FSPT(n_estimators=4, random_state=7).fit(X, y)
    c = FSPT(n_estimators=4, random_state=8).fit(X, y)
    Xt = np.random.default_rng(1).normal(scale=2, size=(100, 3))
    np.testing.assert_array_equal(a.risk(Xt), b.risk(Xt))
    assert not np.array_equal(a.risk(Xt), c.risk(Xt))


def test_missing_value_goes_down_both_branches():
    # a row missing its only feature reaches every leaf, weighted by the leaf's training share
    X = np.random.default_rng(0).normal(size=(300, 1))
    det = FSPT(1).fit(X)
    tree, risk = det.trees_[0], det.leaf_risk_[0]
    _, leaves, weights = route(tree, np.array([[np.nan]]))
    np.testing.assert_allclose(weights, tree.n_plus[leaves] / 300)
    expected = np.sum(tree.n_plus[tree.leaves] / 300 * risk[tree.leaves])
    assert det.risk(np.array([[np.nan]]))[0] == pytest.approx(expected)


def test_missing_values_and_categories_at_fit():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"x": rng.normal(size=400), "c": rng.choice(list("abcd"), 400)})
    frame.loc[frame["c"] == "d", "x"] += 6  # category d lives far right
    frame.loc[::10, "x"] = np.nan
    det = FSPT(1).fit(frame)
    probe = pd.DataFrame({"x": [6.0, 6.0, 0.0], "c": ["d", "a", "a"]})
    r = det.risk(probe)
    assert r[1] > r[0] and r[1] > r[2]  # x = 6 is ordinary only for category d
    assert np.isclose(det.trees_[0].n_plus[0], 400)  # NaN rows keep their full weight


def test_feature_importances_from_a_forest_when_y_is_given():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    y = np.where(X[:, 1] > 0, "yes", "no")
    det = FSPT(random_state=0).fit(X, y)
    assert det.feature_importances_.argmax() == 1
    assert det.feature_importances_.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(FSPT().fit(X).feature_importances_, 1 / 3)
    reg = FSPT(random_state=0).fit(X, X[:, 2] * 3.0)  # continuous y: a regression forest
    assert reg.feature_importances_.argmax() == 2


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"feature_importances": "forest"}, "needs labels"),
        ({"feature_importances": [1.0, 2.0]}, "3 finite non-negative"),
        ({"feature_importances": "gain"}, "must be 'auto'"),
        ({"feature_importances": [0, 0, 0]}, "all zero"),
        ({"n_estimators": 0}, "n_estimators"),
        ({"patience": -1}, "patience"),
        ({"epsilon": "small"}, "epsilon"),
        ({"e_points": 0}, "e_points"),
        ({"calibration": "platt"}, "calibration"),
    ],
)
def test_bad_parameters_are_clear_errors(params, match):
    X = np.random.default_rng(0).normal(size=(50, 3))
    with pytest.raises(ValueError, match=match):
        FSPT(**params).fit(X)
