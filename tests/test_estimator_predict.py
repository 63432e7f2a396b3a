"""Prediction speed features of the estimator: refit on all rows, a predict-time
budget, compact saved models and one-line errors for broken model files."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split

from ensel import EnsembleSelectionClassifier
from ensel.errors import ModelFileError
from ensel.library import build_library
from ensel.metrics import score

SPEC = {
    "families": [
        {"family": "logreg", "params": {"ridge": [0.01, 100.0]}, "calibration": ["none", "platt"]},
        {"family": "tree", "params": {"max_depth": [2, 5]}, "calibration": ["none", "isotonic"]},
        {"family": "adaboost", "stages": [4, 64], "calibration": ["none", "logistic", "platt"]},
        {"family": "knn", "stages": [5, 25], "calibration": ["none", "platt"]},
    ],
    "detectors": [{"detector": "box"}, {"detector": "isolation_forest"}],
}


@pytest.fixture(scope="module")
def data():
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
    lib = build_library(X_tr, y_tr, spec=SPEC, cv=3, random_state=0, verbose=0)
    return X_tr, X_te, y_tr, y_te, lib


def _fit(data, **kwargs):
    X_tr, _, y_tr, _, lib = data
    return EnsembleSelectionClassifier(library=lib, cv=3, n_bags=5, **kwargs).fit(X_tr, y_tr)


def test_refit_full_keeps_the_ensemble_and_predicts_with_one_model_per_run(data):
    _, X_te, _, y_te, _ = data
    kept = _fit(data)
    full = _fit(data, refit="full")
    np.testing.assert_array_equal(full.weights_, kept.weights_)
    assert list(full.members_["id"]) == list(kept.members_["id"])
    for fitted in full.fitted_members_.runs.values():
        assert len(fitted.siblings) == 1
        assert all(len(cals) == 1 for cals in fitted.calibrators.values())
    p_full, p_kept = full.predict_proba(X_te)[:, 1], kept.predict_proba(X_te)[:, 1]
    assert np.isfinite(p_full).all()
    assert score("roc", y_te.to_numpy(), p_full) > 0.95
    assert np.abs(p_full - p_kept).mean() < 0.05  # the same ensemble, other fits


def test_refit_needs_the_librarys_own_data(data):
    X_tr, _, y_tr, _, lib = data
    with pytest.raises(ValueError, match="refit needs the data"):
        EnsembleSelectionClassifier(library=lib, cv=3, n_bags=2, refit="full").fit(
            X_tr.iloc[:-5], y_tr.iloc[:-5]
        )
    with pytest.raises(ValueError, match=r"'refit' parameter .* Got 'always'"):
        EnsembleSelectionClassifier(library=lib, refit="always").fit(X_tr, y_tr)


def test_predict_budget_is_kept_and_costs_are_estimated(data):
    free = _fit(data, max_predict_ms=None)
    assert free.predict_cost_ms_ > 0
    budget = free.predict_cost_ms_ / 4
    tight = _fit(data, max_predict_ms=budget)
    assert tight.predict_cost_ms_ <= budget * (1 + 1e-9)
    # refit="full" predicts with one model per run: the same budget buys more
    refit = _fit(data, refit="full")
    assert refit.predict_cost_ms_ < free.predict_cost_ms_
    with pytest.raises(ValueError, match="works with strategy='es'"):
        _fit(data, strategy="modsel", max_predict_ms=budget)


def test_auto_budget_is_the_default_and_never_costs_more_than_no_budget(data):
    _, X_te, _, y_te, _ = data
    free = _fit(data, max_predict_ms=None)
    auto = _fit(data)
    assert auto.max_predict_ms == "auto"
    assert "tried" not in free.predict_budget_
    tried = auto.predict_budget_["tried"]
    assert tried and all(row["cost"] <= row["budget"] * (1 + 1e-9) for row in tried)
    assert auto.predict_cost_ms_ <= free.predict_cost_ms_ * (1 + 1e-9)
    accepted = [row for row in tried if row["accepted"]]
    if accepted:  # the cheapest accepted budget is the one kept, and it lost within noise
        best = min(accepted, key=lambda row: row["budget"])
        assert auto.predict_budget_["max_predict_ms"] == best["budget"]
        assert auto.predict_cost_ms_ <= best["budget"] * (1 + 1e-9)
        assert all(row["lost"] <= 0.5 * row["se"] for row in accepted)
    else:  # no budget: the unconstrained ensemble, less the costly runs dropped after
        dropped = {row["run"] for row in auto.predict_budget_["dropped"]}
        left = ~free.members_["run"].isin(dropped).to_numpy()
        np.testing.assert_array_equal(auto.members_["id"], free.members_["id"][left])
        np.testing.assert_allclose(auto.weights_, free.weights_[left] / free.weights_[left].sum())
    assert all(row["accepted"] for row in auto.predict_budget_["dropped"])
    assert score("roc", y_te.to_numpy(), auto.predict_proba(X_te)[:, 1]) > 0.95
    with pytest.raises(ValueError, match=r"'max_predict_ms' parameter .* Got 'fast'"):
        _fit(data, max_predict_ms="fast")
    # the other strategies have no budget to choose: "auto" leaves them as they are
    assert "tried" not in _fit(data, strategy="modsel").predict_budget_


def test_risk_uses_one_sibling_per_detector_and_save_can_leave_risk_out(data, tmp_path):
    _, X_te, _, _, _ = data
    clf = _fit(data)
    assert all(len(f.siblings) == 1 for f in clf.detectors_.fitted)
    risks = clf.risk(X_te)
    assert {"box", "isolation_forest", "combined"} <= set(risks.columns)
    clf.save(tmp_path / "with.pkl")
    clf.save(tmp_path / "without.pkl", risk=False)
    assert (tmp_path / "without.pkl").stat().st_size < (tmp_path / "with.pkl").stat().st_size
    small = EnsembleSelectionClassifier.load(tmp_path / "without.pkl")
    np.testing.assert_allclose(small.predict_proba(X_te), clf.predict_proba(X_te))
    with pytest.raises(ValueError, match="saved with save\\(path, risk=False\\)"):
        small.risk(X_te)
    np.testing.assert_allclose(
        EnsembleSelectionClassifier.load(tmp_path / "with.pkl").risk(X_te), risks
    )


@pytest.mark.parametrize("damage", ["truncate", "garbage"])
def test_a_broken_model_file_is_one_clear_line(data, tmp_path, damage):
    clf = _fit(data)
    path = tmp_path / "model.pkl"
    clf.save(path)
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) // 2] if damage == "truncate" else b"not a model" + raw[:50])
    with pytest.raises(ModelFileError, match="is not a readable ensel model") as info:
        EnsembleSelectionClassifier.load(path)
    assert "\n" not in str(info.value)


def test_a_model_saved_by_another_version_is_refused_in_one_line(data, tmp_path):
    from ensel.estimator.persistence import version

    clf = _fit(data)
    clf.ensel_version_ = "0.0.1"
    clf.save(tmp_path / "old.pkl")
    with pytest.raises(ModelFileError, match=r"saved by ensel 0\.0\.1") as info:
        EnsembleSelectionClassifier.load(tmp_path / "old.pkl")
    message = str(info.value)
    assert "\n" not in message and f"this is ensel {version()}" in message


def test_a_model_of_the_other_class_is_named(data, tmp_path):
    from ensel import EnsembleSelectionRegressor

    _fit(data).save(tmp_path / "clf.pkl")
    with pytest.raises(TypeError, match="holds an ensel EnsembleSelectionClassifier"):
        EnsembleSelectionRegressor.load(tmp_path / "clf.pkl")


def test_saved_file_is_compressed_and_holds_large_arrays(tmp_path):
    """Large arrays reach the compressing writer as pickle buffers (protocol 5)."""
    import io
    import pickle
    import zlib

    from ensel.estimator.persistence import _Sink

    buffer, packer = io.BytesIO(), zlib.compressobj(3)
    obj = {"a": np.arange(300_000)}
    pickle.dump(obj, _Sink(buffer, packer), protocol=pickle.HIGHEST_PROTOCOL)
    buffer.write(packer.flush())
    np.testing.assert_array_equal(pickle.loads(zlib.decompress(buffer.getvalue()))["a"], obj["a"])
    assert len(buffer.getvalue()) < obj["a"].nbytes / 5


def test_average_of_members_that_all_say_one_is_a_probability():
    """Weights of 1, 6, 8 and 11 picks of 37 sum to one only up to rounding: members that all
    predict 1.0 averaged to 1.0000000000000002 (and 1 - p < 0), which ``score`` refused in fit."""
    from ensel.selection import weighted_average

    weights = np.array([1, 6, 8, 11, 11]) / 37
    proba = weighted_average(weights, np.ones((5, 3)), "classification")
    assert proba.max() == 1.0
    score("mxe", np.ones(3, dtype=int), proba)
