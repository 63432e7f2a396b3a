"""Preprocessing views (App. 4.A): SVMs, neural nets, KNN and logistic regression see one-hot,
standardised features; trees and naive Bayes see the native features (categoricals as codes);
a run may choose ``view: te``, the native features plus target encodings for boosted trees
(:mod:`ensel.library.views.encoding`).
A view is fitted on a training fold only, so nothing it learns (medians, scales, frequent
levels) comes from the fold's hillclimb rows.

Missing values reach a family in one of two ways, chosen by its ``Family.native_missing``:

- ``native_missing=True`` (xgboost, lightgbm, scikit-learn's trees and forests): numeric NaN is
  passed through as NaN; in the native view a missing categorical cell is NaN too, in the
  standardised view it is a one-hot level of its own.
- ``native_missing=False`` (the others): each numeric column is imputed by its median on the
  fold's training rows, and a 0/1 missing-indicator column is added (after all other columns,
  so the native view's column indices stay those of ``runs.native_categorical``) for every
  numeric column that had a missing cell in those rows; a missing categorical cell is a level
  of its own (its own one-hot column, or the code after the known categories in the native
  view).

One-hot views keep a column's frequent levels (at least ``MIN_LEVEL_ROWS`` training rows, the
``MAX_LEVELS`` most frequent) and pool the rest, and categories never seen in training, into
one "other" column, so an id-like column or a zip code does not blow up the matrix. Native views
code every category (trees split on codes, whatever their number).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field, fields

import numpy as np
import pandas as pd

from ...data import Coded, Columns, Table

__all__ = ["MAX_LEVELS", "MIN_LEVEL_ROWS", "VIEW_KINDS", "View", "make_view", "transform"]

MAX_LEVELS = 32
"""One-hot views: at most this many levels of a categorical column keep a column of their own."""
MIN_LEVEL_ROWS = 5
"""One-hot views: a level seen in fewer training rows of the fold is pooled into "other"."""


def _text(col: pd.Series) -> pd.Series:
    """A categorical column as strings (the form categories are stored in), missing as NaN."""
    return col.astype(object).where(col.notna()).map(str, na_action="ignore")


@dataclass
class View:
    """The transformer from the raw DataFrame (the training columns) to the float64 matrix a
    family sees. ``kind``: ``"standardized"`` or ``"native"``; ``native_missing``: whether the
    family takes NaN as it is (see the module docstring)."""

    kind: str
    columns: Columns
    native_missing: bool = False
    # learned by fit, on the fold's training rows
    fill: np.ndarray = field(default_factory=lambda: np.zeros(0))  # median per numeric column
    indicators: np.ndarray = field(default_factory=lambda: np.zeros(0, int))  # numeric cols
    mean: np.ndarray = field(default_factory=lambda: np.zeros(0))
    scale: np.ndarray = field(default_factory=lambda: np.ones(0))
    levels: list = field(default_factory=list)  # per categorical column: kept levels (one-hot)
    pooled: list = field(default_factory=list)  # per categorical column: has an "other" column
    missing_level: list = field(default_factory=list)  # per column: missing has its own column
    # made on first use from the above: per categorical column, each level's position; and
    # the view's signature
    _positions: dict | None = field(default=None, init=False, repr=False, compare=False)
    _signature: tuple | None = field(default=None, init=False, repr=False, compare=False)

    def fit(self, X: pd.DataFrame) -> View:
        self._positions = self._signature = None
        numeric = _numeric(X, self.columns)
        if numeric.shape[1]:
            missing = np.isnan(numeric)
            if not self.native_missing:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)  # an all-missing column
                    fill = np.nanmedian(numeric, axis=0)
                self.fill = np.where(np.isnan(fill), 0.0, fill)
                self.indicators = np.flatnonzero(missing.any(axis=0))
                numeric = np.where(missing, self.fill, numeric)
            if self.kind == "standardized":
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    mean, sd = np.nanmean(numeric, axis=0), np.nanstd(numeric, axis=0)
                self.mean = np.where(np.isnan(mean), 0.0, mean)
                self.scale = np.where(np.isnan(sd) | (sd <= 0), 1.0, sd)
        if self.kind == "standardized":
            self.levels, self.pooled, self.missing_level = [], [], []
            for name in self.columns.categorical:
                counts, absent = _level_counts(X[name])
                frequent = counts[counts >= MIN_LEVEL_ROWS]
                top = sorted(zip(-frequent.to_numpy(), frequent.index, strict=True))[:MAX_LEVELS]
                kept = sorted((level for _, level in top), key=str)
                self.levels.append(kept)
                self.pooled.append(len(kept) < int((counts > 0).sum()))
                self.missing_level.append(absent)
        return self

    def fit_transform(self, X: pd.DataFrame, y=None, n_classes: int = 0) -> np.ndarray:
        """Fit on a fold's training rows and return their matrix (``y``, ``n_classes``: for
        views that learn from the labels, such as ``te``; this one does not)."""
        return self.fit(X).transform(X)

    def transform(self, X: pd.DataFrame) -> np.ndarray:
        n = len(X)
        numeric = _numeric(X, self.columns)
        missing = np.isnan(numeric)
        categorical = self.columns.categorical
        widths = [
            1
            if self.kind == "native"
            else len(self.levels[j]) + int(self.pooled[j]) + int(self.missing_level[j])
            for j in range(len(categorical))
        ]
        indicators = self.indicators if not self.native_missing else np.zeros(0, int)
        p = numeric.shape[1]
        # one matrix written in place: no block is copied again by a final hstack (on 80,000
        # rows of a 154-column one-hot view the hstack took 0.20 of its 0.98 s, profiled)
        out = np.zeros((n, p + sum(widths) + indicators.size))
        if p:
            if not self.native_missing:
                numeric = np.where(missing, self.fill, numeric)
            if self.kind == "standardized":
                numeric = (numeric - self.mean) / self.scale
            out[:, :p] = numeric
        at = p
        rows = np.arange(n)
        for j, name in enumerate(categorical):
            if self.kind == "native":
                positions = self.positions(j)
                codes, absent = _level_index(X[name], positions)
                column = codes.astype(np.float64)
                column[absent] = np.nan if self.native_missing else len(positions)
                out[:, at] = column
            else:
                kept = self.levels[j]
                codes, absent = _level_index(X[name], self.positions(j))
                hot = out[:, at : at + widths[j]]
                inside = codes >= 0
                hot[rows[inside], codes[inside]] = 1.0
                if self.pooled[j]:  # infrequent and unseen levels
                    hot[rows[~inside & ~absent], len(kept)] = 1.0
                if self.missing_level[j]:
                    hot[rows[absent], widths[j] - 1] = 1.0
            at += widths[j]
        if indicators.size:  # last: codes keep their index
            out[:, at:] = missing[:, indicators]
        return out

    def signature(self) -> tuple:
        """Every compared field of the view (all that :meth:`transform` reads), hashable, made
        once per fitted view: views of equal signatures give the same matrix on the same rows.
        Native views that pass missing values through learn nothing from their fold but what
        the columns hold, so the fold siblings of a library share one signature and a small
        batch transforms them once."""
        if self._signature is None:
            self._signature = tuple(
                _frozen(getattr(self, f.name)) for f in fields(self) if f.compare
            )
        return self._signature

    def positions(self, j: int) -> dict[str, int]:
        """Each level of categorical column ``j`` (as text) -> its code (native views: the
        training categories) or its one-hot column (the kept levels), made once per view: a
        call on a few rows would otherwise spend most of its time building these."""
        if self._positions is None:
            self._positions = {}
        if j not in self._positions:
            native = self.kind == "native"
            levels = self.columns.categories[j] if native else self.levels[j]
            self._positions[j] = {str(level): i for i, level in enumerate(levels)}
        return self._positions[j]


def _frozen(value):
    """``value`` hashable: an array as its dtype, shape and bytes, a list as a tuple."""
    if isinstance(value, np.ndarray):
        return value.dtype.str, value.shape, value.tobytes()
    if isinstance(value, list | tuple):
        return tuple(_frozen(v) for v in value)
    return value


def _categories(col: pd.Series | Coded) -> tuple[np.ndarray, list[str]] | None:
    """A categorical column's codes (-1: missing) and its categories as strings (a
    :class:`~ensel.data.Coded` column of a Table holds them already); None for a column of
    another dtype. Reading the codes makes a view's work per category, not per row: at a
    million rows turning every cell into a string took most of a view's seconds."""
    if isinstance(col, Coded):
        return col.codes, col.text
    if not isinstance(col.dtype, pd.CategoricalDtype):
        return None
    return col.cat.codes.to_numpy(), [str(c) for c in col.cat.categories]


def _level_index(col: pd.Series, positions: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
    """Each cell's position (``positions``: level text -> position; -1 where it is not one of
    them) and whether the cell is missing. A categorical column is looked up once per category,
    not per row."""
    coded = _categories(col)
    if coded is None:
        text = _text(col)
        levels = pd.Index(list(positions), dtype=object)
        return levels.get_indexer(text), text.isna().to_numpy()
    codes, categories = coded
    absent = codes < 0
    if not categories:
        return np.full(len(codes), -1), absent
    lookup = np.fromiter((positions.get(c, -1) for c in categories), np.int64, len(categories))
    return np.where(absent, -1, lookup[codes]), absent


def _level_counts(col: pd.Series) -> tuple[pd.Series, bool]:
    """Rows per level (strings) and whether any cell is missing."""
    coded = _categories(col)
    if coded is None:
        text = _text(col)
        return text.value_counts(dropna=True), bool(text.isna().any())
    codes, categories = coded
    absent = codes < 0
    counts = np.bincount(codes[~absent], minlength=len(categories))
    per_level = pd.Series(counts, index=pd.Index(categories, dtype=object))
    if per_level.index.has_duplicates:  # categories that read the same as text
        per_level = per_level.groupby(level=0, sort=False).sum()
    return per_level, bool(absent.any())


def _numeric(X: pd.DataFrame | Table, columns: Columns) -> np.ndarray:
    """The numeric columns of X as float64, in ``columns.numeric`` order (a
    :class:`~ensel.data.Table` has them read already)."""
    if not columns.numeric:
        return np.zeros((len(X), 0))
    if isinstance(X, Table):
        return X.numeric(columns.numeric)
    return X[list(columns.numeric)].to_numpy(dtype=np.float64, na_value=np.nan)


VIEW_KINDS: dict[str, Callable[[Columns, bool], View]] = {
    "standardized": lambda columns, native_missing: View("standardized", columns, native_missing),
    "native": lambda columns, native_missing: View("native", columns, native_missing),
}
"""View name -> factory ``(columns, native_missing) -> unfitted view``. ``te`` (the native view
plus out-of-fold target and count encodings and numeric crosses, for boosted trees) registers
itself here from :mod:`ensel.library.views.encoding`; it is fitted with the labels
(``fit_transform(X, y, n_classes)``)."""


def make_view(view: str, columns: Columns, native_missing: bool = False) -> View:
    """An unfitted view of ``view``'s kind for data with ``columns``; ``native_missing``: the
    family takes NaN as it is (else numeric cells are imputed plus missing indicators)."""
    if view not in VIEW_KINDS:
        raise ValueError(f"view={view!r} is not one of {tuple(VIEW_KINDS)}")
    return VIEW_KINDS[view](columns, native_missing)


def transform(view: View, X: pd.DataFrame | Table) -> np.ndarray:
    """Apply a fitted view: the float64 matrix the family sees. X: the checked DataFrame of the
    training columns, or the same rows as a :class:`~ensel.data.Table` (the small-batch path of
    :class:`~ensel.library.storage.members.FittedMembers`), which every view reads alike."""
    return view.transform(X)
