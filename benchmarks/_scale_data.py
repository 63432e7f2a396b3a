"""Synthetic large tables for the scale benchmarks: numeric and categorical columns (one with
thousands of levels), missing cells and a non-linear signal, at any number of rows.

The label is drawn from a logistic model over interactions, thresholds and a smooth function of
the numeric columns plus per-level effects of the categorical ones, so that no single family
(linear, trees, neighbours) captures it alone, and the Bayes rate is well short of perfect.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["make_table"]

N_NUMERIC = 16
CATEGORICAL_LEVELS = (6_000, 200, 30, 12, 5, 3)
"""Levels of the categorical columns; the first is the high-cardinality one."""
MISSING = 0.10
"""Share of the feature cells blanked at random (in every column)."""


def make_table(
    n_rows: int, random_state: int = 0, missing: float = MISSING
) -> tuple[pd.DataFrame, pd.Series]:
    """``(X, y)``: ``n_rows`` rows of 16 numeric and 6 categorical columns (levels
    ``CATEGORICAL_LEVELS``, the first with 6,000, of which over 4,000 occur in 100,000 rows),
    ``missing`` of the cells blanked, and a binary label (about half positive) from a
    non-linear signal. The concept (level effects, popularity of levels) is fixed, so tables
    of different sizes and seeds share it; ``random_state`` draws the rows."""
    concept = np.random.default_rng(12345)
    rng = np.random.default_rng(random_state)
    cov = 0.3 * np.ones((N_NUMERIC, N_NUMERIC)) + 0.7 * np.eye(N_NUMERIC)
    Z = rng.multivariate_normal(np.zeros(N_NUMERIC), cov, size=n_rows, method="cholesky")
    Z[:, 12:] = np.exp(Z[:, 12:] / 2)  # a few skewed columns
    effects = [concept.normal(0, 0.8 if k < 1000 else 1.0, k) for k in CATEGORICAL_LEVELS]
    popularity = [
        concept.dirichlet(np.full(k, 1.0 if k > 100 else 2.0)) for k in CATEGORICAL_LEVELS
    ]
    codes = [
        rng.choice(k, size=n_rows, p=p) for k, p in zip(CATEGORICAL_LEVELS, popularity, strict=True)
    ]
    logit = (
        1.2 * np.sin(1.5 * Z[:, 0]) * Z[:, 1]
        + 0.8 * (Z[:, 2] > 0.5) * (Z[:, 3] < 0.0)
        - 0.6 * Z[:, 4] ** 2
        + 0.5 * Z[:, 5]
        - 0.4 * np.abs(Z[:, 6] - Z[:, 7])
        + 0.3 * np.log1p(Z[:, 12])
        + 0.9 * np.tanh(Z[:, 8] * Z[:, 9])
        + sum(e[c] for e, c in zip(effects, codes, strict=True)) * 0.6
        + 0.7 * (codes[4] == 2) * Z[:, 10]
        - 0.2
    )
    y = (rng.random(n_rows) < 1 / (1 + np.exp(-logit))).astype(np.int64)
    X = pd.DataFrame({f"x{j}": Z[:, j] for j in range(N_NUMERIC)})
    for j, (k, c) in enumerate(zip(CATEGORICAL_LEVELS, codes, strict=True)):
        X[f"c{j}"] = pd.Categorical.from_codes(c, [f"l{i}" for i in range(k)])
    if missing:
        blank = rng.random(X.shape) < missing
        for j, col in enumerate(X.columns):
            X.loc[blank[:, j], col] = np.nan
    return X, pd.Series(y, name="y")
