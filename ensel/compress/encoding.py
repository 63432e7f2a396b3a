"""The mimic net's input encoding: numeric columns standardised, categorical columns one-hot
(an unseen category is an all-zero block). The same arithmetic is written into the ONNX graph
(export.py), so raw rows go in on both paths."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..data import Columns, as_frame, check_columns, check_features

__all__ = ["Encoding"]


@dataclass(frozen=True)
class Encoding:
    """Column names in training order, the standardisation of the numeric ones and the
    categories (as strings) of the categorical ones."""

    columns: tuple[str, ...]
    numeric: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    categorical: tuple[str, ...]
    categories: tuple[tuple[str, ...], ...]
    from_array: bool

    @classmethod
    def fit(cls, X) -> Encoding:
        """The encoding of training data ``X`` (checked: no NaN, no infinities, not empty)."""
        frame = as_frame(X)
        check_features(frame)
        cols = Columns.infer(frame)
        numeric = frame[list(cols.numeric)].to_numpy(np.float64)
        scale = numeric.std(axis=0) if numeric.size else np.zeros(0)
        return cls(
            columns=tuple(frame.columns),
            numeric=cols.numeric,
            mean=numeric.mean(axis=0) if numeric.size else np.zeros(0),
            scale=np.where(scale > 0, scale, 1.0),
            categorical=cols.categorical,
            categories=tuple(tuple(map(str, c)) for c in cols.categories),
            from_array=not isinstance(X, pd.DataFrame),
        )

    @property
    def n_features(self) -> int:
        """Width of the encoded matrix (the net's input layer)."""
        return len(self.numeric) + sum(len(c) for c in self.categories)

    def frame(self, X) -> pd.DataFrame:
        """``X`` as a checked DataFrame of the training columns, in training order: a clear
        error for a wrong width, missing columns, NaN or infinities; a warning for unseen
        categories."""
        if self.from_array and not isinstance(X, pd.DataFrame):
            arr = np.asarray(X)
            width = arr.shape[1] if arr.ndim == 2 else None
            if width != len(self.columns):
                raise ValueError(
                    f"X has shape {arr.shape}, but the mimic was trained on "
                    f"{len(self.columns)} columns; pass rows with the same columns in order"
                )
        frame = as_frame(X)
        if self.from_array and not isinstance(X, pd.DataFrame):
            frame.columns = list(self.columns)
        known = dict(zip(self.categorical, map(list, self.categories), strict=True))
        frame = check_columns(frame, list(self.columns), known)
        check_features(frame)
        return frame

    def transform(self, X) -> np.ndarray:
        """The ``(n, n_features)`` float32 input of the net: standardised numeric columns, then
        one one-hot block per categorical column."""
        frame = self.frame(X)
        out = np.zeros((len(frame), self.n_features), dtype=np.float32)
        k = len(self.numeric)
        if k:
            numeric = frame[list(self.numeric)].to_numpy(np.float64)
            out[:, :k] = (numeric - self.mean) / self.scale
        rows = np.arange(len(frame))
        for name, cats in zip(self.categorical, self.categories, strict=True):
            codes = pd.Index(cats).get_indexer(frame[name].astype(str))
            known = codes >= 0
            out[rows[known], k + codes[known]] = 1.0
            k += len(cats)
        return out
