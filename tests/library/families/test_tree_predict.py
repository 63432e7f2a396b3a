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


def test_packed_trees_find_the_leaves_apply_finds():
    """Trees of every depth (a lone leaf too), missing values sent either way, a one-column
    table (where a leaf's undefined feature must not be read), float32 values that equal a
    threshold: the walk over the packed trees gives ``tree_.apply``'s leaves."""
    from sklearn.tree import DecisionTreeClassifier

    from ensel.library.families._base import tree_input
    from ensel.library.families._treepack import TreePack

    X, y = _data(3)
    X = np.vstack([X, np.full((3, 5), np.nan)])
    y = np.concatenate([y, [0, 1, 2]])
    trees = [DecisionTreeClassifier(max_depth=d, random_state=d).fit(X, y) for d in (1, 3, None)]
    trees.append(DecisionTreeClassifier().fit(X, np.zeros_like(y)))  # one leaf
    trees.append(DecisionTreeClassifier(random_state=0).fit(X[:, :1], y))  # one column
    X32 = tree_input(X)
    X32[::5, 0] = np.float32(trees[1].tree_.threshold[0])  # on the threshold: left
    pack = TreePack(trees[:4])
    leaves = pack.leaves(X32, 4)
    for tree, got in zip(trees[:4], leaves, strict=True):
        np.testing.assert_array_equal(got, tree.tree_.apply(X32))
    np.testing.assert_array_equal(pack.leaves(X32, 2), leaves[:2])
    np.testing.assert_array_equal(pack.walk(X32, np.arange(4)), leaves)  # numpy's walk, numba's
    np.testing.assert_array_equal(pack.walk(X32[:1], np.arange(3)), leaves[:3, :1])
    one = tree_input(X[:, :1])
    np.testing.assert_array_equal(TreePack(trees[4:]).leaves(one, 1)[0], trees[4].tree_.apply(one))
    np.testing.assert_array_equal(
        TreePack(trees[4:]).walk(one, np.arange(1))[0], trees[4].tree_.apply(one)
    )


@pytest.mark.parametrize("n_classes", [2, 3])
def test_adaboost_small_and_large_batches_sum_the_votes_of_the_step_loop(n_classes, monkeypatch):
    """Members from the packed walk and one accumulated sum (small batches) and from each
    tree's apply and a loop over steps (large ones) equal, bit for bit, the votes summed step
    after step by each learner's own predict."""
    from ensel.library.families import _treepack, trees

    X, y = _data(n_classes)
    X = np.nan_to_num(X)
    run = _fit("adaboost", X, y, n_classes, (0, 3, 16, 40), max_depth=2, resample=False)
    small = [run.predict(X[i : i + 1], stages=[1, 2, 3]) for i in range(20)]
    with monkeypatch.context() as patched:
        patched.setattr(_treepack, "PACK_CELLS", 0)
        patched.setattr(trees, "PACK_CELLS", 0)
        large = run.predict(X[:20], stages=[1, 2, 3])
    votes = np.zeros((20, n_classes))
    want = {}
    for i, (est, w) in enumerate(zip(run.estimators, run.weights, strict=False), start=1):
        votes[np.arange(20), est.predict(X[:20]).astype(int)] += w
        want[i] = votes / votes.sum(axis=1, keepdims=True)
    for j, size in enumerate([3, 16, min(40, len(run.estimators))]):
        np.testing.assert_array_equal(large["none"][j], want[size])
        for i in range(20):
            np.testing.assert_array_equal(small[i]["none"][j], want[size][i : i + 1])
            np.testing.assert_array_equal(small[i]["logistic"][j], large["logistic"][j][i : i + 1])


def test_a_pickled_run_leaves_its_pack_behind():
    import pickle

    X, y = _data(2)
    run = _fit("adaboost", np.nan_to_num(X), y, 2, (4, 8), max_depth=1)
    run.predict(np.nan_to_num(X[:2]))
    assert {"_pack", "_node_labels"} <= set(run.__dict__)
    again = pickle.loads(pickle.dumps(run))
    assert not {"_pack", "_node_labels", "_cached"} & set(again.__dict__)
    np.testing.assert_array_equal(again.predict(X[:2])["none"], run.predict(X[:2])["none"])


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("name", ["random_forest", "extra_trees", "bagged_trees", "tree"])
def test_tree_members_of_small_batches_equal_the_tree_loop(name, n_classes, monkeypatch):
    """Forests, bagged and single trees, missing values included: a small batch's members
    (one walk, one accumulated sum) equal, bit for bit, those of the loop over each tree's
    apply that large batches take."""
    from ensel.library.families import _treepack, trees

    X, y = _data(n_classes, seed=1)
    params = {"max_features": 2} if name == "random_forest" else {}
    stages = (1,) if name == "tree" else (3, 8, 20)
    run = _fit(name, X, y, n_classes, stages, **params)
    small = [run.predict(X[i : i + 3])["none"] for i in range(0, 30, 3)]
    with monkeypatch.context() as patched:
        patched.setattr(_treepack, "PACK_CELLS", 0)
        patched.setattr(trees, "PACK_CELLS", 0)
        large = run.predict(X[:30])["none"]
        stage = run.predict(X[:3], stages=[len(stages) - 1])["none"]
    np.testing.assert_array_equal(np.concatenate(small, axis=1), large)
    np.testing.assert_array_equal(run.predict(X[:3], stages=[len(stages) - 1])["none"], stage)


@pytest.mark.parametrize("name", ["random_forest", "extra_trees", "bagged_trees"])
def test_regression_tree_members_of_small_batches_equal_the_tree_loop(name, monkeypatch):
    from ensel.library.families import _regression, _treepack

    X, y = _data(2, seed=2)
    target = np.nan_to_num(X[:, 0]) * 2.0 + y
    family = get_family(name, "regression")
    run = family.fit(
        X, target, n_classes=0, params=dict(family.params), stages=(2, 6, 50), random_state=0
    )
    small = np.concatenate([run.predict(X[i : i + 2])["none"] for i in range(0, 20, 2)], axis=1)
    with monkeypatch.context() as patched:
        patched.setattr(_treepack, "PACK_CELLS", 0)
        patched.setattr(_regression, "PACK_CELLS", 0)
        large = run.predict(X[:20])["none"]
    np.testing.assert_array_equal(small, large)


@pytest.mark.parametrize("name", ["lightgbm", "xgboost"])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_boosted_members_read_from_the_booster_equal_predict_proba(n_classes, name):
    """The booster's probabilities equal the classifier's predict_proba bit for bit, single
    rows and batches, missing values included."""
    pytest.importorskip(name)
    from ensel.library.families.gbdt import lightgbm_proba, xgboost_proba

    X, y = _data(n_classes, seed=3 if name == "lightgbm" else 4)
    run = _fit(name, X, y, n_classes, (4, 30))
    for rows in (slice(0, 1), slice(5, 6), slice(0, 300)):
        for rounds in (4, 30):
            if name == "lightgbm":
                got = lightgbm_proba(run.model, X[rows], rounds)
                expected = run.model.predict_proba(X[rows], num_iteration=rounds)
            else:
                got = xgboost_proba(run.model, X[rows], rounds)
                expected = run.model.predict_proba(X[rows], iteration_range=(0, rounds))
            assert got.dtype == expected.dtype
            np.testing.assert_array_equal(got, expected)


def _with_codes(X: np.ndarray) -> np.ndarray:
    """``X`` with column 4 made category codes 0..2 (missing where it was)."""
    X = X.copy()
    X[:, 4] = np.where(np.isnan(X[:, 4]), np.nan, np.digitize(X[:, 4], [-0.5, 0.5]))
    return X


@pytest.mark.parametrize("categorical", [False, True])
@pytest.mark.parametrize("name", ["xgboost", "lightgbm"])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_boosters_called_directly_equal_their_wrappers(n_classes, name, categorical):
    """The C calls made directly give the wrappers' numbers bit for bit (xgboost's float32
    values, LightGBM's float64 ones), on single rows and batches, missing values and
    native categorical columns included."""
    pytest.importorskip(name)
    from ensel.library.families._native_predict import lightgbm_raw, lightgbm_row, xgboost_value

    X, y = _data(n_classes, seed=5)
    X = _with_codes(X) if categorical else X
    family = get_family(name)
    run = family.fit(
        X,
        y,
        n_classes=n_classes,
        params=family.params,
        stages=(4, 30),
        random_state=0,
        categorical={4: 3} if categorical else {},
    )
    model = getattr(run, "inner", run).model
    for rows in (slice(0, 1), slice(5, 6), slice(0, 300)):
        for rounds in (4, 30):
            if name == "xgboost":
                booster = model.get_booster()
                got = xgboost_value(booster, X[rows], rounds, model.missing)
                expected = booster.inplace_predict(X[rows], iteration_range=(0, rounds))
            else:
                got = lightgbm_raw(model.booster_, X[rows], rounds)
                expected = model.booster_.predict(X[rows], num_iteration=rounds, num_threads=1)
            assert got.dtype == expected.dtype and got.shape == expected.shape
            np.testing.assert_array_equal(got, expected)
    if name == "lightgbm":  # the single-row call on every row, rounds changing between calls
        batches = {rounds: lightgbm_raw(model.booster_, X, rounds) for rounds in (4, 30)}
        for i in range(0, len(X), 3):
            for rounds in (4, 30, 30, 4) if i % 2 else (30, 4):
                got = lightgbm_row(model.booster_, X[i : i + 1], rounds)
                assert got.shape == batches[rounds][i : i + 1].shape
                np.testing.assert_array_equal(got, batches[rounds][i : i + 1])
            lightgbm_raw(model.booster_, X[:7], 4)  # the batch call in between


def test_leaves_at_any_trees_equal_each_trees_apply():
    from sklearn.tree import DecisionTreeClassifier

    from ensel.library.families._base import tree_input
    from ensel.library.families._treepack import TreePack

    X, y = _data(2)
    trees = [DecisionTreeClassifier(max_depth=d, random_state=d).fit(X, y) for d in (2, 5, None)]
    X32 = tree_input(X)
    picked = np.array([2, 0, 2], dtype=np.intp)
    pack = TreePack(trees)
    for got in (pack.leaves_at(X32, picked), pack.walk(X32, picked)):
        for t, leaves in zip(picked, got, strict=True):
            np.testing.assert_array_equal(leaves, trees[t].tree_.apply(X32))


@pytest.mark.parametrize("name", ["random_forest", "bagged_trees"])
def test_fold_siblings_predicted_together_equal_each_alone_in_one_walk(name, monkeypatch):
    """Siblings of unequal sizes (a stage past one sibling's trees): the same numbers as each
    sibling's own predict, bit for bit, from one compiled walk for all of them."""
    from ensel.library.execution.runs import predict_siblings
    from ensel.library.families import _treepack

    X, y = _data(3)
    params = {"max_features": 2} if name == "random_forest" else {}
    runs = [_fit(name, X[i::3], y[i::3], 3, (2, 6), **params) for i in range(3)]
    runs[1].trees = runs[1].trees[:4]
    rows = X[:5]
    alone = [run.predict(rows, stages=[0, 1]) for run in runs]
    calls = []
    if _treepack._compiled_walk is not None:
        walk = _treepack._compiled_walk
        monkeypatch.setattr(_treepack, "_compiled_walk", lambda *a: calls.append(1) or walk(*a))
    for _ in range(2):  # the joint pack is built once, then read again
        calls.clear()
        together = predict_siblings(runs, [rows] * 3, [0, 1])
        for got, want in zip(together, alone, strict=True):
            np.testing.assert_array_equal(got["none"], want["none"])
        assert len(calls) == (1 if _treepack._compiled_walk is not None else 0)
    apart = predict_siblings(runs, [rows.copy() for _ in runs], [1])  # not one matrix
    for got, want in zip(apart, alone, strict=True):
        np.testing.assert_array_equal(got["none"][0], want["none"][1])
