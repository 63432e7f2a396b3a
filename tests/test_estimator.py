"""EnsembleSelectionClassifier: fit, predict, strategies, calibration, leaderboard, save/load,
scikit-learn integration and bad input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer, load_iris
from sklearn.model_selection import cross_val_score, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from ensel import EnsembleSelectionClassifier
from ensel.library import build_library
from ensel.library.families import Run
from ensel.metrics import METRICS, score, score_batch

SMALL = {
    "families": [
        {"family": "logreg", "params": {"ridge": [0.01, 100.0]}, "calibration": ["none", "platt"]},
        {"family": "tree", "params": {"max_depth": [2, 5]}, "calibration": ["none", "isotonic"]},
        {"family": "adaboost", "stages": [4, 16], "calibration": ["none", "logistic"]},
        {"family": "naive_bayes", "calibration": ["none", "platt"]},
    ]
}


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    labels = np.where(y == 1, "benign", "malignant")
    return train_test_split(X, labels, test_size=0.3, stratify=labels, random_state=0)


@pytest.fixture(scope="module")
def fitted(cancer):
    X_train, _, y_train, _ = cancer
    return EnsembleSelectionClassifier(library=SMALL, n_jobs=1, metric="roc", cv=3, n_bags=5).fit(
        X_train, y_train
    )


def test_fit_predict_with_string_labels(cancer, fitted):
    _, X_test, _, y_test = cancer
    proba = fitted.predict_proba(X_test)
    assert proba.shape == (len(X_test), 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert list(fitted.classes_) == ["benign", "malignant"]
    assert set(fitted.predict(X_test)) <= {"benign", "malignant"}
    assert (fitted.predict(X_test) == y_test).mean() > 0.9
    # the model keeps only members with weight, and the weights sum to one
    assert (fitted.weights_ > 0).all() and fitted.weights_.sum() == pytest.approx(1.0)
    assert len(fitted.members_) == (fitted.leaderboard()["weight"] > 0).sum()
    assert set(fitted.fitted_members_.runs) == set(fitted.members_["run"])


def test_ensemble_is_the_weighted_average_of_its_members_then_platt(cancer, fitted):
    _, X_test, _, _ = cancer
    lib_free = fitted.calibrator_ is not None  # roc does not reward calibration: auto is on
    assert lib_free
    raw = sum(
        w * fitted.fitted_members_.runs[run].predict(X_test)[off]
        for w, run, off in zip(
            fitted.weights_, fitted.members_["run"], fitted.fitted_members_.offsets, strict=True
        )
    )
    np.testing.assert_allclose(fitted.predict_proba(X_test), fitted.calibrator_.predict(raw))
    report = fitted.calibration_report_
    assert set(report) == {"log_loss_before", "log_loss_after"}


def test_same_seed_gives_the_same_ensemble(cancer):
    # without a predict-cost budget: a budget ("auto" too) reads the costs the builder timed,
    # which differ a little between two builds (docs/estimator.md)
    X_train, X_test, y_train, _ = cancer
    first, again = (
        EnsembleSelectionClassifier(
            library=SMALL, n_jobs=1, metric="roc", cv=3, n_bags=5, max_predict_ms=None
        ).fit(X_train, y_train)
        for _ in range(2)
    )
    assert list(again.members_["id"]) == list(first.members_["id"])
    np.testing.assert_array_equal(again.weights_, first.weights_)
    np.testing.assert_array_equal(again.predict_proba(X_test), first.predict_proba(X_test))


def test_auto_budget_on_one_library_gives_the_same_ensemble(cancer):
    X_train, X_test, y_train, _ = cancer
    lib = build_library(X_train, y_train, spec=SMALL, cv=3, verbose=0)
    first, again = (
        EnsembleSelectionClassifier(library=lib, metric="roc", n_bags=5).fit(X_train, y_train)
        for _ in range(2)
    )
    assert first.predict_budget_ == again.predict_budget_
    np.testing.assert_array_equal(again.weights_, first.weights_)
    np.testing.assert_array_equal(again.predict_proba(X_test), first.predict_proba(X_test))


def test_leaderboard_scores_every_member_on_all_eight_metrics(fitted):
    board = fitted.leaderboard()
    assert {"id", "family", "params", "calibration", "stage", "weight", *METRICS} <= set(board)
    assert board["roc"].is_monotonic_decreasing  # best on the chosen metric first
    assert board["weight"].sum() == pytest.approx(1.0)


def test_strategies_on_the_same_library(cancer):
    X_train, _, y_train, _ = cancer
    lib = build_library(X_train, y_train, spec=SMALL, cv=3, verbose=0)
    P = np.asarray(lib.predictions, dtype=np.float64)
    modsel = EnsembleSelectionClassifier(library=lib, metric="rms", strategy="modsel")
    modsel.fit(X_train, y_train)
    assert len(modsel.members_) == 1
    best = int(np.argmin(score_batch("rms", lib.y, P)))
    assert modsel.members_["id"][0] == lib.members["id"][best]
    bma = EnsembleSelectionClassifier(library=lib, strategy="bayesavg").fit(X_train, y_train)
    log_lik = -lib.y.size * score_batch("mxe", lib.y, P)
    expected = np.exp(log_lik - log_lik.max())
    board = bma.leaderboard_
    kept = board["weight"] > 0
    np.testing.assert_allclose(
        board["weight"][kept], expected[kept] / expected[kept].sum(), rtol=1e-9
    )
    es = EnsembleSelectionClassifier(library=lib, metric="rms", n_bags=5).fit(X_train, y_train)
    assert es.calibrator_ is None and es.calibration_report_ == {}  # rms rewards calibration
    assert es.hillclimb_score_ <= modsel.hillclimb_score_ + 1e-12  # ES includes MODSEL's pick


def test_multiclass_dataframe_with_categorical_column():
    X, y = load_iris(return_X_y=True, as_frame=True)
    X = X.assign(big=np.where(X["petal length (cm)"] > 4, "yes", "no"))
    clf = EnsembleSelectionClassifier(library=SMALL, n_jobs=1, metric="acc", cv=3, n_bags=3).fit(
        X, y
    )
    proba = clf.predict_proba(X)
    assert proba.shape == (150, 3)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert score("acc", y.to_numpy(), proba) > 0.9
    with pytest.raises(ValueError, match=r"X lacks column\(s\) \['big'\]"):
        clf.predict(X.drop(columns="big"))
    with pytest.warns(UserWarning, match="never seen in training"):
        clf.predict(X.assign(big="maybe"))


def test_save_load_round_trip(fitted, cancer, tmp_path):
    _, X_test, _, _ = cancer
    fitted.save(tmp_path / "model.pkl")
    loaded = EnsembleSelectionClassifier.load(tmp_path / "model.pkl")
    np.testing.assert_allclose(
        loaded.predict_proba(X_test), fitted.predict_proba(X_test), atol=1e-12
    )
    # arrays with the same columns work too
    from_array = loaded.predict_proba(X_test.to_numpy())
    np.testing.assert_allclose(from_array, loaded.predict_proba(X_test), atol=1e-12)


@pytest.mark.slow
def test_clone_pipeline_and_cross_val_score(cancer):
    X_train, _, y_train, _ = cancer
    clf = EnsembleSelectionClassifier(library=SMALL, n_jobs=1, metric="rms", cv=3, n_bags=3)
    assert clone(clf).get_params() == clf.get_params()
    pipe = make_pipeline(FunctionTransformer(lambda frame: frame * 1.0), clf)
    scores = cross_val_score(pipe, pd.DataFrame(X_train), y_train, cv=3)
    assert scores.shape == (3,) and scores.min() > 0.85


@pytest.mark.parametrize(
    ("kwargs", "y", "message"),
    [
        ({"strategy": "stacking"}, None, "'strategy' parameter .* Got 'stacking'"),
        ({"calibrate": "always"}, None, "'calibrate' parameter .* Got 'always'"),
        ({}, "single", "single class"),
        ({}, "nan", "missing labels"),
        ({"cv": 50}, None, "fewer than cv=50 folds"),
    ],
)
def test_bad_input_is_named(cancer, kwargs, y, message):
    X_train, _, y_train, _ = cancer
    labels = np.asarray(y_train, dtype=object)
    if y == "single":
        labels = np.full(len(labels), "benign", dtype=object)
    elif y == "nan":
        labels = labels.copy()
        labels[3] = np.nan
    with pytest.raises(ValueError, match=message):
        model = EnsembleSelectionClassifier(library=SMALL, n_jobs=1, **{"cv": 3, **kwargs})
        model.fit(X_train.iloc[:60], labels[:60])


def test_predict_checks_the_number_of_features(fitted):
    with pytest.raises(ValueError, match=r"X has 5 features, but .* is expecting 30"):
        fitted.predict(np.zeros((2, 5)))


def test_combine_equals_predict_proba(cancer):
    X_train, X_test, y_train, _ = cancer
    lib = build_library(X_train, y_train, spec=SMALL, cv=3, verbose=0)
    model = EnsembleSelectionClassifier(library=lib, metric="roc", n_bags=3).fit(X_train, y_train)
    np.testing.assert_allclose(
        model.combine(lib.predict(X_test)), model.predict_proba(X_test), atol=1e-12
    )
    with pytest.raises(ValueError, match="the library has"):
        model.combine(lib.predict(X_test)[:3])


def test_prune_fraction_selects_only_from_the_best_members(cancer):
    """§4.3.6: with prune_fraction=0.25 every member with weight is among the best quarter of
    the library by its own hillclimb score; unpruned selection reaches beyond it."""
    X_train, _, y_train, _ = cancer
    lib = build_library(X_train, y_train, spec=SMALL, cv=3, verbose=0)
    P = np.asarray(lib.predictions, dtype=np.float64)
    top = set(np.argsort(score_batch("rms", lib.y, P))[: int(np.ceil(0.25 * len(P)))])
    ids = lib.members["id"].to_numpy()
    options = {"library": lib, "metric": "rms", "n_bags": 5, "sorted_init": False}
    pruned = EnsembleSelectionClassifier(prune_fraction=0.25, **options).fit(X_train, y_train)
    assert set(pruned.members_["id"]) <= {ids[i] for i in top}
    full = EnsembleSelectionClassifier(**options).fit(X_train, y_train)
    assert not set(full.members_["id"]) <= {ids[i] for i in top}
    with pytest.raises(ValueError, match=r"'prune_fraction' parameter .* \(0.0, 1.0\]"):
        EnsembleSelectionClassifier(prune_fraction=0.0, **options).fit(X_train, y_train)


def _messy_frame(n: int, seed: int):
    """Data as it comes: NaN in numeric, categorical and boolean columns, a numeric column
    with stray tokens, a constant and an all-missing column; the label reads a missing cell."""
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=n), rng.normal(size=n)
    colour = rng.choice(["red", "green", "blue"], size=n).astype(object)
    flag = (rng.random(n) < 0.5).astype(object)
    a_missing = rng.random(n) < 0.25
    logit = 1.5 * np.where(a_missing, 1.0, a) + b + (colour == "red")
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-logit)), "yes", "no")
    lab = np.round(b + rng.normal(size=n), 2).astype(str).astype(object)
    lab[rng.random(n) < 0.1] = "?"
    frame = pd.DataFrame(
        {"a": np.where(a_missing, np.nan, a), "b": b, "colour": colour, "flag": flag,
         "lab": lab, "const": 1.0, "empty": np.nan}
    )  # fmt: skip
    frame.loc[rng.random(n) < 0.1, "colour"] = None
    frame.loc[rng.random(n) < 0.1, "flag"] = None
    return frame, y


@pytest.mark.parametrize("cv", [3, None])
def test_fits_and_predicts_data_with_missing_values_as_it_is(cv):
    X, y = _messy_frame(400, seed=0)
    X_new, y_new = _messy_frame(200, seed=1)
    X_new.loc[:20, "b"] = np.nan  # never missing in training
    with pytest.warns(UserWarning) as record:
        model = EnsembleSelectionClassifier(library="tiny", cv=cv, n_jobs=1, n_bags=5).fit(X, y)
    said = " ".join(str(w.message) for w in record)
    assert "column 'lab' is numeric but holds the non-numeric token(s) ['?']" in said
    assert "['empty'] are missing in every training row" in said
    assert model.dropped_columns_ == {"const": "constant", "empty": "missing in every row"}
    assert model.n_features_in_ == 7 and "const" not in model.columns_
    with pytest.warns(UserWarning, match="column 'lab' is numeric"):
        proba = model.predict_proba(X_new)
    assert np.isfinite(proba).all()
    assert score("roc", (y_new == "yes").astype(int), proba[:, 1]) > 0.7
    with pytest.warns(UserWarning, match="column 'lab' is numeric"):
        risk = model.risk(X_new)
    assert np.isfinite(risk.to_numpy()).all() and ((risk >= 0) & (risk <= 1)).all().all()


class _Prior(Run):
    def __init__(self, p):
        self.p = p

    def predict(self, X, stages=None):
        return {"none": np.tile(self.p, (1, len(X), 1))}


def _fit_prior(X, y, *, n_classes, params, stages, random_state):
    import time

    if params["seconds"]:
        time.sleep(params["seconds"])  # stopped by the budget's alarm (n_jobs=1)
    counts = np.bincount(y, minlength=n_classes) + params["k"]
    return _Prior(counts / counts.sum())


@pytest.mark.slow  # waits on a 10 s wall-clock budget
def test_time_limit_is_the_whole_fit(cancer, monkeypatch):
    """A budget test with a slow fake family: ``fit`` stops the runs the budget cannot finish
    and returns an ensemble of what finished."""
    from ensel.library.families import FAMILIES, Family

    family = Family(name="prior", fit=_fit_prior, params={"k": 1.0, "seconds": 0}, view="native")
    monkeypatch.setitem(FAMILIES, "prior", family)
    spec = {
        "families": [
            {"family": "prior", "params": {"k": [1.0, 2.0], "seconds": [0, 120]}},
            {"family": "logreg", "params": {"ridge": [1.0, 10.0]}, "calibration": ["platt"]},
        ]
    }
    X_train, X_test, y_train, _ = cancer
    model = EnsembleSelectionClassifier(library=spec, cv=3, n_jobs=1, time_limit=10).fit(
        X_train, y_train
    )
    board = model.leaderboard()
    assert {"prior", "logreg"} <= set(board["family"])
    # the two 120 s runs were cut short (and a run that costs no more may not have started)
    assert all(p["seconds"] == 0 for p in board.loc[board["family"] == "prior", "params"])
    assert model.budget_.runs_not_finished["budget"] >= 2
    assert model.predict_proba(X_test).shape == (len(X_test), 2)


def test_the_runs_a_budget_cut_are_named_by_their_ids():
    from ensel.estimator.budget_report import cut_runs

    runs = pd.DataFrame(
        {
            "run": ["svm-b2", "knn-a1", "tree-c3", "logreg-d4"],
            "status": ["budget", "budget", "budget", "failed"],
            "fit_seconds": [3.0, 1.5, 0.0, 2.0],
        }
    )
    # tree-c3 never started (0 s), logreg-d4 failed on its own: neither was cut by the budget
    assert cut_runs(runs) == ["knn-a1", "svm-b2"]
