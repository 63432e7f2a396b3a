"""Open-set forest (Steele): Weibull tails against scipy, node pertinence on a stump, the three
aggregation rules on a hand tree, forest averaging and the learnt rejection threshold."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from sklearn.tree import DecisionTreeClassifier

from ensel.risk import OpenSetForest
from ensel.risk._evt import fit_weibull, weibull_log_survival
from ensel.risk.openset import _fit_tree_tails, accuracy_threshold, tree_pertinence


def test_weibull_fit_matches_scipy():
    rng = np.random.default_rng(0)
    rows = [rng.weibull(0.8, 20), 3 * rng.weibull(2.5, 12), 0.01 * rng.weibull(9.0, 5)]
    padded = np.full((4, 20), np.nan)
    for i, r in enumerate(rows):
        padded[i, : r.size] = r
    padded[3, :2] = [1.0, 2.0]  # too short: no model
    shape, scale = fit_weibull(padded)
    for i, r in enumerate(rows):
        c, _, s = stats.weibull_min.fit(r, floc=0)
        assert shape[i] == pytest.approx(c, rel=1e-4)
        assert scale[i] == pytest.approx(s, rel=1e-4)
    assert np.isnan(shape[3]) and np.isnan(scale[3])
    x = np.array([0.3, 1.0, 4.0])
    np.testing.assert_allclose(
        weibull_log_survival(x, shape[1], scale[1]),
        stats.weibull_min.logsf(x, shape[1], scale=scale[1]),
    )
    assert weibull_log_survival(np.array([-1.0]), 2.0, 1.0)[0] == 0.0


def stump_data():
    rng = np.random.default_rng(3)
    x = np.r_[rng.uniform(0, 4, 40), rng.uniform(6, 10, 30)]
    y = np.r_[np.zeros(40, int), np.ones(30, int)]
    return x[:, None], y


def test_node_pertinence_on_a_stump_matches_scipy():
    Z, y = stump_data()
    tree = DecisionTreeClassifier(max_depth=1).fit(Z, y).tree_
    theta = tree.threshold[0]
    tails = _fit_tree_tails(tree, Z, tail_size=10)
    d = Z[:, 0] - theta
    high = np.sort(d[d > 0])[-10:]  # the ten largest distances above the threshold
    low = np.sort(-d[d <= 0])[-10:]  # the ten largest below it
    c_hi, _, s_hi = stats.weibull_min.fit(high, floc=0)
    c_lo, _, s_lo = stats.weibull_min.fit(low, floc=0)
    np.testing.assert_allclose(tails[0], [c_hi, s_hi, c_lo, s_lo], rtol=1e-4)
    assert np.isnan(tails[1:]).all()  # leaves hold no model
    Zt = np.array([[12.0], [-3.0], [theta + 0.5], [theta - 0.5]])
    expected = [
        stats.weibull_min.sf(12.0 - theta, c_hi, scale=s_hi),
        stats.weibull_min.sf(theta + 3.0, c_lo, scale=s_lo),
        stats.weibull_min.sf(0.5, c_hi, scale=s_hi),
        stats.weibull_min.sf(0.5, c_lo, scale=s_lo),
    ]
    for rule in ("min", "mean"):
        np.testing.assert_allclose(tree_pertinence(tree, tails, Zt, rule), expected, rtol=1e-4)
    log_expected = [
        stats.weibull_min.logsf(12.0 - theta, c_hi, scale=s_hi),
        stats.weibull_min.logsf(theta + 3.0, c_lo, scale=s_lo),
        stats.weibull_min.logsf(0.5, c_hi, scale=s_hi),
        stats.weibull_min.logsf(0.5, c_lo, scale=s_lo),
    ]
    np.testing.assert_allclose(
        tree_pertinence(tree, tails, Zt, "product"), np.array(log_expected) / np.log(10), rtol=1e-4
    )
    assert expected[0] < 0.01 and expected[2] > 0.99  # far out vs near the boundary


def test_aggregation_rules_on_a_hand_tree():
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(200, 2))
    y = (Z[:, 0] * Z[:, 1] > 0).astype(int)
    tree = DecisionTreeClassifier(max_depth=3, random_state=0).fit(Z, y).tree_
    internal = np.flatnonzero(tree.feature >= 0)
    tails = np.full((tree.node_count, 4), np.nan)
    tails[internal] = np.column_stack(
        [1.5 + internal, 0.5 + 0.1 * internal, 2.0 + 0 * internal, 0.8 + 0.05 * internal]
    )
    tails[internal[1], 2:] = np.nan  # one node without a low-side model
    Zt = rng.normal(scale=2, size=(30, 2))
    path = tree.decision_path(Zt.astype(np.float32)).toarray().astype(bool)
    want = {"min": [], "mean": [], "product": []}
    for i, z in enumerate(Zt):
        log_pert = []
        for node in np.flatnonzero(path[i]):
            if tree.feature[node] < 0:
                continue
            d = z[tree.feature[node]] - tree.threshold[node]
            k, lam = tails[node, :2] if d > 0 else tails[node, 2:]
            if np.isnan(k):
                continue
            log_pert.append(-((abs(d) / lam) ** k))  # log of the Weibull survival
        pert = np.exp(log_pert)
        want["min"].append(pert.min())
        want["mean"].append(pert.mean())
        # log_{10^N} P = log P / (N log 10), with log P summed in logs (P underflows)
        want["product"].append(np.sum(log_pert) / (len(log_pert) * np.log(10.0)))
    for rule, expected in want.items():
        np.testing.assert_allclose(tree_pertinence(tree, tails, Zt, rule), expected, rtol=1e-9)
    assert len(set(np.round(want["min"], 6))) > 5  # the hand case spans many values


@pytest.mark.parametrize("rule", ["min", "mean", "product"])
def test_forest_averages_its_trees(rule):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 3))
    y = (X[:, 0] > 0).astype(int)
    det = OpenSetForest(n_estimators=8, aggregation=rule, random_state=0).fit(X, y)
    Xt = rng.normal(scale=0.7, size=(40, 3))
    per_tree = np.column_stack(
        [
            tree_pertinence(e.tree_, t, Xt, rule)
            for e, t in zip(det.forest_.estimators_, det.tails_, strict=True)
        ]
    )
    pert = 10.0 ** per_tree.mean(axis=1) if rule == "product" else per_tree.mean(axis=1)
    np.testing.assert_allclose(det.risk(Xt), 1 - pert)
    np.testing.assert_allclose(det.pertinence(Xt), pert)


def test_threshold_rejects_the_intended_fraction_of_validation_rows():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(1500, 4))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    det = OpenSetForest(
        n_estimators=20, reject_rate=0.1, validation_fraction=0.3, random_state=0
    ).fit(X, y)
    assert det.validation_risk_.size == 450
    assert np.mean(det.validation_risk_ > det.threshold_) == pytest.approx(0.1, abs=0.01)
    fresh = rng.normal(size=(2000, 4))
    assert 0.04 < det.reject(fresh).mean() < 0.2
    far = rng.normal(size=(50, 4)) * 0.5 + np.array([3.0, -3.0, 3.0, 0.0])
    far = np.clip(far, X.min(axis=0), X.max(axis=0))  # inside the box, away from the data
    assert det.reject(far).mean() > 0.8


def test_accuracy_threshold_on_a_hand_case():
    # t = 0.2 and t = 0.3 both classify five of six rows right; the smaller is taken
    assert accuracy_threshold([0.1, 0.2, 0.3], [0.25, 0.8, 0.9]) == 0.2
    assert accuracy_threshold([0.1, 0.2], [0.7, 0.9]) == 0.2


def test_accuracy_threshold_against_a_uniform_background():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(800, 3))
    y = (X[:, 2] > 0).astype(int)
    det = OpenSetForest(n_estimators=10, reject_rate=None, random_state=0).fit(X, y)
    known_kept = np.mean(det.validation_risk_ <= det.threshold_)
    unknown = det.space_.uniform(2000, 9)
    assert known_kept > 0.5 and det.reject(unknown).mean() > 0.5


def test_same_seed_same_threshold_and_other_seed_differs():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(400, 3))
    y = (X[:, 0] > 0).astype(int)
    a, b, c = (OpenSetForest(n_estimators=5, random_state=s).fit(X, y) for s in (1, 1, 2))
    assert a.threshold_ == b.threshold_
    assert not np.array_equal(a.risk(X[:50]), c.risk(X[:50]))


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"aggregation": "max"}, "aggregation must be one of"),
        ({"tail_size": 2}, "tail_size must be an integer >= 3"),
        ({"validation_fraction": 1.0}, "validation_fraction must lie in"),
        ({"reject_rate": 0.0}, "reject_rate must lie in"),
    ],
)
def test_bad_parameters_are_clear_errors(params, message):
    X = np.random.default_rng(0).normal(size=(40, 2))
    with pytest.raises(ValueError, match=message):
        OpenSetForest(n_estimators=2, **params).fit(X, X[:, 0] > 0)


def test_steele_settings_and_a_threshold_trained_on_unknown_classes():
    from ensel.risk.openset import STEELE

    rng = np.random.default_rng(3)
    X = rng.normal(size=(600, 3))
    y = (X[:, 0] > 0).astype(int)
    det = OpenSetForest(n_estimators=10, random_state=0, **STEELE).fit(X, y)
    assert det.aggregation == "min" and det.reject_rate is None
    known = rng.normal(size=(200, 3))
    unknown = rng.normal(size=(200, 3)) * 0.5 + np.array([2.5, -2.5, 0.0])  # an unseen class
    assert det.fit_threshold(known, unknown) is det
    expected = accuracy_threshold(det.risk(known), det.risk(unknown))
    assert det.threshold_ == expected
    accuracy = (np.sum(~det.reject(known)) + np.sum(det.reject(unknown))) / 400
    assert accuracy > 0.7
