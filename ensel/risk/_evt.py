"""Extreme-value tail models for many samples at once: two-parameter Weibull maximum-likelihood
fits (location 0) of the rows of a NaN-padded matrix, and their log survival function. The
open-set forest fits two of these at every tree node (Steele, "Open Set Forests", §II-A)."""

from __future__ import annotations

import numpy as np

__all__ = ["fit_weibull", "weibull_log_survival"]

SHAPE_BOUNDS = (1e-2, 1e3)
"""Search interval of the shape parameter; tails of (near-)equal values take the upper end."""
_ITERATIONS = 100  # at most; safeguarded Newton usually converges in under ten


def fit_weibull(samples: np.ndarray, min_count: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """Maximum-likelihood Weibull ``(shape, scale)`` of each row of ``samples`` (positive values,
    NaN = padding), as ``scipy.stats.weibull_min.fit(row, floc=0)`` would return them.

    The shape ``k`` solves ``sum(x**k ln x) / sum(x**k) - 1/k - mean(ln x) = 0`` (increasing in
    ``k``) by Newton's method on ``log k``, safeguarded by bisection and started at the
    moment estimate ``pi / (sqrt(6) * std(ln x))``, for all rows together;
    ``scale = mean(x**k)**(1/k)``. Rows are divided by their maximum first (the equation is
    scale-free), so ``x**k`` never overflows. Rows with fewer than ``min_count`` values get NaN."""
    x = np.asarray(samples, dtype=float)
    if x.ndim != 2:
        raise ValueError(f"samples must be a 2-D array (rows of tail values); got {x.shape}")
    valid = np.isfinite(x)
    count = valid.sum(axis=1)
    if (x[valid] <= 0).any():
        raise ValueError("Weibull tail values must be positive")
    top = np.where(count > 0, np.where(valid, x, -np.inf).max(axis=1, initial=-np.inf), 1.0)
    logx = np.where(valid, np.log(np.where(valid, x, 1.0) / top[:, None]), 0.0)
    n = np.maximum(count, 1)
    mean_log = logx.sum(axis=1) / n
    spread = np.sqrt(np.maximum((logx**2).sum(axis=1) / n - mean_log**2, 0.0))
    lo = np.full(x.shape[0], np.log(SHAPE_BOUNDS[0]))
    hi = np.full(x.shape[0], np.log(SHAPE_BOUNDS[1]))
    with np.errstate(divide="ignore"):
        u = np.clip(np.log(np.pi / np.sqrt(6.0) / spread), lo, hi)
    for _ in range(_ITERATIONS):
        k = np.exp(u)
        w = np.where(valid, np.exp(k[:, None] * logx), 0.0)  # (x / top)**k in (0, 1]
        s0 = w.sum(axis=1)
        m1 = (w * logx).sum(axis=1) / s0
        m2 = (w * logx**2).sum(axis=1) / s0
        excess = m1 - 1.0 / k - mean_log
        slope = k * np.maximum(m2 - m1**2, 0.0) + 1.0 / k  # d excess / d log k > 0
        hi = np.where(excess > 0, u, hi)
        lo = np.where(excess > 0, lo, u)
        step = u - excess / slope
        inside = (step >= lo) & (step <= hi)
        new = np.where(inside, step, 0.5 * (lo + hi))
        done = np.abs(new - u).max(initial=0.0) < 1e-9
        u = new
        if done:
            break
    shape = np.exp(u)
    w = np.where(valid, np.exp(shape[:, None] * logx), 0.0)
    scale = top * (w.sum(axis=1) / n) ** (1.0 / shape)
    bad = count < max(min_count, 1)
    return np.where(bad, np.nan, shape), np.where(bad, np.nan, scale)


def weibull_log_survival(x: np.ndarray, shape: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """``log P(T > x) = -(x / scale)**shape`` for ``x >= 0`` (0 for ``x <= 0``), elementwise;
    computed in logs so that far tails stay finite and comparable. NaN where ``x`` or a
    parameter is NaN (no model)."""
    x = np.asarray(x, dtype=float)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        ratio = np.maximum(x, 0.0) / scale
        out = -np.exp(shape * np.log(ratio))
    out = np.where(x <= 0, 0.0, np.maximum(out, -1e300))
    return np.where(np.isnan(shape) | np.isnan(scale) | np.isnan(x), np.nan, out)
