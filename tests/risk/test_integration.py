"""Detectors as library members: built and stored by the builder, combined by selection, and
used by the estimator's risk() and reject option."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_breast_cancer

from ensel import EnsembleSelectionClassifier
from ensel.errors import SpecError
from ensel.library import build_library
from ensel.library.spec import load_spec
from ensel.risk import BoxRisk, CombinedRisk, Detector, register
from ensel.risk.combined import fit_combination
from ensel.risk.reject import RejectRule


@register("test_distance")
class DistanceRisk(Detector):
    """Risk grows with the standardised distance from the training mean (a known-good
    detector for these tests)."""

    def __init__(self, scale=2.0):
        self.scale = scale  # per feature

    def _fit(self, Z, y):
        self.mean_, self.sd_ = np.nanmean(Z, axis=0), np.nanstd(Z, axis=0) + 1e-12

    def _risk(self, Z):
        d2 = np.nansum(((Z - self.mean_) / self.sd_) ** 2, axis=1)
        return 1.0 - np.exp(-d2 / (self.scale * Z.shape[1]))


@register("test_broken")
class BrokenRisk(Detector):
    def _fit(self, Z, y):
        raise RuntimeError("this detector always fails")


SPEC = {
    "families": [{"family": "logreg"}, {"family": "tree", "params": {"max_depth": 3}}],
    "detectors": [{"detector": "box"}, {"detector": "test_distance"}],
}


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    return X, y


@pytest.fixture(scope="module")
def fitted(cancer):
    X, y = cancer
    return EnsembleSelectionClassifier(library=SPEC, n_jobs=1, cv=3, n_bags=2, random_state=0).fit(
        X, y
    )


def test_spec_detector_section_is_validated():
    spec = load_spec(SPEC)
    assert [d.family for d in spec.detectors] == ["box", "test_distance"]
    assert spec.detectors[0].run_id != spec.detectors[1].run_id
    bad = dict(SPEC, detectors=[{"detector": "nope"}])
    with pytest.raises(SpecError, match="unknown detector 'nope'"):
        load_spec(bad)
    bad = dict(SPEC, detectors=[{"detector": "box", "params": {"width": 1}}])
    with pytest.raises(SpecError, match="params"):
        load_spec(bad)


def test_builder_stores_out_of_fold_risks_against_background(cancer, tmp_path):
    X, y = cancer
    lib = build_library(X, y, spec=SPEC, cv=3, store=tmp_path / "s", verbose=0)
    dets = lib.detectors
    n = X.shape[0]
    assert dets.predictions.shape == (2, 2 * n)
    np.testing.assert_array_equal(dets.y, np.r_[np.zeros(n), np.ones(n)])
    # background points are uniform in the box: far from the data, so riskier on average
    dist = np.asarray(dets.predictions[1])
    assert dist[n:].mean() > dist[:n].mean() + 0.3
    assert np.isfinite(dist).all()
    again = build_library(X, y, spec=SPEC, cv=3, store=tmp_path / "s", verbose=0)
    np.testing.assert_array_equal(again.detectors.predictions, dets.predictions)


def test_a_failing_detector_is_recorded_and_skipped(cancer, tmp_path):
    X, y = cancer
    spec = dict(SPEC, detectors=[{"detector": "test_broken"}, {"detector": "test_distance"}])
    lib = build_library(X, y, spec=spec, cv=3, store=tmp_path / "s", verbose=0)
    assert list(lib.detectors.members["family"]) == ["test_distance"]
    assert "always fails" in lib.detectors.failures["error"].iloc[0]


def test_risk_has_a_column_per_detector_and_combined(fitted, cancer):
    X, _ = cancer
    far = X.head(5) * 4.0
    risk = fitted.risk(pd.concat([X.head(20), far]))
    assert list(risk.columns) == ["box", "test_distance", "combined"]
    assert ((risk >= 0) & (risk <= 1)).all().all()
    assert risk["combined"].iloc[20:].min() > risk["combined"].iloc[:20].max()
    np.testing.assert_array_equal(risk["box"].iloc[20:], 1.0)


def test_combination_weights_detectors_by_how_well_they_tell_data_from_background():
    rng = np.random.default_rng(0)
    t = np.r_[np.zeros(500), np.ones(500)]
    good = np.clip(0.5 + 0.4 * (t - 0.5) + 0.25 * rng.normal(size=t.size), 0, 1)
    noise = rng.random(t.size)
    comb = fit_combination(np.stack([noise, good]), t, ["noise", "good"])
    assert comb.weights[1] > 0.8
    combined = comb.combined(np.stack([noise, good]))
    assert combined[t == 1].mean() > combined[t == 0].mean() + 0.2


def test_a_detector_with_non_finite_risks_is_left_out_of_the_combination(caplog):
    """Seen on Ecdat::DoctorAUS: one detector's risks broke its Platt scaling, and the NaN
    crashed the whole fit; it now gets no weight and cannot leak NaN into the combined risk."""
    rng = np.random.default_rng(1)
    t = np.r_[np.zeros(300), np.ones(300)]
    good = np.clip(0.5 + 0.4 * (t - 0.5) + 0.25 * rng.normal(size=t.size), 0, 1)
    broken = rng.random(t.size)
    broken[::7] = np.nan
    comb = fit_combination(np.stack([broken, good]), t, ["broken", "good"])
    assert comb.weights[0] == 0.0 and comb.weights[1] == pytest.approx(1.0)
    assert "['broken']" in caplog.text
    assert np.isfinite(comb.combined(np.stack([broken, good]))).all()
    with pytest.raises(ValueError, match="every detector"):
        fit_combination(np.stack([broken]), t, ["broken"])


def test_predict_with_reject_refuses_risky_rows(fitted, cancer):
    X, _ = cancer
    rows = pd.concat([X.head(10), X.head(3) * 5.0], ignore_index=True)
    plain = fitted.predict(rows)
    marked = fitted.predict(rows, reject=0.9)
    assert marked.dtype == object
    assert all(m is None for m in marked[10:])
    kept = np.array([m is not None for m in marked])
    np.testing.assert_array_equal(marked[kept].astype(plain.dtype), plain[kept])
    everything = fitted.predict(rows, reject=(1.0, 1.0))  # demand a top probability of 1
    proba = fitted.predict_proba(rows).max(axis=1)
    assert sum(m is None for m in everything) == int((proba < 1.0).sum())
    rule = fitted.predict(rows, reject=RejectRule(max_risk=0.9))
    np.testing.assert_array_equal(rule == None, marked == None)  # noqa: E711
    with pytest.raises(ValueError, match="reject="):
        fitted.predict(rows, reject="high")
    # the mask from a risk frame computed once is the one predict(reject=...) applies
    risk = fitted.risk(rows)
    mask = fitted.refused_rows(rows, 0.9, risk=risk)
    np.testing.assert_array_equal(mask, marked == None)  # noqa: E711
    risk.loc[0, "combined"] = np.nan  # unknown risk is refused
    assert fitted.refused_rows(rows, 0.9, risk=risk)[0]


def test_risk_without_detectors_says_what_to_do(cancer):
    X, y = cancer
    clf = EnsembleSelectionClassifier(library={"families": [{"family": "logreg"}]}, n_jobs=1, cv=3)
    clf.fit(X, y)
    with pytest.raises(ValueError, match="detectors:"):
        clf.risk(X)


def test_combined_risk_standalone_ranks_far_points_above_near_ones():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 4))
    comb = CombinedRisk(detectors=[BoxRisk(), DistanceRisk()], cv=3, random_state=0).fit(X)
    r = comb.risks(np.vstack([np.zeros((5, 4)), np.full((5, 4), 2.0)]))
    assert list(r.columns) == ["box", "test_distance", "combined"]
    assert r["combined"].iloc[5:].min() > r["combined"].iloc[:5].max()
    assert comb.weights_.sum() == pytest.approx(1.0)


def test_a_detector_run_is_estimated_from_its_training_cap_and_the_rows_it_scores():
    from ensel.library.planning.cost import cost_constants
    from ensel.risk.combined import DETECTOR_ROWS
    from ensel.risk.detector_runs import DetectorSpec, detector_seconds, estimate_detector_run

    kde = DetectorSpec("kde", ())
    at = estimate_detector_run(kde, 10 * DETECTOR_ROWS, 12, 10_000, 1)
    # past DETECTOR_ROWS more training rows cost nothing more: a sibling trains on at most those
    assert at == estimate_detector_run(kde, 100 * DETECTOR_ROWS, 12, 10_000, 1)
    assert at > estimate_detector_run(kde, DETECTOR_ROWS, 12, 10_000, 1)  # 5,000 - 10,000 rows
    # more rows scored (its held-out rows and as many background points) or columns cost more
    assert estimate_detector_run(kde, 10 * DETECTOR_ROWS, 12, 20_000, 1) > at
    assert estimate_detector_run(kde, 10 * DETECTOR_ROWS, 24, 10_000, 1) > at
    # five fold siblings: five fits, each scoring its fold and the whole background
    five = estimate_detector_run(kde, 10 * DETECTOR_ROWS, 12, 2_000, 5)
    one = estimate_detector_run(kde, 10 * DETECTOR_ROWS, 12, 2_000, 1)
    assert five > 4 * one
    constants = cost_constants()["detectors"]["kde"]
    assert five == pytest.approx(5 * detector_seconds(constants, DETECTOR_ROWS, 2_000 * 6, 12))
    assert one == pytest.approx(detector_seconds(constants, DETECTOR_ROWS, 2_000 * 2, 12))
    assert estimate_detector_run(DetectorSpec("test_distance", ()), 10_000, 12, 1_000, 1) is None


def test_a_budgeted_build_plans_its_detectors_with_its_models(cancer):
    X, y = cancer
    spec = {"families": [{"family": "logreg", "calibration": ["none"]}],
            "detectors": [{"detector": "box"}, {"detector": "test_distance"}]}  # fmt: skip
    lib = build_library(X, y, spec=spec, cv=3, time_limit=60, n_jobs=1)
    plan = lib.plan.set_index("family")
    assert plan.loc["box", "seconds"] > 0 and plan.loc["box", "end"] is not None
    # a detector without measured constants is kept, not estimated
    assert plan.loc["test_distance", "seconds"] == 0
    assert "not estimated" in plan.loc["test_distance", "note"]


def test_a_row_every_detector_puts_outside_the_box_has_combined_risk_one():
    """Seen on categorical-only data: every detector said 1 for an unseen category, yet the
    combined risk was 0.19, below an ordinary row's 0.49 (an isolation forest's Platt slope
    fitted the wrong way on the box's points), so predict(reject=0.9) accepted it; far
    numeric rows topped out near 0.9."""
    rng = np.random.default_rng(1)
    X = pd.DataFrame({"c1": rng.choice(list("abc"), 150), "c2": rng.choice(list("xy"), 150)})
    dets = ["box", "cert", "isolation_forest"]
    comb = CombinedRisk(detectors=dets, cv=5, random_state=0).fit(X)
    r = comb.risks(pd.DataFrame({"c1": ["a", "z", "b"], "c2": ["x", "y", "q"]}))
    np.testing.assert_array_equal(r[dets].iloc[1:], 1.0)
    np.testing.assert_array_equal(r["combined"].iloc[1:], 1.0)
    assert r["combined"].iloc[0] < 1.0
    Xn = pd.DataFrame({"v": rng.normal(size=150), "w": rng.normal(size=150)})
    comb = CombinedRisk(detectors=dets, cv=5, random_state=0).fit(Xn)
    far = comb.risks(pd.DataFrame({"v": [0.0, 1e6], "w": [0.0, 0.0]}))["combined"]
    assert far[0] < 0.9 and far[1] == 1.0
