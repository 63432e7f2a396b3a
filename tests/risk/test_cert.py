"""CERT and the CERT forest (Hooker 2004; Sandia report §2.4, §3) and the tree machinery they
share with the chaos forest."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from ensel.risk import CERT, CERTForest
from ensel.risk._tree import BackgroundForest, BackgroundTree, grow_tree, node_weights, prune_tree
from ensel.risk.cert import n_features_to_try


def node_boxes(tree: BackgroundTree, low, high):
    """Each node's box, walked from the root by hand (independent of the grower)."""
    lo = np.empty((tree.n_nodes, len(low)))
    hi = np.empty_like(lo)
    lo[0], hi[0] = low, high
    for i in range(tree.n_nodes):
        if tree.left[i] >= 0:
            f, t = tree.feature[i], tree.threshold[i]
            lo[tree.left[i]], hi[tree.left[i]] = lo[i], hi[i]
            lo[tree.right[i]], hi[tree.right[i]] = lo[i], hi[i]
            hi[tree.left[i], f] = t
            lo[tree.right[i], f] = t
    return lo, hi


def reference_risk(tree: BackgroundTree, z: np.ndarray, node: int = 0) -> float:
    """C4.5 routing written the slow, obvious way (Hooker §5)."""
    if tree.left[node] < 0:
        return float(tree.value[node])
    x = z[tree.feature[node]]
    if np.isnan(x):
        p = tree.p_left[node]
        return p * reference_risk(tree, z, tree.left[node]) + (1 - p) * reference_risk(
            tree, z, tree.right[node]
        )
    return reference_risk(
        tree, z, tree.left[node] if x <= tree.threshold[node] else tree.right[node]
    )


def blob(n=600, d=3, seed=0):
    return np.random.default_rng(seed).normal(size=(n, d))


# --------------------------------------------------------------------------- background counts


def test_stump_counts_and_risk_by_hand():
    # x in {0.1, 0.2, 0.3} on the known range [0, 1]: 3 data points against 3 expected
    # background points. Candidate midpoints 0.15 and 0.25; information gain 0.0234 vs 0.0902,
    # so the split is at 0.25: left [0, 0.25] holds 2 points and 3 * 0.25 = 0.75 background.
    det = CERT(prune=None, criterion="entropy", max_depth=1, bounds=([0.0], [1.0]))
    det.fit(np.array([[0.1], [0.2], [0.3]]))
    tree = det.tree_
    assert tree.threshold[0] == 0.25
    np.testing.assert_allclose(tree.fg, [3.0, 2.0, 1.0])
    np.testing.assert_allclose(tree.bg, [3.0, 0.75, 2.25])
    np.testing.assert_allclose(det.risk([[0.2], [0.9]]), [0.75 / 2.75, 2.25 / 3.25])
    # a missing x goes both ways by total weight: 2.75 / 6 left, 3.25 / 6 right
    assert tree.p_left[0] == pytest.approx(2.75 / 6)
    assert det.risk([[np.nan]])[0] == pytest.approx(2.75 / 6 * 0.75 / 2.75 + 3.25 / 6 * 2.25 / 3.25)


def test_expected_background_equals_the_volume_formula_with_categories():
    rng = np.random.default_rng(1)
    n = 300
    frame = pd.DataFrame(
        {
            "x": rng.beta(2, 5, size=n) * 4.0,  # known range [0, 4]
            "c": rng.choice(list("abcde"), p=[0.5, 0.3, 0.1, 0.05, 0.05], size=n),
            "y": rng.normal(size=n),
        }
    )
    det = CERT(prune=None, bounds=([0.0, -5.0], [4.0, 5.0])).fit(frame)
    tree, space = det.tree_, det.space_
    np.testing.assert_array_equal(space.low, [0, 0, -5])
    np.testing.assert_array_equal(space.high, [4, 5, 5])  # 5 categories: [0, 5)
    lo, hi = node_boxes(tree, space.low, space.high)
    volume = np.prod((hi - lo) / (space.high - space.low), axis=1)
    np.testing.assert_allclose(tree.bg, n * volume, rtol=1e-9)
    cat = tree.left >= 0
    cat &= tree.feature == 1
    assert cat.any()
    # a categorical axis splits only between categories: its volume share is a category count
    np.testing.assert_array_equal(tree.threshold[cat], np.round(tree.threshold[cat]))


def test_bootstrap_weights_count_in_the_background():
    Z = blob(200, 2)
    w = np.random.default_rng(0).poisson(1.0, size=200).astype(float)
    low, high = Z.min(0), Z.max(0)
    tree = grow_tree(Z, w, low, high, np.zeros(2, bool))
    assert tree.bg[0] == w.sum() == tree.fg[0]
    lo, hi = node_boxes(tree, low, high)
    np.testing.assert_allclose(tree.bg, w.sum() * np.prod((hi - lo) / (high - low), axis=1))


# --------------------------------------------------------------------------- risk values


def test_uniform_data_gives_risk_near_one_half():
    # data as dense as the background everywhere: the true risk is 0.5 at every point
    rng = np.random.default_rng(0)
    X, Xt = rng.uniform(size=(1000, 3)), rng.uniform(size=(1000, 3))
    bounds = (np.zeros(3), np.ones(3))
    det = CERTForest(25, min_samples_leaf=20, bounds=bounds, random_state=0).fit(X)
    r = det.risk(Xt)
    assert abs(r.mean() - 0.5) < 0.05
    assert np.quantile(r, 0.05) > 0.4 and np.quantile(r, 0.95) < 0.65
    # full-size trees are biased upward between the rows (a new point lands in big leaves more
    # often); larger leaves remove the bias, the default of five rows most of it
    bias = [
        abs(
            CERTForest(25, min_samples_leaf=k, bounds=bounds, random_state=0).fit(X).risk(Xt).mean()
            - 0.5
        )
        for k in (1, 5)
    ]
    assert bias[0] > bias[1] > abs(r.mean() - 0.5)
    assert bias[1] < 0.1


def test_risk_is_one_outside_known_bounds_only():
    X = blob()
    bounds = (-6 * np.ones(3), 6 * np.ones(3))
    for det in (CERT(bounds=bounds, random_state=0), CERTForest(10, bounds=bounds, random_state=0)):
        det.fit(X)
        beyond_data = np.array([[5.0, 0.0, 0.0]])  # outside the training range, inside bounds
        outside = np.array([[6.5, 0.0, 0.0], [0.0, -7.0, 0.0]])
        assert det.risk(beyond_data)[0] < 1.0
        np.testing.assert_array_equal(det.risk(outside), 1.0)


@pytest.mark.parametrize(
    "make", [lambda: CERT(random_state=0), lambda: CERTForest(30, random_state=0)]
)
def test_risk_grows_with_distance_from_a_gaussian_blob(make):
    X = blob(1000, 4)
    det = make().fit(X)
    rng = np.random.default_rng(3)
    Xt = rng.uniform(X.min(0), X.max(0), size=(500, 4))
    r = det.risk(Xt)
    assert spearmanr(r, np.linalg.norm(Xt, axis=1)).statistic > 0.5
    assert det.risk(0.1 * rng.normal(size=(50, 4))).mean() < 0.3
    assert r[np.linalg.norm(Xt, axis=1) > 4].mean() > 0.8


# --------------------------------------------------------------------------- missing values


def hand_tree() -> BackgroundTree:
    # root: x0 <= 0.5 (a quarter of the weight left); left: x1 <= 0.5 (0.6 left), leaves with
    # risk 0.1 and 0.3; right: a leaf with risk 0.9. fg + bg = 1 per node, so risk = bg.
    return BackgroundTree(
        feature=np.array([0, 1, -1, -1, -1]),
        threshold=np.array([0.5, 0.5, 0.0, 0.0, 0.0]),
        left=np.array([1, 3, -1, -1, -1]),
        right=np.array([2, 4, -1, -1, -1]),
        fg=np.array([0.5, 0.5, 0.1, 0.9, 0.7]),
        bg=np.array([0.5, 0.5, 0.9, 0.1, 0.3]),
        p_left=np.array([0.25, 0.6, 0.5, 0.5, 0.5]),
        depth=2,
    )


def test_missing_values_mix_both_branches_by_hand():
    forest = BackgroundForest.stack([hand_tree()])
    Z = np.array(
        [
            [np.nan, 0.2],  # 0.25 * 0.1 + 0.75 * 0.9
            [np.nan, np.nan],  # 0.25 * (0.6 * 0.1 + 0.4 * 0.3) + 0.75 * 0.9
            [0.2, np.nan],  # 0.6 * 0.1 + 0.4 * 0.3
            [0.7, np.nan],  # the right leaf; x1 is never asked
            [0.2, 0.7],
        ]
    )
    np.testing.assert_allclose(forest.risk(Z), [0.7, 0.72, 0.18, 0.9, 0.3])


def test_compiled_routing_matches_the_reference_with_missing_values():
    rng = np.random.default_rng(0)
    X = blob(500, 4)
    X[rng.random(X.shape) < 0.1] = np.nan
    low, high, cat = np.nanmin(X, 0), np.nanmax(X, 0), np.zeros(4, bool)
    trees = [grow_tree(X, rng.poisson(1.0, 500).astype(float), low, high, cat) for _ in range(3)]
    Z = rng.normal(size=(200, 4))
    Z[rng.random(Z.shape) < 0.3] = np.nan
    want = [np.mean([reference_risk(t, z) for t in trees]) for z in Z]
    # leaf risks and missing-value shares are kept as float32: alike to float32's precision
    np.testing.assert_allclose(BackgroundForest.stack(trees).risk(Z), want, rtol=1e-6)


def test_training_rows_with_missing_values_are_split_not_lost():
    X = blob(400, 3)
    X[np.random.default_rng(1).random(X.shape) < 0.2] = np.nan
    tree = CERT(prune=None, random_state=0).fit(X).tree_
    inner = np.flatnonzero(tree.left >= 0)
    assert tree.fg[0] == 400
    np.testing.assert_allclose(
        tree.fg[tree.left[inner]] + tree.fg[tree.right[inner]], tree.fg[inner]
    )


# --------------------------------------------------------------------------- growth and pruning


def test_cert_forest_trees_have_no_edge_splits():
    # without edge splits every leaf keeps data (report §3: edge splits hurt CERT forests)
    det = CERTForest(5, random_state=0).fit(blob())
    leaves = det.forest_.left < 0
    assert (det.forest_.leaf[leaves] < 1.0).all()


def test_pruning_never_raises_the_held_out_loss():
    X = blob(800, 3)
    low, high = X.min(0), X.max(0)
    w_grow = np.r_[np.ones(400), np.zeros(400)]
    tree = grow_tree(X, w_grow, low, high, np.zeros(3, bool), split="gini")

    def held_out_brier(t: BackgroundTree) -> float:
        fg = node_weights(t, X, 1 - w_grow)
        bg = 400 * t.bg / t.bg[0]
        p, leaf = t.value, t.left < 0
        return float((fg * p**2 + bg * (1 - p) ** 2)[leaf].sum())

    pruned = prune_tree(tree, X, 1 - w_grow, "brier")
    assert pruned.n_leaves < tree.n_leaves
    assert held_out_brier(pruned) <= held_out_brier(tree)
    assert pruned.bg[0] == tree.bg[0] and (pruned.left[pruned.left >= 0] > 0).all()


def test_single_cert_is_pruned_and_smaller_than_unpruned():
    X = blob(1000, 3)
    pruned = CERT(random_state=0).fit(X).tree_
    full = CERT(prune=None, random_state=0).fit(X).tree_
    assert 1 < pruned.n_leaves < full.n_leaves / 4


def test_pruned_cert_forest_prunes_each_tree_on_rows_that_did_not_grow_it(monkeypatch):
    """Report §3 and Table 1: each tree of ``prune="error"`` grows on one half of the rows and is
    pruned by reduced-error pruning on the other half; the forest keeps the pruned trees."""
    import ensel.risk._tree as tree_module

    calls = []
    real_grow, real_prune = tree_module.grow_tree, tree_module.prune_tree

    def grow(Z, w, *args, **kw):
        calls.append(("grow", w.copy()))
        return real_grow(Z, w, *args, **kw)

    def prune(tree, Z, w, loss):
        pruned = real_prune(tree, Z, w, loss)
        calls.append(("prune", w.copy(), loss, tree, pruned))
        return pruned

    monkeypatch.setattr(tree_module, "grow_tree", grow)
    monkeypatch.setattr(tree_module, "prune_tree", prune)
    X = blob(600, 3)
    det = CERTForest(4, prune="error", min_samples_leaf=1, n_jobs=1, random_state=0).fit(X)
    grows = [c[1] for c in calls if c[0] == "grow"]
    prunes = [c for c in calls if c[0] == "prune"]
    assert len(grows) == len(prunes) == 4
    for w_grow, (_, w_held, loss, grown, pruned) in zip(grows, prunes, strict=True):
        assert loss == "error"
        assert w_grow.sum() == w_held.sum() == 300  # each half bootstrapped to its own size
        assert not ((w_grow > 0) & (w_held > 0)).any()  # no growing row judges the pruning
        assert pruned.n_leaves < grown.n_leaves
        on_growing_rows = real_prune(grown, X, w_grow, "error")
        assert on_growing_rows.n_leaves != pruned.n_leaves  # the held-out rows decided
    kept = np.diff(np.r_[det.forest_.roots, det.forest_.left.shape[0]])
    assert kept.tolist() == [p[4].n_nodes for p in prunes]  # the forest holds the pruned trees
    unpruned = CERTForest(4, min_samples_leaf=1, random_state=0).fit(X)
    assert (det.forest_.left < 0).sum() < (unpruned.forest_.left < 0).sum() / 2


def test_same_seed_same_forest_any_n_jobs_and_other_seed_differs():
    X, Xt = blob(), blob(100, seed=9)
    a = CERTForest(6, max_features="log2", random_state=4, n_jobs=1).fit(X).risk(Xt)
    b = CERTForest(6, max_features="log2", random_state=4, n_jobs=2).fit(X).risk(Xt)
    c = CERTForest(6, max_features="log2", random_state=5, n_jobs=1).fit(X).risk(Xt)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_max_features_counts():
    assert n_features_to_try(None, 10) == 10
    assert n_features_to_try("log2", 10) == 4  # floor(log2 10) + 1, report §4.2
    assert n_features_to_try("sqrt", 10) == 3
    assert n_features_to_try(0.25, 10) == 2
    assert n_features_to_try(20, 10) == 10


@pytest.mark.parametrize(
    ("params", "word"),
    [
        ({"n_estimators": 0}, "n_estimators"),
        ({"criterion": "mse"}, "criterion"),
        ({"max_features": "all"}, "max_features"),
        ({"min_samples_leaf": -1}, "min_samples_leaf"),
    ],
)
def test_bad_forest_parameters_are_named(params, word):
    with pytest.raises(ValueError, match=word):
        CERTForest(**params).fit(blob(50))


def test_too_few_rows_to_prune_is_a_clear_error():
    with pytest.raises(ValueError, match="validation_fraction"):
        CERT(validation_fraction=0.1).fit(blob(4))
    assert CERT(prune=None).fit(blob(4)).risk(blob(4)).shape == (4,)


def test_a_stacked_forest_keeps_28_bytes_a_node():
    forest = BackgroundForest.stack([hand_tree(), hand_tree()])
    arrays = ("feature", "threshold", "left", "right", "p_left", "leaf")
    assert sum(getattr(forest, a).nbytes for a in arrays) == 28 * 10
    assert forest.leaf.tolist() == pytest.approx(np.tile(hand_tree().value, 2).tolist())
    density = BackgroundForest.stack([hand_tree(), hand_tree()], aggregate="density")
    assert density.leaf.tolist() == pytest.approx(np.tile(hand_tree().ratio, 2).tolist())
    assert forest.left.tolist() == [1, 3, -1, -1, -1, 6, 8, -1, -1, -1]  # global child ids
    assert forest.threshold.dtype == np.float64  # every row takes its training branch


def test_a_leaf_without_background_keeps_a_finite_density_ratio():
    tree = dataclasses.replace(
        hand_tree(),
        bg=np.array([0.5, 0.5, 0.0, 0.1, 0.3]),  # the right leaf holds no background
        p_left=np.array([1.0, 0.6, 0.5, 0.5, 0.5]),  # and no training weight of a missing x0
    )
    forest = BackgroundForest.stack([tree], aggregate="density")
    assert np.isfinite(forest.leaf).all() and forest.leaf[2] > 1e38
    Z = np.array([[0.2, 0.7], [0.7, 0.2], [np.nan, 0.7]])
    risk = forest.risk(Z)
    assert np.isfinite(risk).all()
    assert risk[0] == risk[2] == pytest.approx(1 / (1 + 0.7 / 0.3))  # weight 0 adds nothing
    assert risk[1] < 1e-30
