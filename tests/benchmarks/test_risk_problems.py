"""The synthetic risk problems of the Sandia protocol: their true risk against closed forms, and
their sampler against their density (the benchmark's ground truth rests on both)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm

from benchmarks.risk_problems import (
    GaussianMixture,
    RidgeMixture,
    givens_rotations,
    grid_points,
    line_search_points,
    make_problem,
)


def _box_mass(mean, sd):
    return np.prod(norm.cdf((10 - mean) / sd) - norm.cdf((-10 - mean) / sd))


def test_one_gaussian_risk_matches_the_closed_form():
    mean, sd = np.array([7.0, -6.0]), np.array([2.0, 3.0])  # a fifth of its mass leaves the cube
    p = GaussianMixture(
        d=2,
        weights=np.ones(1),
        labels=np.zeros(1, int),
        seed=0,
        means=mean[None],
        factors=np.diag(sd)[None],
    )
    X = np.array([[7.0, -6.0], [0.0, 0.0], [9.5, -9.5], [-9.0, 9.0], [10.5, 0.0]])
    f = norm.pdf(X, mean, sd).prod(axis=1) / _box_mass(mean, sd)
    expected = np.where(np.abs(X).max(axis=1) <= 10, 1 / 400 / (1 / 400 + f), 1.0)
    np.testing.assert_allclose(p.true_risk(X), expected, atol=1e-3)
    assert np.exp(p.log_mass) == pytest.approx(_box_mass(mean, sd), abs=2e-3)


def test_unrotated_ridge_risk_matches_the_closed_form():
    p = RidgeMixture(
        d=3,
        weights=np.ones(1),
        labels=np.zeros(1, int),
        seed=0,
        axes=np.array([1]),
        centres=np.array([8.5]),
        sigmas=np.array([1.5]),
        rotation=np.eye(3),
    )
    X = np.array([[0.0, 8.5, 0.0], [-9.0, 4.0, 9.0], [3.0, -8.0, 1.0]])
    mass = norm.cdf(1.5 / 1.5) - norm.cdf(-18.5 / 1.5)
    f = norm.pdf(X[:, 1], 8.5, 1.5) / 400 / mass
    np.testing.assert_allclose(p.true_risk(X), (1 / 8000) / (1 / 8000 + f), atol=1e-3)


@pytest.mark.parametrize("kind", ["gaussian", "ridge"])
def test_sampler_draws_from_the_density(kind):
    """The density integrates to one over the cube, and the sample means of x and x^2 match
    their integrals against the density on a fine grid (z-score below 4.5; a density rotated
    the wrong way or a sampler with the wrong covariance scores 30 or more)."""
    p = make_problem(kind, 2, seed=1)
    X, _ = p.sample(200_000, random_state=0)
    G = grid_points(p, 400)
    f = np.exp(p.log_density(G)) * (20 / 400) ** 2
    assert f.sum() == pytest.approx(1.0, abs=5e-3)
    for H, HG in ((X, G), (X**2, G**2)):
        z = (H.mean(axis=0) - HG.T @ f) / (H.std(axis=0) / np.sqrt(len(H)))
        assert np.abs(z).max() < 4.5


def test_givens_rotations_are_orthogonal():
    R = givens_rotations(10, 3, np.random.default_rng(0))
    np.testing.assert_allclose(R @ R.T, np.eye(10), atol=1e-12)
    assert (np.abs(R - np.eye(10)) > 1e-6).any()


def test_test_points_span_the_risk_range():
    p = make_problem("gaussian", 5, seed=0)
    T = line_search_points(p, 300, random_state=0)
    r = p.true_risk(T)
    assert T.shape == (300, 5) and (np.abs(T) <= 10).all()
    counts = np.histogram(r, bins=5, range=(0, 1))[0]
    assert counts.min() > 30  # every fifth of [0, 1] is represented
    np.testing.assert_array_equal(T, line_search_points(p, 300, random_state=0))
    grid = grid_points(make_problem("ridge", 2, seed=0), 50)
    assert grid.shape == (2500, 2) and np.abs(grid).max() < 10


def test_a_search_that_ends_at_a_risk_jump_is_drawn_again():
    """On a rotated 10-D ridge mixture the risk steps to 1 where a point leaves the rotated
    support; bisection ends at such a step for about half the lines. Those searches have failed
    (no point of the segment has the target risk), so no returned point sits at risk 1 and the
    risks keep the spread of their uniform targets."""
    p = make_problem("ridge", 10, seed=0)
    r = p.true_risk(line_search_points(p, 400, random_state=0))
    assert (r > 0.999).mean() < 0.03  # a search that keeps jump points has about a fifth there
    assert np.quantile(r, 0.9) < 0.9


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="kind"):
        make_problem("spiral", 2, 0)
    with pytest.raises(ValueError, match="d must be"):
        make_problem("ridge", 1, 0)
    with pytest.raises(ValueError, match="d = 2 only"):
        grid_points(make_problem("ridge", 5, 0), 10)
