"""What every extrapolation-risk detector shares: one encoding of numeric and categorical
columns into a box, input checks, and the fit/risk contract (risk in [0, 1], higher = riskier).

Categorical columns are encoded as ``code + 0.5`` on ``[0, K)``, so one axis-aligned box holds
both kinds of column and a categorical cell's volume fraction is the fraction of categories it
holds (Hooker 2004, §3): a split of a categorical axis is a threshold at an integer. A category
never seen in training encodes as ``K + 0.5``, outside the box. Missing values stay NaN and each
detector handles them (CERT sends them down both branches, C4.5 style).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from ..data import Columns, as_frame, named, select_columns

__all__ = ["DETECTORS", "Detector", "FeatureSpace", "get_detector", "load_all", "register"]

DETECTORS: dict[str, type[Detector]] = {}
"""Registered detector classes by short name (``"cert_forest"``, ``"box"``, ...)."""


def register(name: str):
    """Class decorator: make a detector findable by ``name`` (spec files use these names)."""

    def decorate(cls: type[Detector]) -> type[Detector]:
        if name in DETECTORS:
            raise ValueError(f"detector {name!r} is registered twice")
        cls.name = name
        DETECTORS[name] = cls
        return cls

    return decorate


def load_all() -> None:
    """Import every detector module of this package so that each registers its detectors."""
    package = __name__.rpartition(".")[0]
    for m in pkgutil.iter_modules([str(Path(__file__).parent)]):
        if not m.name.startswith("_"):
            importlib.import_module(f"{package}.{m.name}")


def get_detector(name: str) -> type[Detector]:
    """The detector class registered as ``name``; a ValueError lists the valid names."""
    load_all()
    try:
        return DETECTORS[name]
    except KeyError:
        raise ValueError(
            f"unknown detector {name!r}; valid detectors are {sorted(DETECTORS)}"
        ) from None


@dataclass(frozen=True)
class FeatureSpace:
    """The columns a detector was fitted on and the box that bounds them.

    ``low``/``high`` are per encoded column: the numeric training range (or the user's known
    ``bounds``) and ``[0, K)`` for a categorical column with K training categories."""

    names: tuple[str, ...]
    categorical: np.ndarray  # bool per column
    categories: tuple[tuple[str, ...] | None, ...]  # per column; None for numeric
    low: np.ndarray
    high: np.ndarray
    from_array: bool  # fitted on an ndarray: predict-time input is checked by width only

    @property
    def n_features(self) -> int:
        return len(self.names)

    @property
    def width(self) -> np.ndarray:
        return self.high - self.low

    @classmethod
    def fit(cls, X, bounds=None) -> tuple[FeatureSpace, np.ndarray]:
        """The space of training data ``X`` and ``X`` encoded in it. ``bounds=(low, high)`` gives
        known ranges of the numeric columns (arrays of length n_numeric, in column order)."""
        from_array = not isinstance(X, pd.DataFrame)
        frame = as_frame(X)
        _check_frame(frame)
        cols = Columns.infer(frame)
        kinds = {
            c: tuple(map(str, cats))
            for c, cats in zip(cols.categorical, cols.categories, strict=True)
        }
        names = tuple(frame.columns)
        categorical = np.array([c in kinds for c in names])
        categories = tuple(kinds.get(c) for c in names)
        Z = _encode(frame, names, categories)
        with np.errstate(all="ignore"), _quiet_nan():
            low = np.where(categorical, 0.0, np.nanmin(Z, axis=0))
            high = np.where(categorical, [len(c or ()) for c in categories], np.nanmax(Z, axis=0))
        numeric = ~categorical
        if bounds is not None:
            low, high = _apply_bounds(bounds, low, high, numeric, Z)
        # An all-missing numeric column has no range; a constant one gets a unit-wide box so
        # that volumes stay positive.
        low = np.where(np.isnan(low), 0.0, low)
        high = np.where(np.isnan(high), 1.0, high)
        flat = high <= low
        low, high = np.where(flat, low - 0.5, low), np.where(flat, high + 0.5, high)
        space = cls(
            names, categorical, categories, low.astype(float), high.astype(float), from_array
        )
        return space, Z

    def transform(self, X) -> np.ndarray:
        """``X`` encoded in this space; a clear error for a wrong column count, missing columns
        or infinities. Unseen categories encode outside the box."""
        if self.from_array:
            X = named(X, self.names, who="the detector")
        frame = select_columns(as_frame(X), list(self.names))
        _check_frame(frame)
        return _encode(frame, self.names, self.categories)

    def outside(self, Z: np.ndarray) -> np.ndarray:
        """Rows with any known coordinate outside the box (missing coordinates never count)."""
        with np.errstate(invalid="ignore"):
            return ((Z < self.low) | (Z > self.high)).any(axis=1)

    def uniform(self, n: int, random_state=None) -> np.ndarray:
        """``n`` points drawn uniformly from the box (categorical columns at category centres)."""
        rng = np.random.default_rng(random_state)
        Z = self.low + rng.random((n, self.n_features)) * self.width
        cat = self.categorical
        Z[:, cat] = np.floor(Z[:, cat]) + 0.5
        return Z

    def decode(self, Z: np.ndarray) -> pd.DataFrame:
        """Encoded rows back as a DataFrame of this space's columns (categorical codes become
        their categories), e.g. to hand uniform background points to any detector."""
        out = {}
        for j, (name, cats) in enumerate(zip(self.names, self.categories, strict=True)):
            if cats is None:
                out[name] = Z[:, j]
            else:
                codes = np.clip(np.floor(Z[:, j]), 0, len(cats) - 1).astype(int)
                out[name] = np.asarray(cats, dtype=object)[codes]
        return pd.DataFrame(out)


def _check_frame(frame: pd.DataFrame) -> None:
    if frame.shape[0] == 0 or frame.shape[1] == 0:
        raise ValueError(f"X is empty (shape={frame.shape}); a detector needs rows and columns")
    numeric = [c for c in frame.columns if pd.api.types.is_numeric_dtype(frame[c])]
    numeric = [c for c in numeric if not pd.api.types.is_bool_dtype(frame[c])]
    bad = [c for c in numeric if np.isinf(frame[c].to_numpy(float)).any()]
    if bad:
        raise ValueError(
            f"X has infinite values in column(s) {bad[:10]}; replace them (NaN marks missing)"
        )


def _encode(frame: pd.DataFrame, names, categories) -> np.ndarray:
    Z = np.empty(frame.shape, dtype=float)
    for j, (name, cats) in enumerate(zip(names, categories, strict=True)):
        col = frame[name]
        if cats is None:
            try:
                Z[:, j] = pd.to_numeric(col).to_numpy(float)
            except (TypeError, ValueError):
                raise ValueError(
                    f"column {name!r} was numeric in training but holds non-numbers now"
                ) from None
            continue
        codes = pd.Index(cats).get_indexer(col.astype(str))
        Z[:, j] = np.where(codes < 0, len(cats), codes) + 0.5  # unseen: outside the box
        Z[col.isna().to_numpy(), j] = np.nan
    return Z


def _apply_bounds(bounds, low, high, numeric, Z):
    try:
        lo, hi = (np.asarray(b, dtype=float).ravel() for b in bounds)
    except (TypeError, ValueError):
        raise ValueError("bounds must be a pair (low, high) of arrays of numbers") from None
    n_num = int(numeric.sum())
    if lo.size != n_num or hi.size != n_num:
        raise ValueError(
            f"bounds must give {n_num} values each (one per numeric column); got "
            f"{lo.size} and {hi.size}"
        )
    if not (np.isfinite(lo).all() and np.isfinite(hi).all()) or (hi < lo).any():
        raise ValueError("bounds must be finite with low <= high in every column")
    low, high = low.copy(), high.copy()
    low[numeric], high[numeric] = lo, hi
    return low, high


class _quiet_nan:
    """Silence numpy's all-NaN-slice warning (an all-missing column is handled afterwards)."""

    def __enter__(self):
        import warnings

        self._ctx = warnings.catch_warnings()
        self._ctx.__enter__()
        warnings.simplefilter("ignore", RuntimeWarning)

    def __exit__(self, *exc):
        self._ctx.__exit__(*exc)


class Detector(BaseEstimator):
    """Base of every detector. Subclasses implement ``_fit(Z, y)`` and ``_risk(Z)`` on encoded
    rows (see FeatureSpace) and set the class attributes below.

    ``fit(X, y=None)`` checks and encodes X (a DataFrame or array; numeric, categorical,
    boolean and string columns; NaN marks a missing value) and ``risk(X)`` returns an array in
    [0, 1], higher = more extrapolation risk. Rows outside the training box get risk 1 when the
    detector defines risk so (``one_outside_box``)."""

    name: ClassVar[str] = ""
    requires_y: ClassVar[bool] = False  # builtin detectors (margin, FDR, open set) need labels
    one_outside_box: ClassVar[bool] = False
    test_params: ClassVar[Mapping[str, Any]] = {}  # small and fast, for the contract tests
    bounds = None
    """The box the detector's space spans (None: the data's range, widened); a detector that
    takes ``bounds`` as a parameter sets it in ``__init__``."""

    def fit(self, X, y=None):
        self.space_, Z = FeatureSpace.fit(X, self.bounds)
        self.n_features_in_ = self.space_.n_features
        if self.requires_y:
            self.classes_, y = _check_labels(y, Z.shape[0], type(self).__name__)
        elif y is not None and len(y) != Z.shape[0]:
            raise ValueError(f"X has {Z.shape[0]} rows but y has {len(y)}; they must match")
        self._fit(Z, y)
        return self

    def risk(self, X) -> np.ndarray:
        """Extrapolation risk of each row of X, in [0, 1]."""
        check_is_fitted(self, "space_")
        Z = self.space_.transform(X)
        r = np.clip(np.asarray(self._risk(Z), dtype=float), 0.0, 1.0)
        if self.one_outside_box:
            r[self.space_.outside(Z)] = 1.0
        return r

    def _fit(self, Z: np.ndarray, y: np.ndarray | None) -> None:
        raise NotImplementedError

    def _risk(self, Z: np.ndarray) -> np.ndarray:
        raise NotImplementedError


def _check_labels(y, n: int, who: str) -> tuple[np.ndarray, np.ndarray]:
    """The classes and each row's class index."""
    if y is None:
        raise ValueError(f"{who} is a builtin detector: fit(X, y) needs the class labels y")
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != n:
        raise ValueError(f"X has {n} rows but y has shape {y.shape}; pass one label per row")
    if pd.isna(y).any():
        raise ValueError("y has missing labels; drop those rows first")
    classes, codes = np.unique(y.astype(str) if y.dtype == object else y, return_inverse=True)
    if classes.size < 2:
        raise ValueError(f"y has a single class ({classes[0]!r}); a detector needs at least two")
    return classes, codes
