"""Calibration: PAV and Platt against hand-checked cases and scikit-learn, logistic correction."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.calibration import _sigmoid_calibration
from sklearn.isotonic import IsotonicRegression

from ensel.calibration import (
    ColumnCalibrator,
    IsotonicCalibrator,
    PlattCalibrator,
    logistic_correction,
    pav,
)


def test_pav_pools_violators_by_hand():
    # [1, 0] violate -> .5; then 1 is fine; [1, 0] violate -> .5, which ties the block before
    # it and pools with it (Table 3.1 pools on >=); the last 1 stays alone
    values, ends = pav(np.array([1.0, 0.0, 1.0, 0.0, 1.0]))
    np.testing.assert_allclose(values, [0.5, 1.0])
    np.testing.assert_array_equal(ends, [4, 5])


def test_pav_is_monotone_and_weighted():
    values, ends = pav(np.array([3.0, 1.0, 2.0]), np.array([1.0, 3.0, 1.0]))
    # 3 (w1) and 1 (w3) pool to 1.5 (w4); 1.5 < 2 stays
    np.testing.assert_allclose(values, [1.5, 2.0])
    np.testing.assert_array_equal(ends, [2, 3])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_isotonic_equals_sklearn_on_training_points(seed):
    rng = np.random.default_rng(seed)
    f = np.round(rng.random(400), 2)  # ties in the scores
    y = (rng.random(400) < f**2).astype(int)
    ours = IsotonicCalibrator().fit(f, y)
    ref = IsotonicRegression(out_of_bounds="clip").fit(f, y)
    np.testing.assert_allclose(ours.predict(f), ref.predict(f), atol=1e-12)


def test_isotonic_is_a_right_continuous_step_function():
    cal = IsotonicCalibrator().fit(np.array([0.1, 0.2, 0.3, 0.4]), np.array([0, 0, 1, 1]))
    # blocks: {0.1, 0.2} -> 0, {0.3, 0.4} -> 1; m(f) = value of the block with f_i < f <= f_j
    np.testing.assert_allclose(cal.predict([0.0, 0.2, 0.25, 0.3, 0.9]), [0, 0, 1, 1, 1])


def test_platt_matches_sklearn_sigmoid_fit():
    rng = np.random.default_rng(3)
    f = rng.normal(size=600)
    y = (rng.random(600) < 1 / (1 + np.exp(-2 * f + 0.5))).astype(int)
    cal = PlattCalibrator().fit(f, y)
    a, b = _sigmoid_calibration(f, y)  # also Platt's smoothed targets
    np.testing.assert_allclose([cal.a_, cal.b_], [a, b], rtol=1e-4)
    assert cal.a_ < 0  # P(y=1) = 1 / (1 + exp(A f + B)) increases with f


def test_platt_targets_keep_separable_data_off_zero_and_one():
    # perfectly separated scores: with 0/1 targets the sigmoid would become a step;
    # Platt's targets (N+ + 1) / (N+ + 2) and 1 / (N- + 2) bound it
    f = np.array([-2.0, -1.0, 1.0, 2.0])
    y = np.array([0, 0, 1, 1])
    p = PlattCalibrator().fit(f, y).predict(f)
    assert 0.2 < p[0] < 0.3 and 0.7 < p[-1] < 0.8  # targets are 1/4 and 3/4


def test_column_calibrator_binary_and_multiclass_rows_sum_to_one():
    rng = np.random.default_rng(4)
    f2 = rng.dirichlet([1, 1], size=200)
    y2 = (rng.random(200) < f2[:, 1]).astype(int)
    for method in ("platt", "isotonic"):
        out = ColumnCalibrator(method).fit(f2, y2).predict(f2)
        np.testing.assert_allclose(out.sum(axis=1), 1.0)
    f3 = rng.dirichlet([1, 1, 1], size=300)
    y3 = np.array([rng.choice(3, p=p) for p in f3])
    out = ColumnCalibrator("isotonic").fit(f3, y3).predict(f3)
    np.testing.assert_allclose(out.sum(axis=1), 1.0)
    assert (out >= 0).all()


def test_unknown_calibration_is_named():
    with pytest.raises(ValueError, match="calibration='sigmoid' is not known"):
        ColumnCalibrator("sigmoid")


def test_logistic_correction_is_friedmans_formula_for_two_classes():
    # SAMME weights w = 2 alpha; votes s_k = sum of w over steps voting k; F = sum alpha h
    alpha = np.array([0.3, 0.7, 0.2])
    h = np.array([1, -1, 1])  # votes for +, -, +
    F = (alpha * h).sum()
    votes = np.array([[2 * alpha[h == -1].sum(), 2 * alpha[h == 1].sum()]])
    expected = 1 / (1 + np.exp(-2 * F))
    np.testing.assert_allclose(logistic_correction(votes)[0, 1], expected)


def test_logistic_correction_of_a_perfect_learner_is_its_limit():
    # a learner with no training error has alpha = inf: the correction tends to 0/1 (its
    # limit as the weight grows), not the softmax of a finite weight of 1 (0.73)
    votes = np.array([[0.0, np.inf], [np.inf, 0.0], [0.4, 1.1]])
    out = logistic_correction(votes)
    np.testing.assert_array_equal(out[:2], [[0.0, 1.0], [1.0, 0.0]])
    for w in (10.0, 40.0):  # the finite weights approach the limit
        assert logistic_correction(np.array([[0.0, w]]))[0, 1] > 1 - 1e-4
    np.testing.assert_allclose(out[2], logistic_correction(votes[2:])[0])
    tied = logistic_correction(np.array([[np.inf, np.inf, 0.0]]))
    np.testing.assert_array_equal(tied, [[0.5, 0.5, 0.0]])


def test_calibrate_on_hillclimb_fits_each_member_on_all_its_hillclimb_rows():
    from ensel.calibration import calibrate_on_hillclimb

    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 300)
    P_hill = np.clip(np.stack([0.3 + 0.4 * y, 1 - (0.3 + 0.4 * y)]), 0, 1)
    P_hill = np.clip(P_hill + rng.normal(0, 0.2, P_hill.shape), 0.01, 0.99)
    P_test = rng.uniform(0.01, 0.99, (2, 50))
    hill, test = calibrate_on_hillclimb(P_hill, y, P_test)
    for m in range(2):  # the same sigmoid as one Platt fit on the member's hillclimb rows
        cal = PlattCalibrator().fit(P_hill[m], y)
        np.testing.assert_allclose(hill[m], cal.predict(P_hill[m]), atol=1e-12)
        np.testing.assert_allclose(test[m], cal.predict(P_test[m]), atol=1e-12)
    # fitted in-sample, Platt's sigmoid turns the inverted member around (a negative slope)
    assert np.corrcoef(P_hill[1], y)[0, 1] < 0 < np.corrcoef(hill[1], y)[0, 1]


def test_calibrate_on_hillclimb_multiclass_rows_sum_to_one_and_bad_shapes_are_named():
    from ensel.calibration import calibrate_on_hillclimb

    rng = np.random.default_rng(4)
    P = rng.dirichlet(np.ones(3), size=(2, 90))
    hill, test = calibrate_on_hillclimb(P, rng.integers(0, 3, 90), P[:, :10])
    np.testing.assert_allclose(hill.sum(axis=2), 1.0)
    np.testing.assert_allclose(test, hill[:, :10])
    with pytest.raises(ValueError, match="same number of members"):
        calibrate_on_hillclimb(P, np.zeros(90), P[:1])
