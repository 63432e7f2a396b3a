"""Synthetic libraries of cached predictions (classification and regression) that behave like
real ones, for tests, benchmarks and studies of selection itself."""

from __future__ import annotations

import numpy as np


def make_library(
    n_members: int = 60,
    n_samples: int = 400,
    n_classes: int = 2,
    random_state: int = 0,
    discrete: float = 0.3,
) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(P, y)``: P is (M, N) positive-class or (M, N, C) probabilities.

    Members differ in strength and noise and share one of four error patterns (so some are
    correlated); a ``discrete`` fraction gives coarse, tree-like outputs (multiples of 0.1, with
    many ties), as real libraries of trees and KNN do.
    """
    rng = np.random.default_rng(random_state)
    y = rng.integers(0, n_classes, n_samples)
    signal = rng.normal(0.0, 1.0, (n_samples, n_classes)) + 1.5 * np.eye(n_classes)[y]
    shared = rng.normal(0.0, 1.0, (4, n_samples, n_classes))
    strength = rng.uniform(0.1, 1.6, n_members)
    noise = rng.uniform(0.3, 1.5, n_members)
    P = np.empty((n_members, n_samples) if n_classes == 2 else (n_members, n_samples, n_classes))
    pattern = rng.integers(0, 4, n_members)
    coarse = rng.random(n_members) < discrete
    for m in range(n_members):  # one member at a time keeps memory at one (N, C) block
        logits = (
            strength[m] * signal
            + 0.5 * shared[pattern[m]]
            + noise[m] * rng.normal(0.0, 1.0, (n_samples, n_classes))
        )
        if n_classes == 2:
            p = 1.0 / (1.0 + np.exp(-(logits[:, 1] - logits[:, 0])))
        else:
            e = np.exp(logits - logits.max(axis=1, keepdims=True))
            p = e / e.sum(axis=1, keepdims=True)
        if coarse[m]:
            p = np.round(p * 10) / 10
            if n_classes > 2:
                p = p / np.maximum(p.sum(axis=1, keepdims=True), 1e-12)
        P[m] = p
    return P, y


def make_regression_library(
    n_members: int = 60,
    n_samples: int = 400,
    random_state: int = 0,
    discrete: float = 0.3,
    offset: float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(P, y)`` for regression: P is (M, N) real predictions of real targets y.

    Members differ in bias, shrinkage and noise and share one of four error patterns; a
    ``discrete`` fraction gives step-like outputs (rounded to a coarse grid), as trees do.
    ``offset`` moves targets and predictions together (a target far from 0).
    """
    rng = np.random.default_rng(random_state)
    y = rng.normal(0.0, 1.0, n_samples) + 0.5 * rng.standard_t(3, n_samples)
    shared = rng.normal(0.0, 1.0, (4, n_samples))
    shrink = rng.uniform(0.3, 1.0, n_members)
    bias = rng.normal(0.0, 0.2, n_members)
    noise = rng.uniform(0.2, 1.2, n_members)
    pattern = rng.integers(0, 4, n_members)
    coarse = rng.random(n_members) < discrete
    P = np.empty((n_members, n_samples))
    for m in range(n_members):
        p = shrink[m] * y + bias[m] + 0.4 * shared[pattern[m]]
        p = p + noise[m] * rng.normal(0.0, 1.0, n_samples)
        P[m] = np.round(p * 2) / 2 if coarse[m] else p
    return P + offset, y + offset
