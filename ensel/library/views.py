"""Preprocessing views (App. 4.A): SVMs, neural nets, KNN and logistic regression see one-hot,
standardised features; trees and naive Bayes see the native features (categoricals as codes).
A view is fitted on a training fold only."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder, StandardScaler

from ..data import Columns

__all__ = ["make_view"]


def make_view(view: str, columns: Columns) -> ColumnTransformer:
    """An unfitted transformer from the raw DataFrame to the float64 matrix of ``view``.
    Unseen categories at predict time become all-zero one-hot rows or code -1."""
    categories = [list(c) for c in columns.categories]
    if view == "standardized":
        numeric, categorical = (
            StandardScaler(),
            OneHotEncoder(categories=categories, handle_unknown="ignore", sparse_output=False),
        )
    elif view == "native":
        numeric, categorical = (
            "passthrough",
            OrdinalEncoder(
                categories=categories, handle_unknown="use_encoded_value", unknown_value=-1
            ),
        )
    else:
        raise ValueError(f"view={view!r} is not one of ('standardized', 'native')")
    parts = []
    if columns.numeric:
        parts.append(("numeric", numeric, list(columns.numeric)))
    if columns.categorical:
        parts.append(("categorical", categorical, list(columns.categorical)))
    return ColumnTransformer(parts, sparse_threshold=0.0, verbose_feature_names_out=False)


def transform(view: ColumnTransformer, X: pd.DataFrame) -> np.ndarray:
    """Apply a fitted view; a warning (not a crash) for categories never seen in training."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*unknown categories.*")
        return np.asarray(view.transform(X), dtype=np.float64)
