"""The regression families against the scikit-learn models they stand for, and the registries
(the shared contract is in test_family_contract.py)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_friedman1

from ensel.library.execution.runs import TargetTransformRun
from ensel.library.families import FAMILIES, REGRESSORS, get_family, missing_requirements


def _data(seed: int = 0, n: int = 240):
    X, y = make_friedman1(n_samples=n, n_features=6, noise=0.5, random_state=seed)
    return X, 100.0 + 10.0 * y  # far from 0 and not unit scale: units must survive


def _fit(family, X, y, stages=None, seed=0, **params):
    params = {**family.params, **family.test_params, **params}
    stages = stages if stages is not None else family.test_stages
    return family.fit(X, y, n_classes=0, params=params, stages=stages, random_state=seed)


def _available(name):
    family = REGRESSORS[name]
    if missing_requirements(family):
        pytest.skip(f"{name} needs {missing_requirements(family)}")
    return family


def test_registries_are_separate():
    assert set(REGRESSORS) >= {
        "linear", "svr", "knn", "tree", "bagged_trees", "random_forest", "extra_trees",
        "hist_gbdt", "xgboost", "lightgbm", "adaboost", "mlp",
    }  # fmt: skip
    assert all(f.task == "regression" for f in REGRESSORS.values())
    assert all(f.task == "classification" for f in FAMILIES.values())
    assert get_family("knn", "regression") is REGRESSORS["knn"]
    with pytest.raises(ValueError, match="'logreg' is a classification family"):
        get_family("logreg", "regression")


@pytest.mark.parametrize("weighting", ["uniform", "distance"])
def test_knn_every_k_matches_sklearn(weighting):
    from sklearn.neighbors import KNeighborsRegressor

    X, y = _data(seed=4)
    stages = (1, 3, 7, 180)
    out = _fit(REGRESSORS["knn"], X[:180], y[:180], stages=stages, weighting=weighting)
    got = out.predict(X[180:])["none"][..., 0]
    for i, k in enumerate(stages):
        ref = KNeighborsRegressor(n_neighbors=k, weights=weighting, algorithm="brute")
        expected = ref.fit(X[:180], y[:180]).predict(X[180:])
        np.testing.assert_allclose(got[i], expected, rtol=1e-9, err_msg=f"k={k}")


def test_forest_prefix_is_the_smaller_forest():
    from sklearn.ensemble import ExtraTreesRegressor, RandomForestRegressor

    X, y = _data(seed=5)
    for name, cls in (
        ("random_forest", RandomForestRegressor),
        ("extra_trees", ExtraTreesRegressor),
    ):
        run = _fit(REGRESSORS[name], X[:180], y[:180], stages=(4, 8), seed=11, max_features=0.5)
        got = run.predict(X[180:])["none"][..., 0]
        ref = cls(n_estimators=4, max_features=0.5, random_state=11).fit(X[:180], y[:180])
        np.testing.assert_allclose(got[0], ref.predict(X[180:]), rtol=1e-6, err_msg=name)


def test_adaboost_r2_and_hist_gbdt_match_sklearn():
    from sklearn.ensemble import AdaBoostRegressor, HistGradientBoostingRegressor
    from sklearn.tree import DecisionTreeRegressor

    X, y = _data(seed=6)
    got = _fit(REGRESSORS["adaboost"], X, y, stages=(3, 4, 9), seed=2).predict(X)["none"][..., 0]
    ref = AdaBoostRegressor(DecisionTreeRegressor(max_depth=2), n_estimators=9, random_state=2)
    staged = list(ref.fit(X, y).staged_predict(X))
    for i, s in enumerate((3, 4, 9)):  # the weighted median of each prefix
        np.testing.assert_allclose(got[i], staged[s - 1], rtol=1e-9, err_msg=f"stage {s}")
    got = _fit(REGRESSORS["hist_gbdt"], X, y, stages=(7, 20), seed=2).predict(X)["none"][..., 0]
    ref = HistGradientBoostingRegressor(
        learning_rate=0.3, max_leaf_nodes=7, max_iter=7, early_stopping=False, random_state=2
    )
    np.testing.assert_allclose(got[0], ref.fit(X, y).predict(X), rtol=1e-9)


def test_svr_and_mlp_learn_on_a_standardised_target():
    X, y = _data(seed=7)
    for name in ("svr", "mlp"):
        a = _fit(REGRESSORS[name], X, y).predict(X)["none"]
        b = _fit(REGRESSORS[name], X, 1000.0 * y - 5.0).predict(X)["none"]
        np.testing.assert_allclose(b, 1000.0 * a - 5.0, rtol=1e-6, err_msg=name)


def test_target_transform_run_predicts_back_in_target_units():
    X, y = _data(seed=8)
    inner = _fit(REGRESSORS["linear"], X, np.log1p(y))
    wrapped = TargetTransformRun(inner)
    np.testing.assert_allclose(
        wrapped.predict(X)["none"], np.expm1(inner.predict(X)["none"]), rtol=1e-12
    )
