"""The mimic net's input encoding: numeric columns standardised, categorical columns one-hot
(an unseen category is an all-zero block). The same arithmetic is written into the ONNX graph
(export.py), so raw rows go in on both paths.

Missing values: a missing numeric cell becomes the training mean (0 once standardised), and
every numeric column that had a missing cell in training adds a 0/1 missing-indicator input; a
missing categorical cell (NaN, None or the empty string) is a one-hot level of its own when
training had one in that column, else an all-zero block (like an unseen category)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..data import (
    Columns,
    as_frame,
    check_columns,
    check_features,
    coerce_numeric_text,
    named,
)

__all__ = ["MISSING_TEXT", "Encoding"]

MISSING_TEXT = ""
"""How a missing categorical cell is written in the string input of the exported ONNX graph."""


def _text(col: pd.Series) -> pd.Series:
    """Categorical cells as strings, missing ones (NaN, None, "") as ``MISSING_TEXT``."""
    text = col.astype(object).where(col.notna()).map(str, na_action="ignore")
    return text.fillna(MISSING_TEXT)


@dataclass(frozen=True)
class Encoding:
    """Column names in training order, the standardisation of the numeric ones, which of them
    get a missing indicator (positions among the numeric columns), and the categories (as
    strings) of the categorical ones, with whether missing is a level of its own."""

    columns: tuple[str, ...]
    numeric: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    categorical: tuple[str, ...]
    categories: tuple[tuple[str, ...], ...]
    from_array: bool
    indicators: tuple[int, ...] = ()
    missing_level: tuple[bool, ...] = ()

    @classmethod
    def fit(cls, X) -> Encoding:
        """The encoding of training data ``X`` (checked: not empty, no infinities; numeric
        columns with stray text tokens are read as numbers, the tokens missing)."""
        frame = coerce_numeric_text(as_frame(X))
        check_features(frame)
        cols = Columns.infer(frame)
        numeric = frame[list(cols.numeric)].to_numpy(np.float64, na_value=np.nan)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # an all-missing column
            mean = np.nanmean(numeric, axis=0) if numeric.size else np.zeros(numeric.shape[1])
            scale = np.nanstd(numeric, axis=0) if numeric.size else np.zeros(numeric.shape[1])
        categories, missing_level = [], []
        for name in cols.categorical:
            text = _text(frame[name])
            missing_level.append(bool((text == MISSING_TEXT).any()))
            categories.append(tuple(sorted(set(text) - {MISSING_TEXT})))
        return cls(
            columns=tuple(frame.columns),
            numeric=cols.numeric,
            mean=np.where(np.isnan(mean), 0.0, mean),
            scale=np.where(np.isfinite(scale) & (scale > 0), scale, 1.0),
            categorical=cols.categorical,
            categories=tuple(categories),
            from_array=not isinstance(X, pd.DataFrame),
            indicators=tuple(int(j) for j in np.flatnonzero(np.isnan(numeric).any(axis=0))),
            missing_level=tuple(missing_level),
        )

    @property
    def n_features(self) -> int:
        """Width of the encoded matrix (the net's input layer)."""
        blocks = sum(len(c) + int(m) for c, m in zip(self.categories, self._levels, strict=True))
        return len(self.numeric) + len(self.indicators) + blocks

    @property
    def _levels(self) -> tuple[bool, ...]:
        """Missing level per categorical column (encodings pickled before it existed: none)."""
        return self.missing_level or (False,) * len(self.categorical)

    def block_categories(self, j: int) -> tuple[str, ...]:
        """The strings of categorical column ``j``'s one-hot block, in order (the missing level,
        ``MISSING_TEXT``, last when training had missing cells there)."""
        return self.categories[j] + ((MISSING_TEXT,) if self._levels[j] else ())

    def frame(self, X) -> pd.DataFrame:
        """``X`` as a checked DataFrame of the training columns, in training order: a clear
        error for a wrong width, missing columns or infinities; a warning for unseen
        categories and for text in numeric columns."""
        frame = as_frame(named(X, self.columns, who="the mimic net") if self.from_array else X)
        known = {
            name: [*cats, MISSING_TEXT]
            for name, cats in zip(self.categorical, self.categories, strict=True)
        }
        frame = check_columns(frame, list(self.columns), known)
        check_features(frame)
        return frame

    def transform(self, X) -> np.ndarray:
        """The ``(n, n_features)`` float32 input of the net: standardised numeric columns (a
        missing cell at 0, the training mean), their missing indicators, then one one-hot block
        per categorical column."""
        frame = self.frame(X)
        out = np.zeros((len(frame), self.n_features), dtype=np.float32)
        k = len(self.numeric)
        if k:
            numeric = frame[list(self.numeric)].to_numpy(np.float64, na_value=np.nan)
            missing = np.isnan(numeric)
            out[:, :k] = np.where(missing, 0.0, (numeric - self.mean) / self.scale)
            if self.indicators:
                out[:, k : k + len(self.indicators)] = missing[:, list(self.indicators)]
                k += len(self.indicators)
        rows = np.arange(len(frame))
        for j, name in enumerate(self.categorical):
            cats = self.block_categories(j)
            codes = pd.Index(cats, dtype=object).get_indexer(_text(frame[name]))
            known = codes >= 0
            out[rows[known], k + codes[known]] = 1.0
            k += len(cats)
        return out
