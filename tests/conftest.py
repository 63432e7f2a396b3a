"""Shared fixtures: synthetic libraries of cached predictions that look like real ones."""

from __future__ import annotations

import numpy as np
import pytest


def make_library(
    n_members: int = 60,
    n_samples: int = 400,
    n_classes: int = 2,
    seed: int = 0,
    discrete: float = 0.3,
):
    """Members of varied strength and correlation; a fraction gives coarse, tree-like outputs.

    Returns ``(P, y)`` with P (M, N) for binary or (M, N, C) for multiclass.
    """
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, n_samples)
    signal = rng.normal(0.0, 1.0, (n_samples, n_classes)) + 1.5 * np.eye(n_classes)[y]
    shared = rng.normal(0.0, 1.0, (4, n_samples, n_classes))
    strength = rng.uniform(0.1, 1.6, n_members)
    noise = rng.uniform(0.3, 1.5, n_members)
    logits = (
        strength[:, None, None] * signal
        + 0.5 * shared[rng.integers(0, 4, n_members)]
        + noise[:, None, None] * rng.normal(0.0, 1.0, (n_members, n_samples, n_classes))
    )
    if n_classes == 2:
        P = 1.0 / (1.0 + np.exp(-(logits[..., 1] - logits[..., 0])))
    else:
        e = np.exp(logits - logits.max(axis=2, keepdims=True))
        P = e / e.sum(axis=2, keepdims=True)
    coarse = rng.random(n_members) < discrete
    P[coarse] = np.round(P[coarse] * 10) / 10  # tree-like members: few distinct values, ties
    if n_classes > 2:
        P[coarse] /= np.maximum(P[coarse].sum(axis=2, keepdims=True), 1e-12)
        P[coarse] = np.clip(P[coarse], 0.0, 1.0)
    return P, y


@pytest.fixture
def binary_library():
    return make_library()


@pytest.fixture
def multiclass_library():
    return make_library(n_members=40, n_samples=300, n_classes=3, seed=1)
