"""Checked training data for a library build: features as a DataFrame with known column kinds,
labels encoded 0..C-1, the fold of every row and a fingerprint that ties a store to its data."""

from __future__ import annotations

import hashlib
import logging
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.exceptions import DataConversionWarning
from sklearn.model_selection import (
    GroupShuffleSplit,
    StratifiedGroupKFold,
    StratifiedKFold,
    StratifiedShuffleSplit,
)
from sklearn.utils.multiclass import type_of_target

__all__ = [
    "Columns",
    "TrainingData",
    "check_columns",
    "check_features",
    "clean_columns",
    "coerce_numeric_text",
    "prepare",
]

log = logging.getLogger(__name__)

HOLDOUT = -1
"""Fold id of rows used only for training when a hillclimb split is held out (``cv=None``)."""
CALIBRATION_GROUPS = 5
"""Cross-fitting groups for calibrators on a held-out hillclimb split."""


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


@dataclass(frozen=True)
class TrainingData:
    """What every training run sees: features, encoded labels, folds and calibration groups.

    ``folds[i]`` is the sibling that predicts row ``i`` for the hillclimb set (0..K-1) or
    ``HOLDOUT`` for rows that only train; ``groups`` assigns each hillclimb row to the
    cross-fitting group whose calibrator predicts it."""

    X: pd.DataFrame
    y: np.ndarray
    classes: np.ndarray
    columns: Columns
    folds: np.ndarray
    groups: np.ndarray
    input_columns: tuple[str, ...] = ()  # the columns given, before any was left out
    dropped: dict[str, str] = field(default_factory=dict)  # column -> why it was left out

    @property
    def n_classes(self) -> int:
        return self.classes.size

    @property
    def hillclimb(self) -> np.ndarray:
        """Indices of the rows whose out-of-sample predictions form the hillclimb set."""
        return np.flatnonzero(self.folds != HOLDOUT)

    @property
    def n_siblings(self) -> int:
        return int(self.folds.max()) + 1

    def fingerprint(self) -> dict[str, str]:
        """Hashes of the data, the labels and the folds (a store refuses others)."""
        h = hashlib.sha256()
        h.update(repr(list(map(str, self.X.columns))).encode())
        h.update(repr([str(t) for t in self.X.dtypes]).encode())
        h.update(pd.util.hash_pandas_object(self.X, index=False).to_numpy().tobytes())
        return {
            "X": h.hexdigest()[:16],
            "y": _hash(self.y, self.classes.astype(str)),
            "folds": _hash(self.folds, self.groups),
        }


def _hash(*arrays: np.ndarray) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


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


def _is_missing(value) -> bool:
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def check_features(X: pd.DataFrame) -> None:
    """Raise a clear error for empty data, cells that are neither numbers nor strings, or
    infinities. Missing values (NaN, None, pd.NA) are allowed everywhere."""
    if X.shape[1] == 0:
        raise ValueError(f"X has 0 feature(s) (shape={X.shape}) while a minimum of 1 is required.")
    if X.shape[0] == 0:
        raise ValueError(f"X has 0 sample(s) (shape={X.shape}) while a minimum of 1 is required.")
    for col in X.columns:
        if X[col].dtype == object:
            odd = X[col].map(
                lambda v: not isinstance(v, str | int | float | bool | np.generic)
                and not _is_missing(v)
            )
            if odd.any():
                bad = type(X[col][odd.idxmax()]).__name__
                raise TypeError(
                    f"X column {col!r} holds a {bad}: argument must be a string or a number"
                )
    numeric = X.select_dtypes(include=[np.number], exclude=[bool])
    infinite = [c for c in numeric.columns if np.isinf(numeric[c].to_numpy(float)).any()]
    if infinite:
        raise ValueError(
            f"X has infinite values in column(s) {infinite[:10]}; replace them (by NaN, which "
            "counts as missing) first"
        )


MAX_STRAY_TOKENS = 3
"""A text column is numeric with stray tokens when at most this many distinct cells fail to
parse as numbers and at least half of its non-missing cells do parse."""
ID_MIN_ROWS = 20
"""Columns with a distinct value in every one of at least this many rows are warned as ids."""


def _stray_tokens(col: pd.Series) -> tuple[pd.Series, list[str]] | None:
    """``col`` parsed as numbers and the tokens that did not parse, when ``col`` is a numeric
    column read as text because of a few stray tokens ("?", "NA", "-"); None otherwise."""
    if pd.api.types.is_numeric_dtype(col) or pd.api.types.is_bool_dtype(col):
        return None
    if isinstance(col.dtype, pd.CategoricalDtype):
        return None
    present = col[col.notna()]
    if present.empty or not all(isinstance(v, str | int | float | np.number) for v in present):
        return None
    text = present.astype(str).str.strip()
    parsed = pd.to_numeric(text, errors="coerce")
    failed = parsed.isna()
    tokens = sorted(set(text[failed]))
    if not tokens or len(tokens) > MAX_STRAY_TOKENS or failed.mean() > 0.5:
        return None
    out = pd.Series(np.nan, index=col.index, dtype=np.float64)
    out[present.index] = parsed.to_numpy(np.float64)
    return out, tokens


def _warn_tokens(name: str, tokens: list[str], n_cells: int, stacklevel: int) -> None:
    warnings.warn(
        f"column {name!r} is numeric but holds the non-numeric token(s) {tokens} in "
        f"{n_cells} cell(s); those cells are treated as missing",
        UserWarning,
        stacklevel=stacklevel,
    )


def coerce_numeric_text(frame: pd.DataFrame, stacklevel: int = 4) -> pd.DataFrame:
    """``frame`` (a copy) with each numeric column read as text because of a few stray tokens
    ("?", "NA", "-") made numeric, its tokens missing; a warning names the column and tokens."""
    frame = frame.copy()
    for name in frame.columns:
        found = _stray_tokens(frame[name])
        if found is not None:
            numbers, tokens = found
            n_cells = int(numbers.isna().sum() - frame[name].isna().sum())
            _warn_tokens(name, tokens, n_cells, stacklevel=stacklevel)
            frame[name] = numbers
    return frame


def clean_columns(frame: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, str]]:
    """Training columns as they will be used, and the columns left out with the reason.

    - A numeric column read as text because of a few stray tokens ("?", "NA", "-") becomes
      numeric, its tokens missing (a warning names the column and the tokens).
    - A column missing in every row is dropped with a warning; a constant column (one value, no
      missing cell) is dropped with a log note. Neither says anything about the label. When
      every column would go, all are kept (the caller's other checks then speak).
    - A text or integer column with a distinct value in every row (of at least ``ID_MIN_ROWS``)
      is warned as a likely id; it is kept (the one-hot views pool its rare levels).
    """
    frame = coerce_numeric_text(frame, stacklevel=5)
    dropped: dict[str, str] = {}
    n = len(frame)
    for name in frame.columns:
        col = frame[name]
        n_missing = int(col.isna().sum())
        if n_missing == n:
            dropped[name] = "missing in every row"
        elif n_missing == 0 and col.nunique(dropna=True) == 1:
            dropped[name] = "constant"
    if len(dropped) == frame.shape[1]:
        dropped = {}
    empty = [c for c, why in dropped.items() if why == "missing in every row"]
    if empty:
        warnings.warn(
            f"column(s) {empty[:10]} are missing in every training row; they are left out",
            UserWarning,
            stacklevel=3,
        )
    constant = [c for c, why in dropped.items() if why == "constant"]
    if constant:
        log.info("constant column(s) %s are left out", constant[:10])
    frame = frame.drop(columns=list(dropped))
    if n >= ID_MIN_ROWS:
        for name in frame.columns:
            col = frame[name]
            integer = pd.api.types.is_integer_dtype(col) and not pd.api.types.is_bool_dtype(col)
            if (integer or _is_categorical(col)) and col.nunique(dropna=True) == n:
                warnings.warn(
                    f"column {name!r} has a distinct value in every row: it looks like an id; "
                    "drop it unless it carries information (an id that follows the label leaks)",
                    UserWarning,
                    stacklevel=3,
                )
    return frame, dropped


def check_columns(
    frame: pd.DataFrame, columns: list[str], categories: dict[str, list[str]]
) -> pd.DataFrame:
    """``frame`` reduced to the training ``columns`` in their order; a clear error for missing
    columns, a warning for categories never seen in training (they are encoded as unknown) and
    for numeric columns that arrive as text (their non-numeric tokens become missing values).
    Missing cells are allowed anywhere."""
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(
            f"X lacks column(s) {missing[:10]} seen in training; expected columns "
            f"{columns[:10]}{'...' if len(columns) > 10 else ''}"
        )
    frame = frame[columns]
    for col in columns:
        if col in categories:
            continue
        values = frame[col]
        if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
            continue
        parsed = pd.to_numeric(values.where(values.notna()).astype(str).str.strip(), "coerce")
        tokens = sorted(set(values[parsed.isna() & values.notna()].astype(str)))
        if tokens:
            _warn_tokens(col, tokens[:10], int((parsed.isna() & values.notna()).sum()), 3)
        frame = frame.assign(**{col: parsed.to_numpy(np.float64)})
    for col, known in categories.items():
        values = frame[col]
        unseen = sorted(set(values[values.notna()].astype(str)) - set(known))
        if unseen:
            warnings.warn(
                f"column {col!r} has categories never seen in training: {unseen[:5]}; "
                "members treat them as unknown (an all-zero one-hot row, or code -1)",
                UserWarning,
                stacklevel=3,
            )
    return frame


def prepare(
    X,
    y,
    *,
    cv: int | None,
    groups=None,
    hillclimb_fraction: float = 0.2,
    random_state: int = 0,
) -> TrainingData:
    """Check X and y and assign folds: ``cv=K`` stratified K folds (grouped when ``groups`` is
    given: rows of one group never straddle folds), ``cv=None`` a stratified hillclimb split."""
    frame = as_frame(X)
    check_features(frame)
    input_columns = tuple(frame.columns)
    y_arr = np.asarray(y)
    if y_arr.ndim == 2 and y_arr.shape[1] == 1:
        warnings.warn(
            "A column-vector y was passed when a 1d array was expected; it was flattened to "
            "shape (n_samples,)",
            DataConversionWarning,
            stacklevel=3,
        )
        y_arr = y_arr.ravel()
    if y_arr.ndim != 1:
        raise ValueError(f"y must be 1-D; got shape {y_arr.shape}")
    if y_arr.shape[0] != frame.shape[0]:
        raise ValueError(f"X has {frame.shape[0]} rows but y has {y_arr.shape[0]}; they must match")
    if pd.isna(y_arr).any():
        raise ValueError(
            f"y has missing labels (NaN/None) in {int(pd.isna(y_arr).sum())} of "
            f"{y_arr.size} rows; drop those rows first"
        )
    frame, dropped = clean_columns(frame)
    kind = type_of_target(y_arr) if y_arr.dtype != object else "labels"
    if kind.startswith("continuous"):
        raise ValueError(
            f"Unknown label type: {kind}. y holds real numbers; ensel classifies, so give it "
            "class labels"
        )
    classes, y_enc = np.unique(y_arr, return_inverse=True)
    if classes.size < 2:
        raise ValueError(
            f"y has a single class, 1 class ({classes[0]!r}); need at least two classes"
        )
    counts = np.bincount(y_enc)
    if groups is not None:
        groups = np.asarray(groups)
        if groups.shape != y_arr.shape:
            raise ValueError(f"groups has shape {groups.shape}; it must match y {y_arr.shape}")
    if cv is not None:
        if not isinstance(cv, int | np.integer) or cv < 2:
            raise ValueError(f"cv={cv!r}: use an integer >= 2, or None for a held-out split")
        if counts.min() < cv:
            raise ValueError(
                f"class {classes[counts.argmin()]!r} has {counts.min()} rows, fewer than cv={cv} "
                "folds; lower cv or use cv=None"
            )
        folds = _kfold(y_enc, cv, groups, random_state)
        cal_groups = folds[folds != HOLDOUT]
    else:
        if not 0.0 < hillclimb_fraction < 1.0:
            raise ValueError(f"hillclimb_fraction={hillclimb_fraction}: use a value in (0, 1)")
        hill = _holdout(y_enc, hillclimb_fraction, groups, random_state)
        folds = np.full(y_enc.size, HOLDOUT, dtype=np.int64)
        folds[hill] = 0
        hill_counts = np.bincount(y_enc[hill], minlength=classes.size)
        k = int(min(CALIBRATION_GROUPS, hill_counts.min()))
        if k < 2 or (counts - hill_counts).min() < 1:
            raise ValueError(
                f"class {classes[counts.argmin()]!r} has {counts.min()} rows, too few to hold "
                f"out a stratified hillclimb split of {hillclimb_fraction:.0%}; use more data or cv"
            )
        hill_groups = None if groups is None else groups[hill]
        if hill_groups is not None:
            k = min(k, np.unique(hill_groups).size)
            if k < 2:
                raise ValueError("the hillclimb split holds fewer than 2 groups; use more groups")
        cal_groups = _kfold(y_enc[hill], k, hill_groups, random_state)
    return TrainingData(
        frame, y_enc, classes, Columns.infer(frame), folds, cal_groups, input_columns, dropped
    )


def _holdout(y: np.ndarray, fraction: float, groups, random_state: int) -> np.ndarray:
    """Sorted indices of a held-out hillclimb split: stratified, or by whole groups."""
    if groups is None:
        splitter = StratifiedShuffleSplit(1, test_size=fraction, random_state=random_state)
        _, hill = next(splitter.split(np.zeros(y.size), y))
    else:
        splitter = GroupShuffleSplit(1, test_size=fraction, random_state=random_state)
        _, hill = next(splitter.split(np.zeros(y.size), y, groups))
    return np.sort(hill)


def _kfold(y: np.ndarray, k: int, groups, random_state: int) -> np.ndarray:
    folds = np.empty(y.size, dtype=np.int64)
    if groups is None:
        splitter = StratifiedKFold(k, shuffle=True, random_state=random_state)
        splits = splitter.split(np.zeros(y.size), y)
    else:
        splitter = StratifiedGroupKFold(k, shuffle=True, random_state=random_state)
        splits = splitter.split(np.zeros(y.size), y, groups)
    for i, (_, test) in enumerate(splits):
        folds[test] = i
    return folds
