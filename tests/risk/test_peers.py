"""scikit-learn peers: encoding, the score maps, and the KDE on Hooker's scale (u / (u + f))."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.ensemble import IsolationForest
from sklearn.neighbors import LocalOutlierFactor
from sklearn.preprocessing import StandardScaler

from ensel.risk import FeatureSpace, IsolationForestRisk, KDERisk, LOFRisk
from ensel.risk.peers import ONE_HOT_SCALE, make_encoder


def test_encoder_imputes_standardises_and_one_hot_encodes():
    frame = pd.DataFrame({"x": [1.0, 2.0, np.nan, 5.0], "c": ["a", "b", "b", None]})
    space, Z = FeatureSpace.fit(frame)
    E = make_encoder(space).fit(Z).transform(Z)
    x = np.array([1.0, 2.0, 2.0, 5.0])  # NaN -> median 2
    np.testing.assert_allclose(E[:, 0], (x - x.mean()) / x.std())
    s = ONE_HOT_SCALE
    np.testing.assert_allclose(E[:, 1:], [[s, 0], [0, s], [0, s], [0, s]])  # None -> mode "b"


def test_isolation_forest_risk_is_the_anomaly_score():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3)) * [1.0, 10.0, 0.1]
    det = IsolationForestRisk(n_estimators=40, random_state=3).fit(X)
    scaler = StandardScaler().fit(X)
    ref = IsolationForest(n_estimators=40, random_state=3).fit(scaler.transform(X))
    Xt = X[:30] * 0.9
    np.testing.assert_allclose(det.risk(Xt), -ref.score_samples(scaler.transform(Xt)))
    assert (det.risk(Xt) > 0).all() and (det.risk(Xt) <= 1).all()


def test_lof_risk_maps_the_outlier_factor():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 2))
    det = LOFRisk(n_neighbors=10).fit(X)
    scaler = StandardScaler().fit(X)
    ref = LocalOutlierFactor(n_neighbors=10, novelty=True).fit(scaler.transform(X))
    Xt = X[:25] * 0.8  # inside the box
    lof = -ref.score_samples(scaler.transform(Xt))
    np.testing.assert_allclose(det.risk(Xt), lof / (1 + lof))


def test_kde_risk_is_hookers_ratio_on_numeric_data():
    rng = np.random.default_rng(2)
    X = rng.normal(loc=3.0, scale=2.0, size=(150, 1))
    det = KDERisk(bandwidth=0.4).fit(X)
    x = np.array([0.0, 3.0, 6.0])
    # in raw units: Gaussian kernels of width 0.4 standard deviations, uniform on the range
    sd = X[:, 0].std()
    f = stats.norm.pdf(x[:, None], loc=X[:, 0], scale=0.4 * sd).mean(axis=1)
    u = 1.0 / np.ptp(X)
    np.testing.assert_allclose(det.risk(x[:, None]), u / (u + f), rtol=1e-9)


def test_kde_on_a_categorical_column_is_aitchison_aitken():
    frame = pd.DataFrame({"c": ["a"] * 5 + ["b"] * 3 + ["c"] * 2})
    h = 0.5
    det = KDERisk(bandwidth=h).fit(frame)
    r = np.exp(-(ONE_HOT_SCALE**2) / h**2)
    counts = np.array([5, 3, 2])
    f = (counts + r * (10 - counts)) / (10 * (1 + 2 * r))  # kernel mass on own / other cats
    new = pd.DataFrame({"c": ["a", "b", "c"]})
    np.testing.assert_allclose(np.exp(det.log_density(new)), f)
    assert f.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(det.risk(new), (1 / 3) / (1 / 3 + f))


def test_kde_mixed_density_integrates_to_one():
    rng = np.random.default_rng(3)
    frame = pd.DataFrame(
        {"x": rng.normal(size=80), "c": rng.choice(["p", "q"], size=80, p=[0.7, 0.3])}
    )
    det = KDERisk(bandwidth=0.6).fit(frame)
    grid = np.linspace(-12, 12, 4001)
    sd = frame["x"].std(ddof=0)
    total = 0.0
    for cat in ("p", "q"):
        rows = pd.DataFrame({"x": grid, "c": cat})
        # the density is per standardised unit of x: divide by sd to integrate over x
        total += np.trapezoid(np.exp(det.log_density(rows)) / sd, grid)
    assert total == pytest.approx(1.0, abs=1e-6)


def test_kde_cross_validated_bandwidth_is_inside_its_grid_and_sensible():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(300, 1))
    det = KDERisk(random_state=0).fit(X)
    scott = 300 ** (-1 / 5)
    assert 0.25 * scott < det.bandwidth_ < 2.0 * scott
    silverman = KDERisk(bandwidth="silverman").fit(X).bandwidth_
    assert 0.5 < det.bandwidth_ / silverman < 2.0
    assert KDERisk(random_state=0).fit(X).bandwidth_ == det.bandwidth_


@pytest.mark.parametrize("bad", [0.0, -1.0, "wide", np.inf])
def test_kde_bad_bandwidth_is_a_clear_error(bad):
    with pytest.raises(ValueError, match="bandwidth must be"):
        KDERisk(bandwidth=bad).fit(np.random.default_rng(0).normal(size=(20, 2)))


@pytest.mark.parametrize("cls", [IsolationForestRisk, LOFRisk, KDERisk])
def test_peers_rank_a_far_point_above_the_centre_and_give_one_outside(cls):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(400, 2))
    det = cls().fit(X)
    r = det.risk(np.array([[0.0, 0.0], [2.5, -2.5], [9.0, 0.0]]))
    assert r[0] < r[1] < r[2] == 1.0


@pytest.mark.parametrize(
    "name", ["margin", "dispersion", "openset_forest", "isolation_forest", "lof", "kde"]
)
def test_fitted_detectors_survive_pickling(name):
    import pickle

    from ensel.risk import get_detector

    rng = np.random.default_rng(6)
    X = rng.normal(size=(200, 3))
    y = (X[:, 0] > 0).astype(int)
    cls = get_detector(name)
    det = cls(**cls.test_params).fit(X, y if cls.requires_y else None)
    Xt = rng.normal(size=(20, 3))
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(det)).risk(Xt), det.risk(Xt))
