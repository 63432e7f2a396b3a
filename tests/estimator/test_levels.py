"""The second level (levels=2): refused where it cannot work, no leak of level one's training
rows into level two's features, and a two-level model saved and loaded."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ensel import EnsembleSelectionClassifier, EnsembleSelectionRegressor
from ensel.estimator import levels
from ensel.metrics import score

LEVEL_ONE = {
    "name": "level_one_test",
    "families": [
        {"family": "logreg", "params": {"ridge": 1.0}},
        {"family": "knn", "params": {"weighting": "uniform"}, "stages": [1, 15]},
        {"family": "tree", "params": {"max_depth": 3}},
    ],
}
LEVEL_ONE_REGRESSION = {
    "name": "level_one_regression_test",
    "task": "regression",
    "families": [
        {"family": "linear", "params": {"ridge": 1.0}},
        {"family": "knn", "params": {"weighting": "uniform"}, "stages": [1, 15]},
    ],
}
LEVEL_TWO = {
    "classification": {
        "name": "stack_test",
        "families": [
            {
                "family": "lightgbm",
                "params": {"num_leaves": 7, "learning_rate": 0.1},
                "stages": [16, 64],
            }
        ],
    },
    "regression": {
        "name": "stack_regression_test",
        "task": "regression",
        "families": [
            {
                "family": "lightgbm",
                "params": {"num_leaves": 7, "learning_rate": 0.1},
                "stages": [16, 64],
            }
        ],
    },
}
FAST = {"n_jobs": 1, "n_bags": 4, "n_iter": 20, "random_state": 0}


@pytest.fixture(autouse=True)
def tiny_level_two(monkeypatch):
    """A level-two spec of one small LightGBM run, so each fit takes seconds."""
    monkeypatch.setattr(levels, "spec_path", lambda task: LEVEL_TWO[task])


def _table(n: int = 240, seed: int = 0):
    """A unique id column and two noise columns, with labels that are pure chance."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(
        {"id": np.arange(n, dtype=float), "a": rng.normal(size=n), "b": rng.normal(size=n)}
    )
    return X, rng.integers(0, 2, n)


def test_levels_two_without_folds_is_refused_in_one_line():
    X, y = _table(60)
    model = EnsembleSelectionClassifier(library=LEVEL_ONE, cv=None, levels=2, **FAST)
    with pytest.raises(ValueError, match=r"levels=2 needs cv=K") as info:
        model.fit(X, y)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("bad", [{"refit": "full"}, {"exportable": True}, {"max_predict_ms": 5.0}])
def test_levels_two_refuses_what_it_cannot_do(bad):
    X, y = _table(60)
    model = EnsembleSelectionClassifier(library=LEVEL_ONE, cv=3, levels=2, **{**FAST, **bad})
    with pytest.raises(ValueError, match="levels=2 does not work with"):
        model.fit(X, y)


def test_a_memorising_level_one_member_gives_level_two_no_out_of_fold_advantage():
    """1-NN on a unique id column predicts its own training rows perfectly; were level two's
    features in-sample predictions, its fold models would learn to copy them and score
    near-perfectly out of fold on labels that are pure chance. Out of fold, they must stay
    at chance, like the honest level one."""
    X, y = _table()
    model = EnsembleSelectionClassifier(library=LEVEL_ONE, cv=4, levels=2, metric="roc", **FAST)
    model.fit(X, y)
    report = model.budget_.level_two
    assert any(i.startswith("knn-") for i in report["inputs"])  # the memoriser feeds level two
    board = model.leaderboard_
    top = board["id"].str.startswith(levels.PREFIX)
    assert top.sum() == report["members"] > 0
    level_two_best = board.loc[top, "roc"].max()
    level_one_best = board.loc[~top, "roc"].max()
    assert level_two_best < 0.65  # chance is 0.5; a leak gives about 1.0
    assert level_two_best < level_one_best + 0.1
    assert model.hillclimb_score_ < 0.7


def _round_trip(model, X, tmp_path, predict):
    before = predict(model, X)
    path = tmp_path / "model.pkl"
    model.save(path)
    loaded = type(model).load(path)
    np.testing.assert_array_equal(predict(loaded, X), before)
    assert loaded.budget_.level_two == model.budget_.level_two
    with pytest.raises(ValueError, match="second level"):
        loaded.to_onnx(tmp_path / "model.onnx")


def test_a_two_level_classifier_saves_and_loads(tmp_path):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(150, 4))
    y = (X[:, 0] + 0.5 * rng.normal(size=150) > 0).astype(int)
    model = EnsembleSelectionClassifier(library=LEVEL_ONE, cv=3, levels=2, **FAST).fit(X, y)
    assert model.members_["id"].str.startswith(levels.PREFIX).any()
    proba = model.predict_proba(X)
    assert score("roc", y, proba[:, 1]) > 0.8
    _round_trip(model, X, tmp_path, lambda m, X: m.predict_proba(X))


def test_a_two_level_regressor_saves_and_loads(tmp_path):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(150, 3))
    y = 2.0 * X[:, 0] + rng.normal(scale=0.3, size=150)
    model = EnsembleSelectionRegressor(library=LEVEL_ONE_REGRESSION, cv=3, levels=2, **FAST)
    model.fit(X, y)
    assert model.budget_.level_two["members"] > 0
    assert np.corrcoef(model.predict(X), y)[0, 1] > 0.9
    _round_trip(model, X, tmp_path, lambda m, X: m.predict(X))


def test_a_second_level_that_builds_nothing_leaves_level_one_selected_alone(monkeypatch):
    """A level-two run that fails is recorded and skipped like any run; with none left, the
    fit goes on with level one alone, warns, and says why in ``budget_.level_two``."""
    failing = {
        "name": "stack_failing_test",
        "families": [{"family": "lightgbm", "params": {"num_leaves": -3}, "stages": [16]}],
    }
    monkeypatch.setattr(levels, "spec_path", lambda task: failing)
    rng = np.random.default_rng(3)
    X = rng.normal(size=(120, 3))
    y = (X[:, 0] > 0).astype(int)
    model = EnsembleSelectionClassifier(library=LEVEL_ONE, cv=3, levels=2, **FAST)
    with pytest.warns(UserWarning, match="levels=2: no second level"):
        model.fit(X, y)
    assert not model.members_["id"].str.startswith(levels.PREFIX).any()
    assert "no run of spec 'stack_failing_test' finished" in model.budget_.level_two["error"]
    assert score("roc", y, model.predict_proba(X)[:, 1]) > 0.8


def test_a_two_level_leaderboard_on_more_hillclimb_rows_than_it_scores(monkeypatch):
    """Past ``LEADERBOARD_ROWS`` hillclimb rows the leaderboard scores a sample of them on
    the metrics of both levels' members (a large table's path)."""
    from ensel.estimator import keep

    monkeypatch.setattr(keep, "LEADERBOARD_ROWS", 50)
    rng = np.random.default_rng(4)
    X = rng.normal(size=(150, 4))
    y = (X[:, 0] + 0.5 * rng.normal(size=150) > 0).astype(int)
    model = EnsembleSelectionClassifier(library=LEVEL_ONE, cv=3, levels=2, **FAST).fit(X, y)
    board = model.leaderboard_
    assert board["id"].str.startswith(levels.PREFIX).any()
    assert board["roc"].between(0, 1).all()
