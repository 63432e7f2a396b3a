"""The feature-engineered view ``te`` for boosted trees: the native view plus out-of-fold target
encoding of each categorical column, its count encoding, and arithmetic crosses of the numeric
columns most correlated with the target.

Target encoding replaces a category by the smoothed mean of the target over the training rows of
that category, ``(sum + m * prior) / (count + m)`` with ``m = SMOOTHING`` (Micci-Barreca 2001):
one column per class for multiclass (the positive class only for binary), the mean for
regression. It is fitted on a fold's training rows only (as every view), and the training rows'
own encodings come from an inner ``INNER_FOLDS``-fold split of those rows, so no row is encoded
with its own label (CatBoost's ordered target statistics solve the same leak; Prokhorenkova et
al. 2018, §3). A missing category is a level of its own; a category never seen in training gets
the prior. Count encoding (a level's share of the training rows) uses no label. The crosses
(``a * b``, ``a - b``, ``a / b`` of the ``TOP_NUMERIC`` numeric columns with the largest absolute
correlation with the target on the training rows) give trees the interactions and ratios they
cannot split on directly.
"""

from __future__ import annotations

import itertools
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ...data import Columns
from .base import VIEW_KINDS, View, _categories, _text

__all__ = ["INNER_FOLDS", "SMOOTHING", "TOP_NUMERIC", "TargetEncodedView"]

SMOOTHING = 10.0
"""Prior weight ``m``, in rows: a level seen in ``m`` rows is encoded halfway to the prior."""
INNER_FOLDS = 5
"""Inner folds that encode the training rows out of fold."""
TOP_NUMERIC = 3
"""Numeric columns crossed pairwise (product, difference, ratio)."""
MISSING = "\x00missing"
"""The level a missing categorical cell is encoded as."""


@dataclass
class TargetEncodedView:
    """The ``te`` view (see the module docstring). ``fit_transform(X, y, n_classes)`` fits it
    on a fold's training rows and returns their out-of-fold matrix; ``transform`` encodes other
    rows with the statistics of every training row. ``n_classes=0``: a real target."""

    columns: Columns
    native_missing: bool = False
    kind: str = "te"
    base: View | None = None
    prior: np.ndarray = field(default_factory=lambda: np.zeros(0))
    tables: list = field(default_factory=list)  # per categorical: DataFrame level -> encodings
    crossed: list = field(default_factory=list)  # (i, j) positions in the numeric block

    def fit(self, X: pd.DataFrame, y=None, n_classes: int = 0) -> TargetEncodedView:
        self.fit_transform(X, y, n_classes)
        return self

    def fit_transform(self, X: pd.DataFrame, y, n_classes: int = 0) -> np.ndarray:
        """Fit on ``X, y`` (a fold's training rows) and return their matrix, each row's target
        encodings computed without its own label."""
        if y is None:
            raise ValueError("the 'te' view is fitted with the labels: pass y to fit_transform")
        targets = _targets(np.asarray(y), n_classes)
        self.base = View("native", self.columns, self.native_missing).fit(X)
        base = self.base.transform(X)
        self.prior = targets.mean(axis=0) if len(targets) else np.zeros(targets.shape[1])
        levels = [_levels(X[name]) for name in self.columns.categorical]
        self.tables = [_table(lv, targets, self.prior) for lv in levels]
        self.crossed = _top_pairs(base[:, : len(self.columns.numeric)], targets)
        encoded = np.empty((len(X), targets.shape[1] * len(levels)))
        folds = np.random.default_rng(0).permutation(len(X)) % INNER_FOLDS
        for k in range(min(INNER_FOLDS, len(X))):
            inner, rows = folds != k, folds == k
            prior = targets[inner].mean(axis=0) if inner.any() else self.prior
            encoded[rows] = np.hstack(
                [
                    _encode(_table(lv[inner], targets[inner], prior), lv[rows], prior)
                    for lv in levels
                ]
                or [np.zeros((int(rows.sum()), 0))]
            )
        return self._assemble(base, encoded, levels)

    def transform(self, X: pd.DataFrame) -> np.ndarray:
        """The matrix of rows outside the training rows (every training row's statistics)."""
        base = self.base.transform(X)
        levels = [_levels(X[name]) for name in self.columns.categorical]
        blocks = [_encode(t, lv, self.prior) for t, lv in zip(self.tables, levels, strict=True)]
        encoded = np.hstack(blocks) if blocks else np.zeros((len(X), 0))
        return self._assemble(base, encoded, levels)

    def _assemble(self, base: np.ndarray, encoded: np.ndarray, levels: list) -> np.ndarray:
        counts = [
            t["share"].reindex(lv).fillna(0.0).to_numpy()[:, None]
            for t, lv in zip(self.tables, levels, strict=True)
        ]
        numeric = base[:, : len(self.columns.numeric)]
        crosses = []
        with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            for i, j in self.crossed:
                a, b = numeric[:, i], numeric[:, j]
                ratio = np.where(b != 0, a / np.where(b != 0, b, 1.0), np.nan)
                crosses.append(np.column_stack([a * b, a - b, ratio]))
        return np.hstack([base, encoded, *counts, *crosses]).astype(np.float64, copy=False)


VIEW_KINDS["te"] = TargetEncodedView


def _targets(y: np.ndarray, n_classes: int) -> np.ndarray:
    """What is averaged per level: the positive class (binary), one indicator per class
    (multiclass) or the real target (``n_classes=0``)."""
    if n_classes == 0:
        return y.astype(np.float64).reshape(-1, 1)
    codes = y.astype(int)
    if n_classes <= 2:
        return (codes == 1).astype(np.float64).reshape(-1, 1)
    return (codes[:, None] == np.arange(n_classes)).astype(np.float64)


def _levels(col: pd.Series) -> np.ndarray:
    """A categorical column's levels as strings, missing as a level of its own."""
    coded = _categories(col)
    if coded is None:
        return _text(col).fillna(MISSING).to_numpy(dtype=object)
    codes, categories = coded
    return np.array([*categories, MISSING], dtype=object)[codes]  # code -1 (missing): last


def _table(levels: np.ndarray, targets: np.ndarray, prior: np.ndarray) -> pd.DataFrame:
    """Per level: its smoothed target means (columns ``0..T-1``) and its share of the rows."""
    frame = pd.DataFrame(targets, index=pd.Index(levels, dtype=object))
    grouped = frame.groupby(level=0, sort=False)
    sums, count = grouped.sum(), grouped.size()
    table = (sums + SMOOTHING * prior) / (count.to_numpy()[:, None] + SMOOTHING)
    table["share"] = count / max(len(levels), 1)
    return table


def _encode(table: pd.DataFrame, levels: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """The encodings of ``levels`` by ``table``; a level it has not seen gets ``prior``."""
    means = table.drop(columns="share").reindex(pd.Index(levels, dtype=object)).to_numpy()
    missing = np.isnan(means)
    return np.where(missing, np.broadcast_to(prior, means.shape), means)


def _top_pairs(numeric: np.ndarray, targets: np.ndarray) -> list[tuple[int, int]]:
    """Pairs of the ``TOP_NUMERIC`` numeric columns most correlated with the target (absolute
    Pearson correlation, the largest over the target's columns; a missing cell counts as its
    column's mean), in one matrix product however wide the table."""
    if numeric.shape[1] < 2 or len(numeric) < 3:
        return []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-missing column
        mean = np.nan_to_num(np.nanmean(numeric, axis=0))
    x = np.where(np.isnan(numeric), mean, numeric) - mean
    t = targets - targets.mean(axis=0)
    sx, st = x.std(axis=0), t.std(axis=0)
    cov = x.T @ t / len(x)
    scale = np.outer(sx, st)
    corr = np.abs(np.divide(cov, scale, out=np.zeros_like(cov), where=scale > 0))
    scores = corr.max(axis=1)
    top = sorted(np.argsort(-scores, kind="stable")[:TOP_NUMERIC].tolist())
    return list(itertools.combinations(top, 2))
