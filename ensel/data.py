"""The input layer: user data as a DataFrame with string column names, the kinds of its columns
(numeric or categorical, with their categories), and the checks every caller shares (empty data,
odd cell types, missing values, infinities, columns and categories unseen in training). It
imports nothing else of ensel."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.sparse as sp

__all__ = ["Columns", "as_frame", "check_columns", "check_features"]


@dataclass(frozen=True)
class Columns:
    """Names of the numeric and categorical columns, and each categorical column's categories."""

    numeric: tuple[str, ...]
    categorical: tuple[str, ...]
    categories: tuple[tuple, ...]

    @classmethod
    def infer(cls, X: pd.DataFrame) -> Columns:
        categorical = tuple(c for c in X.columns if _is_categorical(X[c]))
        numeric = tuple(c for c in X.columns if c not in categorical)
        categories = tuple(tuple(sorted(X[c].dropna().unique(), key=str)) for c in categorical)
        return cls(numeric, categorical, categories)


def _is_categorical(col: pd.Series) -> bool:
    return not pd.api.types.is_numeric_dtype(col) or pd.api.types.is_bool_dtype(col)


def as_frame(X) -> pd.DataFrame:
    """X as a DataFrame with string column names (array columns become x0, x1, ...); object
    arrays of numbers become numeric columns."""
    if sp.issparse(X):
        raise TypeError("sparse input is not supported; pass a dense array (X.toarray())")
    if isinstance(X, pd.DataFrame):
        frame = X.reset_index(drop=True)
        frame.columns = [str(c) for c in frame.columns]
        return frame
    arr = np.asarray(X)
    if arr.ndim != 2:
        raise ValueError(
            f"X must be 2-D (rows, features); got an array of shape {arr.shape}. Reshape your "
            "data with X.reshape(-1, 1) for one feature or X.reshape(1, -1) for one row"
        )
    if np.iscomplexobj(arr):
        raise ValueError("Complex data not supported: X has complex values")
    frame = pd.DataFrame(arr, columns=[f"x{j}" for j in range(arr.shape[1])])
    return frame.infer_objects() if arr.dtype == object else frame


def check_features(X: pd.DataFrame) -> None:
    """Raise a clear error for empty data, missing values or infinities."""
    if X.shape[1] == 0:
        raise ValueError(f"X has 0 feature(s) (shape={X.shape}) while a minimum of 1 is required.")
    if X.shape[0] == 0:
        raise ValueError(f"X has 0 sample(s) (shape={X.shape}) while a minimum of 1 is required.")
    for col in X.columns:
        if X[col].dtype == object:
            odd = X[col].map(lambda v: not isinstance(v, str | int | float | bool | np.generic))
            if odd.any():
                bad = type(X[col][odd.idxmax()]).__name__
                raise TypeError(
                    f"X column {col!r} holds a {bad}: argument must be a string or a number"
                )
    missing = [c for c in X.columns if X[c].isna().any()]
    if missing:
        raise ValueError(
            f"X has missing values (NaN/None) in column(s) {missing[:10]}; "
            "impute or drop them first"
        )
    numeric = X.select_dtypes(include=[np.number], exclude=[bool])
    infinite = [c for c in numeric.columns if not np.isfinite(numeric[c].to_numpy(float)).all()]
    if infinite:
        raise ValueError(f"X has infinite values in column(s) {infinite[:10]}; replace them first")


def check_columns(
    frame: pd.DataFrame, columns: list[str], categories: dict[str, list[str]]
) -> pd.DataFrame:
    """``frame`` reduced to the training ``columns`` in their order; a clear error for missing
    columns, a warning for categories never seen in training (they are encoded as unknown)."""
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(
            f"X lacks column(s) {missing[:10]} seen in training; expected columns "
            f"{columns[:10]}{'...' if len(columns) > 10 else ''}"
        )
    for col, known in categories.items():
        unseen = sorted(set(frame[col].astype(str)) - set(known))
        if unseen:
            warnings.warn(
                f"column {col!r} has categories never seen in training: {unseen[:5]}; "
                "members treat them as unknown (an all-zero one-hot row, or code -1)",
                UserWarning,
                stacklevel=3,
            )
    return frame[columns]
