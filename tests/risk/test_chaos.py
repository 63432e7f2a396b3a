"""Chaos forest (Sandia report §2.5, §3): purely random trees against the exact uniform
background, half of each bootstrap sample for structure and half for Brier-score pruning."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from ensel.risk import ChaosForest
from ensel.risk._tree import fit_background_forest, grow_tree


def blob(n=600, d=3, seed=0):
    return np.random.default_rng(seed).normal(size=(n, d))


def rows_per_node(tree, Z):
    """The training rows in each node, partitioned by hand (no missing values)."""
    rows = {0: np.arange(len(Z))}
    for i in range(tree.n_nodes):
        if tree.left[i] >= 0:
            r = rows[i]
            go = Z[r, tree.feature[i]] <= tree.threshold[i]
            rows[tree.left[i]], rows[tree.right[i]] = r[go], r[~go]
    return rows


def node_boxes(tree, low, high):
    lo = np.empty((tree.n_nodes, len(low)))
    hi = np.empty_like(lo)
    lo[0], hi[0] = low, high
    for i in range(tree.n_nodes):
        if tree.left[i] >= 0:
            f, t, a, b = tree.feature[i], tree.threshold[i], tree.left[i], tree.right[i]
            lo[a], hi[a], lo[b], hi[b] = lo[i], hi[i], lo[i], hi[i]
            hi[a, f] = lo[b, f] = t
    return lo, hi


@pytest.mark.parametrize("edge", [True, False])
def test_thresholds_are_midpoints_or_edges(edge):
    Z = np.round(blob(80, 2), 1)  # ties, so that distinct values matter
    low, high = Z.min(0) - 1.0, Z.max(0) + 1.0
    tree = grow_tree(Z, np.ones(80), low, high, np.zeros(2, bool), split="random",
                     edge_splits=edge, seed=7)  # fmt: skip
    rows = rows_per_node(tree, Z)
    lo, hi = node_boxes(tree, low, high)
    n_edge = 0
    for i in np.flatnonzero(tree.left >= 0):
        f = tree.feature[i]
        u = np.unique(Z[rows[i], f])
        cands = list((u[1:] + u[:-1]) / 2)
        edges = [(lo[i, f] + u[0]) / 2, (u[-1] + hi[i, f]) / 2] if edge else []
        assert min(abs(np.array(cands + edges) - tree.threshold[i])) < 1e-12
        n_edge += min(abs(np.array(edges) - tree.threshold[i]), default=1) < 1e-12
    # data runs out: every leaf holds fewer than two distinct rows, or none at all
    for i in np.flatnonzero(tree.left < 0):
        assert len(np.unique(Z[rows[i]], axis=0)) <= 1
    empty = (tree.fg == 0) & (tree.left < 0)
    if edge:
        assert n_edge > 0 and empty.any()
        np.testing.assert_array_equal(tree.value[empty], 1.0)  # pure background
    else:
        assert n_edge == 0 and not empty.any()


def test_categorical_thresholds_fall_between_categories():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"c": rng.choice(list("abcdef"), 300), "x": rng.normal(size=300)})
    det = ChaosForest(5, prune=None, random_state=0).fit(frame)
    f = det.forest_
    cat = (f.left >= 0) & (f.feature == 0)
    assert cat.any()
    t = f.threshold[cat]
    np.testing.assert_array_equal(t, np.round(t))
    assert ((t >= 1) & (t <= 5)).all()


def test_half_of_each_bootstrap_grows_and_the_other_half_prunes():
    Z = blob(400)
    low, high = Z.min(0), Z.max(0)
    grow = {"split": "random", "edge_splits": True}
    _, pruned = fit_background_forest(Z, low, high, np.zeros(3, bool), n_estimators=4, grow=grow,
                                      prune="brier", random_state=0)  # fmt: skip
    _, full = fit_background_forest(Z, low, high, np.zeros(3, bool), n_estimators=4, grow=grow,
                                    prune=None, random_state=0)  # fmt: skip
    for t in pruned:
        assert t.fg[0] == t.bg[0] == 200  # the structure half, against as much background
    assert sum(t.n_leaves for t in pruned) < sum(t.n_leaves for t in full) / 2


def test_risk_grows_with_distance_from_a_gaussian_blob():
    X = blob(1000, 4)
    det = ChaosForest(30, random_state=0).fit(X)
    rng = np.random.default_rng(3)
    Xt = rng.uniform(X.min(0), X.max(0), size=(500, 4))
    r = det.risk(Xt)
    assert spearmanr(r, np.linalg.norm(Xt, axis=1)).statistic > 0.5
    assert det.risk(0.1 * rng.normal(size=(50, 4))).mean() < 0.3
    assert r[np.linalg.norm(Xt, axis=1) > 4].mean() > 0.8


def test_risk_is_one_outside_known_bounds_only():
    bounds = (-6 * np.ones(3), 6 * np.ones(3))
    det = ChaosForest(10, bounds=bounds, random_state=0).fit(blob())
    assert det.risk([[5.0, 0.0, 0.0]])[0] < 1.0
    np.testing.assert_array_equal(det.risk([[6.5, 0.0, 0.0], [0.0, 0.0, -9.0]]), 1.0)


def test_missing_values_in_training_and_prediction():
    X = blob(500)
    X[np.random.default_rng(1).random(X.shape) < 0.2] = np.nan
    det = ChaosForest(10, random_state=0).fit(X)
    r = det.risk([[np.nan, np.nan, np.nan], [0.0, np.nan, 0.0], [np.nan, 3.0, 3.0]])
    assert np.isfinite(r).all()
    assert r[1] < r[2]  # the centre of the blob is safer than its corner, one value missing


def test_same_seed_same_forest_any_n_jobs_and_other_seed_differs():
    X, Xt = blob(), blob(100, seed=9)
    a = ChaosForest(6, random_state=4, n_jobs=1).fit(X).risk(Xt)
    b = ChaosForest(6, random_state=4, n_jobs=2).fit(X).risk(Xt)
    c = ChaosForest(6, random_state=5).fit(X).risk(Xt)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


@pytest.mark.parametrize(
    ("params", "word"),
    [({"prune": "gini"}, "prune"), ({"structure_fraction": 1.0}, "structure_fraction")],
)
def test_bad_parameters_are_named(params, word):
    with pytest.raises(ValueError, match=word):
        ChaosForest(**params).fit(blob(50))


def test_the_growing_and_pruning_rows_are_disjoint(monkeypatch):
    import ensel.risk._tree as tree_module

    seen = []
    real_grow, real_prune = tree_module.grow_tree, tree_module.prune_tree

    def grow(Z, w, *args, **kw):
        seen.append(("grow", w.copy()))
        return real_grow(Z, w, *args, **kw)

    def prune(tree, Z, w, loss):
        seen.append(("prune", w.copy()))
        return real_prune(tree, Z, w, loss)

    monkeypatch.setattr(tree_module, "grow_tree", grow)
    monkeypatch.setattr(tree_module, "prune_tree", prune)
    Z = blob(300)
    grow = {"split": "random", "edge_splits": True}
    fit_background_forest(Z, Z.min(0), Z.max(0), np.zeros(3, bool), n_estimators=3, n_jobs=1,
                          grow=grow, prune="brier", random_state=0)  # fmt: skip
    grows = [w for kind, w in seen if kind == "grow"]
    prunes = [w for kind, w in seen if kind == "prune"]
    assert len(grows) == len(prunes) == 3
    for g, p in zip(grows, prunes, strict=True):
        assert g.sum() == p.sum() == 150  # half of the rows each, bootstrapped
        assert not ((g > 0) & (p > 0)).any()  # no row on both sides


def test_brier_pruning_keeps_a_split_that_does_not_lower_the_score():
    from ensel.risk._tree import _prune

    # root with two leaves; the leaves' Brier loss on the held-out data equals the root's
    left, right = np.array([1, -1, -1]), np.array([2, -1, -1])
    value = np.array([0.5, 0.5, 0.5])
    fg, bg = np.array([4.0, 2.0, 2.0]), np.array([4.0, 2.0, 2.0])
    kept_left, _ = _prune(left, right, value, fg, bg, 1)
    assert kept_left[0] == 1  # a tie keeps the split (Brier)
    pruned_left, _ = _prune(left, right, value, fg, bg, 0)
    assert pruned_left[0] == -1  # a tie prunes it (misclassification error, Quinlan)
    better = np.array(
        [0.5, 0.1, 0.9]
    )  # value: the background share  # the split lowers the Brier score: kept
    assert (
        _prune(left, right, better, np.array([4.0, 4.0, 0.0]), np.array([4.0, 0.0, 4.0]), 1)[0][0]
        == 1
    )
