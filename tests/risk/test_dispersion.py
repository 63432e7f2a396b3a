"""Forest dispersion risk (Sandia report §2.3): proximity sums, per-class median / mean absolute
deviation normalisation, minimum over classes, checked against a naive loop."""

from __future__ import annotations

import numpy as np
import pytest

from ensel.risk import ForestDispersionRisk
from ensel.risk.dispersion import _class_statistics, class_proximity, dispersion_to_risk


def test_class_proximity_on_a_hand_leaf_table():
    table = np.array([[0, 3], [0, 4], [1, 3]])  # 3 training rows, 2 trees, leaf ids 0..4
    labels = np.array([0, 0, 1])
    leaves = np.array([[0, 3], [2, 4]])
    # row 0 meets training rows 0 (both trees), 1 (tree 1), 2 (tree 2): prox 1, 1/2, 1/2
    # row 1 meets training row 1 in tree 2 only: prox 1/2
    expected = [[1 + 0.25, 0.25], [0.25, 0.0]]
    np.testing.assert_allclose(class_proximity(leaves, table, labels, 2, 5), expected)


def test_class_statistics_are_median_and_mean_absolute_deviation():
    raw = np.array([1.0, 2.0, 3.0, 10.0, np.inf, 4.0, 4.0])
    y = np.array([0, 0, 0, 0, 0, 1, 1])
    median, deviation = _class_statistics(raw, y, 2)
    np.testing.assert_allclose(median, [2.5, 4.0])  # the infinite score is left out
    assert deviation[0] == pytest.approx((1.5 + 0.5 + 0.5 + 7.5) / 4)
    assert 0 < deviation[1] < 1e-9  # a constant class keeps a positive scale


def test_dispersion_to_risk_is_monotone_onto_the_unit_interval():
    np.testing.assert_allclose(dispersion_to_risk([0.0, 1.0, 3.0, np.inf]), [0, 0.5, 0.75, 1])


def naive_fdr(table, labels, leaves, n_classes):
    """Report §2.3 by loops: leave-one-out training scores, median and mean absolute
    deviation per class, then min over classes of max(0, standardised raw outlierness)."""
    T = table.shape[1]

    def raw(row_leaves, members):
        s = sum((np.sum(row_leaves == table[j]) / T) ** 2 for j in members)
        return np.inf if s == 0 else 1 / s

    mu, sigma = np.zeros(n_classes), np.zeros(n_classes)
    for c in range(n_classes):
        members = np.flatnonzero(labels == c)
        scores = np.array([raw(table[i], [j for j in members if j != i]) for i in members])
        scores = scores[np.isfinite(scores)]
        mu[c] = np.median(scores)
        sigma[c] = np.mean(np.abs(scores - mu[c]))
    out = []
    for z in leaves:
        per_class = [
            max(0.0, (raw(z, np.flatnonzero(labels == c)) - mu[c]) / sigma[c])
            for c in range(n_classes)
        ]
        out.append(min(per_class))
    return np.array(out), mu, sigma


def test_fdr_matches_a_naive_loop():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(90, 3))
    y = np.digitize(X[:, 0] + 0.5 * rng.normal(size=90), [-0.4, 0.4])  # overlapping classes
    det = ForestDispersionRisk(n_estimators=12, random_state=0).fit(X, y)
    Xt = np.vstack([rng.normal(size=(25, 3)), rng.normal(scale=3, size=(10, 3))])
    leaves = det.forest_.apply(Xt) + np.cumsum(
        [0] + [e.tree_.node_count for e in det.forest_.estimators_[:-1]]
    )
    expected, mu, sigma = naive_fdr(det.leaf_table_, det.leaf_class_, leaves, 3)
    np.testing.assert_allclose(det.median_, mu)
    np.testing.assert_allclose(det.deviation_, sigma)
    np.testing.assert_allclose(det.dispersion(Xt), expected)
    outside = ((Xt < X.min(axis=0)) | (Xt > X.max(axis=0))).any(axis=1)
    assert outside.any() and not outside.all()
    expected_risk = np.where(outside, 1.0, dispersion_to_risk(expected))  # report §2.1
    np.testing.assert_allclose(det.risk(Xt), expected_risk)
    assert (expected > 0).any() and (expected == 0).any()


def test_keeps_the_leaf_table_not_the_data():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(120, 4))
    y = (X[:, 1] > 0).astype(int)
    det = ForestDispersionRisk(n_estimators=10, random_state=0).fit(X, y)
    assert det.leaf_table_.shape == (120, 10)
    assert np.issubdtype(det.leaf_table_.dtype, np.integer)
    for name, value in vars(det).items():
        if isinstance(value, np.ndarray) and value.dtype.kind == "f":
            assert not np.isin(X, value).any(), f"{name} holds training values"


def test_rows_like_a_pure_cluster_get_low_risk():
    X = np.r_[np.zeros(20), np.ones(20) * 10][:, None]
    X = np.c_[X, np.tile([0.0, 1.0], 20)]
    y = (X[:, 0] > 5).astype(int)
    det = ForestDispersionRisk(n_estimators=10, random_state=0).fit(X, y)
    assert np.isfinite(det.median_).all()
    inside = det.risk(np.array([[0.0, 0.0], [10.0, 1.0]]))
    assert (inside < 0.5).all()


def test_blocked_computation_matches_one_block(monkeypatch):
    import ensel.risk.dispersion as dispersion

    rng = np.random.default_rng(2)
    X = rng.normal(size=(200, 3))
    y = (X[:, 0] + rng.normal(size=200) > 0).astype(int)
    whole = ForestDispersionRisk(n_estimators=8, random_state=0).fit(X, y)
    monkeypatch.setattr(dispersion, "_PAIRS", 500)  # blocks of 16 rows
    blocked = ForestDispersionRisk(n_estimators=8, random_state=0).fit(X, y)
    np.testing.assert_allclose(blocked.median_, whole.median_)
    np.testing.assert_allclose(blocked.dispersion(X[:90]), whole.dispersion(X[:90]))
