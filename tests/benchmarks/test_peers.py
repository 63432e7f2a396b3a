"""The in-process peer (HistGradientBoosting) against a direct scikit-learn fit, and the peer
registry. The AutoGluon runner needs its own environment and is not run here."""

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.metrics import roc_auc_score
from threadpoolctl import threadpool_limits

from benchmarks import _peers


def frame(n=400, classes=("no", "yes"), seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    cat = rng.choice(["a", "b", "c"], size=n)
    score = x + (cat == "a") * 1.5
    if classes is None:
        y = score + rng.normal(scale=0.1, size=n)
    else:
        cuts = np.quantile(score, np.linspace(0, 1, len(classes) + 1)[1:-1])
        y = np.asarray(classes, dtype=object)[np.searchsorted(cuts, score)]
    return pd.DataFrame(
        {"x": x, "noise": rng.normal(size=n), "cat": cat.astype(object), "flag": x > 0, "y": y}
    )


def test_hgb_binary_with_missing_cells_and_categoricals():
    data = frame()
    blank = np.random.default_rng(0).random((len(data), 2)) < 0.2  # a fifth of the cells
    data[["x", "cat"]] = data[["x", "cat"]].mask(blank)
    train, test = data.iloc[:300], data.iloc[300:]
    got = _peers.run_hgb(train, test, "y", "binary", seed=0, num_cpus=1)
    assert got.classes == ["no", "yes"]
    assert got.predictions.shape == (100, 2)
    assert np.allclose(got.predictions.sum(axis=1), 1)
    assert roc_auc_score(test["y"] == "yes", got.predictions[:, 1]) > 0.8
    assert got.fit_seconds > 0 and got.predict_seconds > 0 and got.model_mb > 0
    assert got.info["n_iter"] < 1000  # early stopping stopped it


def test_hgb_matches_a_direct_fit_in_class_order():
    data = frame(classes=("c0", "c1", "c2"), seed=1)
    data["cat"] = pd.Categorical(data["cat"])
    data["flag"] = data["flag"].astype(float)
    train, test = data.iloc[:300], data.iloc[300:]
    got = _peers.run_hgb(
        train, test, "y", "multiclass", seed=3, num_cpus=1, early_stopping=False, max_iter=20
    )
    with threadpool_limits(limits=1, user_api="openmp"):
        direct = HistGradientBoostingClassifier(
            max_iter=20, learning_rate=0.05, categorical_features="from_dtype", random_state=3
        ).fit(train.drop(columns="y"), train["y"])
        expected = direct.predict_proba(test.drop(columns="y"))
    assert got.classes == list(direct.classes_)
    assert np.allclose(got.predictions, expected)


def test_hgb_regression_ignores_a_target_in_test():
    data = frame(classes=None)
    train, test = data.iloc[:300], data.iloc[300:]
    fast = {"num_cpus": 1, "max_iter": 60, "learning_rate": 0.2}
    got = _peers.run_hgb(train, test, "y", "regression", **fast)
    assert got.classes is None and got.predictions.shape == (100,)
    assert np.corrcoef(got.predictions, test["y"])[0, 1] > 0.9
    dropped = _peers.run_hgb(train, test.drop(columns="y"), "y", "regression", **fast)
    assert np.allclose(got.predictions, dropped.predictions)


def test_hgb_pools_levels_beyond_255():
    rng = np.random.default_rng(0)
    data = pd.DataFrame({"zip": [f"z{i}" for i in rng.integers(0, 400, 1000)]})
    data["y"] = rng.integers(0, 2, 1000)
    got = _peers.run_hgb(data.iloc[:800], data.iloc[800:], "y", "binary", num_cpus=1, max_iter=5)
    assert got.predictions.shape == (200, 2)


def test_bad_arguments_say_what_is_wrong():
    data = frame()
    with pytest.raises(ValueError, match=r"problem_type must be one of .*got 'ranking'"):
        _peers.run_hgb(data, data, "y", "ranking")
    with pytest.raises(ValueError, match="target 'label' is not a column of train"):
        _peers.run_hgb(data, data, "label", "binary")


def test_missing_autogluon_env_is_reported_without_installing(tmp_path, monkeypatch):
    monkeypatch.setenv("ENSEL_BENCH_ENVS", str(tmp_path))
    with pytest.raises(RuntimeError, match="no AutoGluon environment"):
        _peers.autogluon_python(install=False)
    assert not any(tmp_path.iterdir())


def test_classification_scores_match_sklearn_after_clipping():
    from sklearn.metrics import log_loss

    y = pd.Series(["a", "b", "c", "a"])
    proba = np.array([[1.0, 0.0, 0.0], [0.2, 0.8, 0.0], [0.1, 0.1, 0.8], [0.0, 0.5, 0.5]])
    got = _peers.classification_scores(y, ["a", "b", "c"], proba)
    clipped = np.clip(proba, 1e-15, 1)
    clipped /= clipped.sum(axis=1, keepdims=True)  # a zero for the true class stays finite
    assert got["logloss"] == pytest.approx(log_loss(y, clipped, labels=["a", "b", "c"]))
    assert got["auc"] == pytest.approx(roc_auc_score(y, clipped, multi_class="ovr"))


def test_binary_scores_take_the_second_class_probability_alone():
    y = np.array([0, 1, 1, 0, 1])
    p = np.array([0.2, 0.9, 0.4, 0.6, 1.0])
    alone = _peers.classification_scores(y, [0, 1], p)
    assert alone == _peers.classification_scores(y, [0, 1], np.column_stack([1 - p, p]))
    assert alone["auc"] == pytest.approx(roc_auc_score(y, p))


def test_autogluon_on_files_checks_its_paths_first(tmp_path, monkeypatch):
    monkeypatch.setenv("ENSEL_BENCH_ENVS", str(tmp_path / "envs"))
    with pytest.raises(ValueError, match=r"train_path must be an existing \.csv or \.parquet"):
        _peers.run_autogluon_files(tmp_path / "train.txt", tmp_path / "test.csv", "y", 60)
    frame().to_csv(tmp_path / "train.csv", index=False)
    with pytest.raises(ValueError, match="test_path must be an existing"):
        _peers.run_autogluon_files(tmp_path / "train.csv", tmp_path / "nope.csv", "y", 60)
    frame().assign(y="one").to_parquet(tmp_path / "one.parquet")
    with pytest.raises(ValueError, match="target 'y' has one class"):
        _peers.run_autogluon_files(tmp_path / "one.parquet", tmp_path / "train.csv", "y", 60)
    assert not (tmp_path / "envs").exists()  # nothing installed on the way


def test_autogluon_bagging_folds_travel_as_a_train_column_only(monkeypatch):
    data = frame(n=60)
    seen = {}

    def fake_job(job_dir, job, timeout):
        seen["job"] = job
        seen["train"] = pd.read_csv(job_dir / job["train"])
        seen["test"] = pd.read_csv(job_dir / job["test"])
        np.save(job_dir / "pred.npy", np.full((len(data), 2), 0.5))
        return {"fit_seconds": 1.0, "predict_seconds": 0.1, "model_mb": 1.0, "cpu_seconds": 2.0}

    monkeypatch.setattr(_peers, "_run_job", fake_job)
    folds = pd.Series(np.arange(60) % 8)
    _peers.run_autogluon(data, data, "y", "binary", time_limit=60, folds=folds)
    assert seen["job"]["groups"] == _peers.FOLD_COLUMN
    assert (seen["train"][_peers.FOLD_COLUMN].to_numpy() == folds.to_numpy()).all()
    assert _peers.FOLD_COLUMN not in seen["test"] and "y" not in seen["test"]
    _peers.run_autogluon(data, data, "y", "binary", time_limit=60)
    assert seen["job"]["groups"] is None and _peers.FOLD_COLUMN not in seen["train"]
    with pytest.raises(ValueError, match="one id per train row"):
        _peers.run_autogluon(data, data, "y", "binary", time_limit=60, folds=folds[:10])
