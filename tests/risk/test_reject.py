"""Reject options of Gu & Easwaran §5 (Eq. 10-11) and the choice of their thresholds."""

from __future__ import annotations

import itertools
import logging

import numpy as np
import pytest

from ensel.risk.reject import RejectRule, confidence, fit_reject_rule, reject_mask


def test_eq_10_rejects_rows_above_the_risk_threshold():
    risk = np.array([0.1, 0.5, 0.9, np.nan])
    np.testing.assert_array_equal(reject_mask(risk, 0.5), [False, False, True, True])


def test_eq_11_needs_both_thresholds():
    risk = np.array([0.1, 0.1, 0.9, 0.9])
    proba = np.array([[0.95, 0.05], [0.6, 0.4], [0.99, 0.01], [0.5, 0.5]])
    # answered only where confidence >= 0.9 and risk <= 0.5
    mask = reject_mask(risk, 0.5, proba, min_confidence=0.9)
    np.testing.assert_array_equal(mask, [False, True, True, True])
    rule = RejectRule(max_risk=0.5, min_confidence=0.9)
    np.testing.assert_array_equal(rule.reject(risk, proba), mask)
    with pytest.raises(ValueError, match="pass proba"):
        rule.reject(risk)


def test_confidence_of_binary_and_multiclass_outputs():
    np.testing.assert_allclose(confidence([0.2, 0.7, 0.5]), [0.8, 0.7, 0.5])
    np.testing.assert_allclose(confidence([[0.2, 0.5, 0.3]]), [0.5])
    with pytest.raises(ValueError, match="proba must be"):
        confidence(np.ones((3, 1)))


def test_coverage_without_labels_is_a_quantile_that_keeps_ties_together():
    risk = np.array([0.4, 0.1, 0.3, 0.3, 0.9])
    rule = fit_reject_rule(risk, coverage=0.5)  # 3rd smallest of 5 is 0.3: both 0.3 answered
    assert rule.max_risk == 0.3 and rule.min_confidence is None
    assert rule.coverage == pytest.approx(0.6)
    np.testing.assert_array_equal(rule.reject(risk), [True, False, False, False, True])
    assert fit_reject_rule(risk, coverage=1.0).max_risk == 0.9


def test_max_loss_answers_the_most_rows_within_the_loss():
    risk = np.array([0.3, 0.1, 0.4, 0.2])
    loss = np.array([1.0, 0.0, 0.0, 0.0])  # in risk order: 0, 0, 1, 0 -> means 0, 0, 1/3, 1/4
    rule = fit_reject_rule(risk, loss=loss, max_loss=0.3)
    assert (rule.max_risk, rule.coverage, rule.loss) == (0.4, 1.0, 0.25)
    rule = fit_reject_rule(risk, loss=loss, max_loss=0.2)
    assert (rule.max_risk, rule.coverage, rule.loss) == (0.2, 0.5, 0.0)


def test_an_unreachable_loss_rejects_everything(caplog):
    with caplog.at_level(logging.WARNING, logger="ensel.risk.reject"):
        rule = fit_reject_rule(np.array([0.1, 0.2]), loss=np.ones(2), max_loss=0.5)
    assert rule.reject(np.array([0.0, 0.5])).all() and rule.coverage == 0.0
    assert "rejects all" in caplog.text


def brute_force_eq11(risk, conf, err, max_loss=None, coverage=None):
    """Every (t1, t2) pair from the observed values, by loops."""
    best = None
    for t1, t2 in itertools.product(np.unique(conf), np.unique(risk)):
        answered = (conf >= t1) & (risk <= t2)
        if not answered.any():
            continue
        share, mean = answered.mean(), err[answered].mean()
        if max_loss is not None and mean <= max_loss:
            key = (share, -mean)
        elif coverage is not None and share >= coverage:
            key = (-mean, share)
        else:
            continue
        best = max(best, key) if best is not None else key
    return best


@pytest.mark.parametrize("seed", range(5))
def test_eq_11_thresholds_match_an_exhaustive_search(seed):
    rng = np.random.default_rng(seed)
    n = 40
    risk = rng.integers(0, 10, n) / 10  # ties on purpose
    proba = rng.dirichlet(np.ones(3), size=n)
    conf = proba.max(axis=1)
    # errors more likely where risk is high or confidence low
    y = np.where(rng.random(n) < 0.3 * risk + 0.5 * (1 - conf), (proba.argmax(1) + 1) % 3, 0)
    y = np.where(y == 0, proba.argmax(1), y)
    err = (proba.argmax(1) != y).astype(float)
    # n_grid >= n puts every observed confidence on the grid, so the search is exhaustive
    rule = fit_reject_rule(risk, proba=proba, y=y, max_loss=0.1, n_grid=200)
    share, neg_mean = brute_force_eq11(risk, conf, err, max_loss=0.1)
    assert rule.coverage == pytest.approx(share) and rule.loss == pytest.approx(-neg_mean)
    answered = ~rule.reject(risk, proba)
    assert answered.mean() == pytest.approx(rule.coverage)
    assert err[answered].mean() == pytest.approx(rule.loss) and rule.loss <= 0.1
    rule = fit_reject_rule(risk, proba=proba, y=y, coverage=0.5, n_grid=200)
    neg_mean, share = brute_force_eq11(risk, conf, err, coverage=0.5)
    assert rule.loss == pytest.approx(-neg_mean) and rule.coverage == pytest.approx(share)


def test_labels_through_classes():
    risk = np.array([0.1, 0.2, 0.3])
    proba = np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]])
    rule = fit_reject_rule(
        risk, proba=proba, y=np.array(["no", "yes", "yes"]), classes=["no", "yes"], max_loss=0.0
    )
    assert rule.coverage == pytest.approx(2 / 3) and rule.loss == 0.0
    with pytest.raises(ValueError, match="not in classes"):
        bad = np.array(["no", "maybe", "yes"])
        fit_reject_rule(risk, proba=proba, y=bad, classes=["no", "yes"], max_loss=0.1)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({}, "exactly one target"),
        ({"coverage": 0.5, "max_loss": 0.1}, "exactly one target"),
        ({"coverage": 1.5}, r"coverage must be a number in \(0, 1\]"),
        ({"max_loss": 0.1}, "needs per-row losses"),
        ({"coverage": 0.5, "proba": np.full((3, 2), 0.5)}, "needs per-row losses"),
        ({"coverage": 0.5, "proba": np.full((2, 2), 0.5)}, "risk has 3 rows but proba has 2"),
        ({"max_loss": 0.1, "loss": [0.0, 1.0]}, "loss must hold 3"),
        ({"max_loss": 0.1, "proba": np.full((3, 2), 0.5), "y": [0.5, 1, 0]}, "column indices"),
    ],
)
def test_bad_input_is_a_clear_error(kwargs, match):
    with pytest.raises(ValueError, match=match):
        fit_reject_rule(np.array([0.1, 0.2, 0.3]), **kwargs)


def test_risk_must_be_one_dimensional_and_complete():
    with pytest.raises(ValueError, match="1-D"):
        reject_mask(np.zeros((2, 2)), 0.5)
    with pytest.raises(ValueError, match="NaN"):
        fit_reject_rule(np.array([0.1, np.nan]), coverage=0.5)
