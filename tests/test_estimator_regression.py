"""EnsembleSelectionRegressor: fit, predict, strategies, leaderboard, risk, save/load,
scikit-learn integration (clone, Pipeline, cross_val_score, check_estimator) and bad input."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.datasets import load_diabetes
from sklearn.model_selection import cross_val_score, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from ensel import EnsembleSelectionClassifier, EnsembleSelectionRegressor
from ensel.library import build_library
from ensel.library.families import Run
from ensel.metrics import REGRESSION_METRICS, score

SMALL = {
    "task": "regression",
    "families": [
        {"family": "linear", "params": {"ridge": [None, 10.0]}},
        {"family": "tree", "params": {"max_depth": [2, 5]}},
        {"family": "knn", "params": {"weighting": "distance"}, "stages": [5, 20]},
        {"family": "hist_gbdt", "params": {"max_leaf_nodes": 7}, "stages": [10, 40]},
    ],
    "detectors": [{"detector": "box"}, {"detector": "isolation_forest"}],
}


@pytest.fixture(scope="module")
def diabetes():
    X, y = load_diabetes(return_X_y=True, as_frame=True)
    return train_test_split(X, y.to_numpy(), test_size=0.3, random_state=0)


@pytest.fixture(scope="module")
def lib(diabetes):
    X_train, _, y_train, _ = diabetes
    return build_library(X_train, y_train, spec=SMALL, cv=3, verbose=0)


@pytest.fixture(scope="module")
def fitted(diabetes, lib):
    X_train, _, y_train, _ = diabetes
    return EnsembleSelectionRegressor(library=lib, n_bags=5).fit(X_train, y_train)


def test_fit_predict_beats_the_mean_and_keeps_members_with_weight(diabetes, fitted):
    _, X_test, _, y_test = diabetes
    pred = fitted.predict(X_test)
    assert pred.shape == (len(X_test),) and pred.dtype == np.float64
    assert score("r2", y_test, pred) > 0.3
    assert (fitted.weights_ > 0).all() and fitted.weights_.sum() == pytest.approx(1.0)
    assert len(fitted.members_) == (fitted.leaderboard()["weight"] > 0).sum()
    assert fitted.score(X_test, y_test) == pytest.approx(score("r2", y_test, pred))


def test_prediction_is_the_weighted_average_of_the_members(diabetes, fitted, lib):
    _, X_test, _, _ = diabetes
    members = lib.predict(X_test, ids=fitted.members_["id"])
    assert members.shape == (len(fitted.members_), len(X_test))
    np.testing.assert_allclose(fitted.predict(X_test), np.dot(fitted.weights_, members))


def test_leaderboard_and_comparison_use_the_regression_metrics(fitted):
    board = fitted.leaderboard()
    assert {"id", "family", "params", "stage", "weight", *REGRESSION_METRICS} <= set(board)
    assert board["rmse"].is_monotonic_increasing  # best (lowest RMSE) first
    assert set(fitted.comparison_) == set(REGRESSION_METRICS)
    assert fitted.comparison_["rmse"]["ensemble"] <= fitted.comparison_["rmse"]["best member"]
    assert fitted.hillclimb_score_ == pytest.approx(fitted.comparison_["rmse"]["ensemble"])
    assert fitted.hillclimb_predictions_.shape == fitted.hillclimb_targets_.shape


def test_risk_uses_the_label_free_detectors(diabetes, fitted):
    _, X_test, _, _ = diabetes
    risk = fitted.risk(X_test)
    assert list(risk.columns) == ["box", "isolation_forest", "combined"]
    assert risk.to_numpy().min() >= 0 and risk.to_numpy().max() <= 1
    far = X_test.iloc[:5] * 50  # far outside the training range
    assert (fitted.risk(far)["combined"] > risk["combined"].median()).all()


def test_predict_with_reject_refuses_risky_rows(diabetes, fitted):
    _, X_test, _, _ = diabetes
    rows = pd.concat([X_test.iloc[:10], X_test.iloc[:5] * 50], ignore_index=True)
    risk = fitted.risk(rows)["combined"].to_numpy()
    out = fitted.predict(rows, reject=0.5)
    refused = np.array([v is None for v in out])
    np.testing.assert_array_equal(refused, ~(risk <= 0.5))
    assert refused[10:].all()
    with pytest.raises(ValueError, match="thresholds must lie in"):
        fitted.predict(rows, reject=1.5)
    with pytest.raises(ValueError, match="a regressor has no class probabilities"):
        fitted.predict(rows, reject=(0.6, 0.5))


@pytest.mark.parametrize("metric", ["mae", "r2"])
def test_strategies_and_metrics_on_one_library(diabetes, lib, metric):
    X_train, X_test, y_train, y_test = diabetes
    rmse = {}
    for strategy in ("es", "modsel", "bayesavg"):
        model = EnsembleSelectionRegressor(library=lib, metric=metric, strategy=strategy)
        model.fit(X_train, y_train)
        rmse[strategy] = score("rmse", y_test, model.predict(X_test))
        np.testing.assert_allclose(
            model.combine(lib.predict(X_test)), model.predict(X_test), rtol=1e-9
        )
    assert len(EnsembleSelectionRegressor(library=lib, strategy="modsel").fit(
        X_train, y_train).members_) == 1  # fmt: skip
    assert all(np.isfinite(list(rmse.values())))


def test_custom_metric_callable(diabetes, lib):
    X_train, _, y_train, _ = diabetes

    def neg_mse(y_true, pred):
        return -float(np.mean((y_true - pred) ** 2))

    a = EnsembleSelectionRegressor(library=lib, metric=neg_mse, n_bags=3).fit(X_train, y_train)
    b = EnsembleSelectionRegressor(library=lib, metric="rmse", n_bags=3).fit(X_train, y_train)
    np.testing.assert_allclose(a.weights_, b.weights_)


def test_save_load_round_trip(fitted, diabetes, tmp_path):
    _, X_test, _, _ = diabetes
    fitted.save(tmp_path / "model.pkl")
    loaded = EnsembleSelectionRegressor.load(tmp_path / "model.pkl")
    np.testing.assert_array_equal(loaded.predict(X_test), fitted.predict(X_test))
    with pytest.raises(TypeError, match="not a EnsembleSelectionClassifier"):
        EnsembleSelectionClassifier.load(tmp_path / "model.pkl")


def test_clone_pipeline_and_cross_val_score(diabetes):
    X_train, _, y_train, _ = diabetes
    spec = {"task": "regression", "families": [{"family": "linear"}, {"family": "tree"}]}
    model = EnsembleSelectionRegressor(library=spec, n_jobs=1, cv=3, n_bags=2)
    assert clone(model).get_params() == model.get_params()
    pipe = make_pipeline(FunctionTransformer(lambda X: X * 2.0), model)
    scores = cross_val_score(pipe, X_train.to_numpy(), y_train, cv=2)
    assert scores.shape == (2,) and np.isfinite(scores).all()


def test_grouped_folds_keep_a_subject_together(diabetes):
    X_train, _, y_train, _ = diabetes
    groups = np.arange(len(y_train)) // 3
    spec = {"task": "regression", "families": [{"family": "linear"}]}
    model = EnsembleSelectionRegressor(library=spec, n_jobs=1, cv=3, n_bags=1).fit(
        X_train, y_train, groups=groups
    )
    assert model.predict(X_train.iloc[:3]).shape == (3,)


def test_categorical_columns(diabetes):
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=200), "kind": rng.choice(["p", "q", "r"], 200)})
    y = 3 * X["a"] + (X["kind"] == "q") * 5 + rng.normal(0, 0.1, 200)
    spec = {**SMALL, "detectors": []}
    model = EnsembleSelectionRegressor(library=spec, n_jobs=1, cv=3, n_bags=3).fit(X, y)
    assert score("r2", y.to_numpy(), model.predict(X)) > 0.9


@pytest.mark.parametrize(
    ("kwargs", "y", "message"),
    [
        ({"metric": "roc"}, None, "'roc' is a classification metric; regression needs"),
        ({"library": "tiny"}, None, "'tiny' is for classification, but EnsembleSelectionRegressor"),
        ({"strategy": "vote"}, None, "'strategy' parameter .* Got 'vote'"),
        ({}, "text", "y must hold numbers for regression"),
    ],
)
def test_bad_input_is_named(diabetes, kwargs, y, message):
    X_train, _, y_train, _ = diabetes
    target = np.array(["a"] * len(y_train)) if y == "text" else y_train
    spec = {"library": {"task": "regression", "families": [{"family": "linear"}]}}
    with pytest.raises(ValueError, match=message):
        EnsembleSelectionRegressor(**(spec | kwargs), cv=3, n_jobs=1).fit(
            X_train.iloc[:, :3], target
        )


def test_classifier_refuses_a_regression_library(diabetes, lib):
    X_train, _, y_train, _ = diabetes
    labels = (y_train > np.median(y_train)).astype(int)
    with pytest.raises(ValueError, match="built for regression"):
        EnsembleSelectionClassifier(library=lib).fit(X_train, labels)
    with pytest.raises(ValueError, match="is for regression, but EnsembleSelectionClassifier"):
        EnsembleSelectionClassifier(library=SMALL, n_jobs=1).fit(X_train, labels)


@pytest.mark.slow
def test_passes_scikit_learn_check_estimator():
    import warnings

    from sklearn.utils.estimator_checks import check_estimator

    spec = {"task": "regression", "families": [{"family": "linear"}, {"family": "tree"}]}
    # max_predict_ms=None: the idempotence checks fit twice from scratch, and the default
    # "auto" budget reads predict costs timed by each build (tested on one library elsewhere)
    model = EnsembleSelectionRegressor(
        library=spec, n_jobs=1, cv=3, n_bags=2, n_iter=10, max_predict_ms=None
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(model, on_fail=None)
    failed = [
        (r["check_name"], str(r["exception"])[:200]) for r in results if r["status"] == "failed"
    ]
    assert not failed
    assert len(results) > 40


def test_missing_values_in_features(diabetes):
    """Cells removed at random: imputing views for linear and k-NN, NaN passed to trees."""
    X_train, X_test, y_train, y_test = diabetes
    rng = np.random.default_rng(1)
    holes = X_train.mask(rng.random(X_train.shape) < 0.1)
    spec = {**SMALL, "detectors": []}
    model = EnsembleSelectionRegressor(library=spec, n_jobs=1, cv=3, n_bags=3).fit(holes, y_train)
    pred = model.predict(X_test.mask(rng.random(X_test.shape) < 0.1))
    assert np.isfinite(pred).all() and score("r2", y_test, pred) > 0.2


def test_a_target_far_from_zero_keeps_the_members_apart():
    """A target of 1e9 plus a signal of a few units: the store kept hillclimb predictions in
    float32 (steps of 64 at 1e9), so every member scored as the constant 1e9 (hillclimb RMSE
    the target's spread, R2 -0.004) and selection picked blind."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=200), "b": rng.normal(size=200)})
    signal = 3.0 * X["a"] - X["b"]
    knn = {"family": "knn", "stages": [1, 10]}
    spec = {"task": "regression", "families": [{"family": "linear"}, knn]}
    for offset in (0.0, 1e9):
        y = offset + signal + 0.1 * rng.normal(size=200)
        model = EnsembleSelectionRegressor(library=spec, n_jobs=1, cv=3, random_state=0)
        board = model.fit(X, y).leaderboard()
        linear = board.loc[board["family"] == "linear", "rmse"].iloc[0]
        assert linear < 0.2 < board["rmse"].max(), (offset, board[["family", "rmse"]])
        assert model.comparison_["r2"]["ensemble"] > 0.99


@dataclasses.dataclass
class _MeanRun(Run):
    value: float

    def predict(self, X):
        return {"none": np.full((1, len(X), 1), self.value)}


def _fit_slow_mean(X, y, *, n_classes, params, stages, random_state):
    """The training mean, after ``seconds`` of sleep (a run the budget must cut short)."""
    import time

    time.sleep(params["seconds"])
    return _MeanRun(float(np.mean(y)))


@pytest.mark.slow  # waits on a 10 s wall-clock budget
def test_time_limit_is_the_whole_fit(diabetes, monkeypatch):
    """The budget holds for regression too: fit stops the run it cannot finish and returns an
    ensemble of the runs that finished."""
    from ensel.library.families import REGRESSORS, Family

    slow = Family(name="slow_mean", fit=_fit_slow_mean, params={"seconds": 0}, task="regression")
    monkeypatch.setitem(REGRESSORS, "slow_mean", slow)
    spec = {
        "task": "regression",
        "families": [
            {"family": "slow_mean", "params": {"seconds": [0, 120]}},
            {"family": "linear", "params": {"ridge": [1.0, 10.0]}},
        ],
    }
    X_train, X_test, y_train, _ = diabetes
    model = EnsembleSelectionRegressor(library=spec, cv=3, n_jobs=1, time_limit=10)
    model.fit(X_train, y_train)
    assert {"slow_mean", "linear"} <= set(model.leaderboard()["family"])
    assert len(model.leaderboard()) == 3  # the 120 s run was cut short
    assert model.predict(X_test).shape == (len(X_test),)
