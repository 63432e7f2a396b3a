"""Training data of a library build: checked features, labels encoded 0..C-1, the fold of every
row (embedded cross-validation or a held-out hillclimb split), the cross-fitting groups of the
calibrators and a fingerprint that ties a store to its data."""

from __future__ import annotations

import hashlib
import os
import pickle
import shutil
import warnings
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.exceptions import DataConversionWarning
from sklearn.model_selection import (
    GroupKFold,
    GroupShuffleSplit,
    KFold,
    ShuffleSplit,
    StratifiedGroupKFold,
    StratifiedKFold,
    StratifiedShuffleSplit,
)
from sklearn.utils.multiclass import type_of_target

from ...calibration import CROSS_FIT_GROUPS
from ...data import Columns, as_frame, check_features, clean_columns

__all__ = [
    "AUTO_FOLDS",
    "HOLDOUT",
    "CVChoice",
    "TrainingData",
    "prepare",
    "read_frame",
    "resolve_cv",
    "share_frame",
]

HOLDOUT = -1
"""Fold id of rows used only for training when a hillclimb split is held out (``cv=None``)."""
AUTO_FOLDS = 5
"""Folds of embedded cross-validation that ``cv="auto"`` uses, on a table of any size (see
:func:`resolve_cv` for why five on a large table too)."""


@dataclass(frozen=True)
class CVChoice:
    """What ``cv`` resolves to for one table: ``cv`` (K, or None for a held-out hillclimb
    set), ``hillclimb_fraction`` (its share of the rows when held out) and ``reason``."""

    cv: int | None
    hillclimb_fraction: float
    reason: str

    def hillclimb_rows(self, n_rows: int) -> int:
        """Rows of the hillclimb set: all of them under K folds, else the held-out share."""
        return n_rows if self.cv is not None else max(1, int(self.hillclimb_fraction * n_rows))


def resolve_cv(
    cv, n_rows: int, y=None, *, hillclimb_fraction: float = 0.2, task: str = "classification"
) -> CVChoice:
    """``cv`` as the builder uses it. An integer K or None stand (None: a held-out hillclimb
    set of ``hillclimb_fraction``, an explicit choice); ``"auto"`` gives ``AUTO_FOLDS``
    stratified folds at every size (fewer where the rarest class has 2-4 rows: as many as it
    has rows). ``y``: the labels (classes are counted for classification).

    Every run is then bagged: each of its K fold siblings trains on (K-1)/K of the rows, every
    row is scored out of fold, and the test-time prediction is the average of the siblings, so
    selection hillclimbs on all the rows' out-of-fold predictions. A large table gets folds
    too, not one held-out set: a held-out set leaves its rows out of every member and gives
    selection only a few thousand rows to weigh the members on, while bagged members train on
    every row and selection sees them all. The choice is one for the whole build, not per run:
    selection needs one common row set, and mixing bagged runs with held-out ones would
    restrict it to the held-out rows. Five folds on a large table as on a small one: each
    sibling trains on 80% of the rows, and more folds cost proportionally more fits (eight:
    1.6 times the fits of five) out of a budget that on a large table is already short of
    fitting the strong runs once each, while ten folds measured no better than five on the
    small tables (docs/decisions.md, "Spare time")."""
    if isinstance(cv, str):
        if cv != "auto":
            raise ValueError(f"cv={cv!r}: use 'auto', an integer >= 2, or None")
    else:
        return CVChoice(cv, hillclimb_fraction, "as given")
    folds, why = AUTO_FOLDS, f"{n_rows} rows: K folds"
    if task != "regression" and y is not None:  # stratified: no more folds than rarest rows
        counts = pd.Series(np.ravel(np.asarray(y, dtype=object))).value_counts()
        rarest = int(counts.min()) if counts.size else 0  # no rows: prepare says so
        if 2 <= rarest < folds:
            folds, why = rarest, f"{why}, as many as the rarest class has rows ({rarest})"
    return CVChoice(folds, hillclimb_fraction, why)


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
    task: str = "classification"  # "regression": y is the real target, classes is empty
    input_columns: tuple[str, ...] = ()  # the columns given, before any was left out
    dropped: dict[str, str] = field(default_factory=dict)  # column -> why it was left out
    frame_file: str | None = None  # X lives in this directory (see share_frame)

    in_memory = True
    """Whether the rows are here (a source's are read where the data is unpickled)."""

    def __reduce__(self):
        """Pickled without X where X lives in ``frame_file``: the unpickling process maps that
        file instead (workers of one machine share one copy of the training matrix)."""
        state = {f.name: getattr(self, f.name) for f in fields(self)}
        if self.frame_file is not None:
            state.update(dict.fromkeys(("X", *ROW_ARRAYS)))
        return (_restore, (state,))

    @property
    def box(self) -> pd.DataFrame:
        """Rows that span the data's bounding box: here every row (a source's are a few
        rows summarising its parts)."""
        return self.X

    @property
    def n_classes(self) -> int:
        return self.classes.size

    @property
    def n_outputs(self) -> int:
        """Columns of a run's prediction: one per class, or one real value for regression."""
        return 1 if self.task == "regression" else self.classes.size

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


def _restore(state: dict) -> TrainingData:
    if state["X"] is None:
        state["X"] = read_frame(state["frame_file"])
        for name in ROW_ARRAYS:
            state[name] = np.load(Path(state["frame_file"]) / f"{name}.npy", mmap_mode="r")
    return TrainingData(**state)


FLOAT_FILE = "float64.npy"
OTHER_FILE = "other.pkl"
ROW_ARRAYS = ("y", "folds", "groups")
"""Per-row arrays of TrainingData kept beside the frame (memory-mapped by the workers too)."""


def share_frame(data: TrainingData, directory: str | os.PathLike) -> TrainingData:
    """``data`` with X written once to ``directory`` (its float64 columns as one memory-mapped
    ``.npy``, the other columns, small codes and labels, pickled) and read back from there; so
    pickled, it carries the directory's path instead of the rows. ``directory`` is replaced."""
    directory = Path(directory)
    tmp = directory.with_name(f".{directory.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    block, floats, others = _parts(data.X)
    np.save(tmp / FLOAT_FILE, block)
    for name in ROW_ARRAYS:
        np.save(tmp / f"{name}.npy", getattr(data, name))
    with open(tmp / OTHER_FILE, "wb") as fh:
        pickle.dump((list(data.X.columns), floats, others), fh, protocol=pickle.HIGHEST_PROTOCOL)
    shutil.rmtree(directory, ignore_errors=True)
    os.replace(tmp, directory)
    return replace(data, X=read_frame(directory), frame_file=str(directory))


def read_frame(directory: str | os.PathLike) -> pd.DataFrame:
    """The frame :func:`share_frame` wrote: its float64 columns are a read-only view of the
    memory-mapped file (pages shared by every process that maps it), the others loaded."""
    directory = Path(directory)
    block = np.load(directory / FLOAT_FILE, mmap_mode="r")
    with open(directory / OTHER_FILE, "rb") as fh:
        order, floats, others = pickle.load(fh)
    return _assemble(block, floats, order, others)


def canonical_frame(X: pd.DataFrame) -> pd.DataFrame:
    """``X`` with its float64 columns in one block laid out as :func:`read_frame` lays them
    out, so that a build reading the shared file and one holding the frame compute the same
    numbers (numpy's sums round by memory layout)."""
    block, floats, others = _parts(X)
    return _assemble(block, floats, list(X.columns), others)


def _parts(X: pd.DataFrame) -> tuple[np.ndarray, list, pd.DataFrame]:
    floats = [c for c in X.columns if X[c].dtype == np.float64]
    block = np.ascontiguousarray(X[floats].to_numpy(dtype=np.float64))
    return block, floats, X[[c for c in X.columns if c not in set(floats)]]


def _assemble(block: np.ndarray, floats: list, order: list, others: pd.DataFrame) -> pd.DataFrame:
    frame = pd.DataFrame(block, columns=floats, copy=False)
    for position, name in enumerate(order):
        if name in others.columns:
            frame.insert(position, name, others[name])
    return frame


def _hash(*arrays: np.ndarray) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


def prepare(
    X,
    y,
    *,
    cv: int | None,
    groups=None,
    hillclimb_fraction: float = 0.2,
    random_state: int = 0,
    task: str = "classification",
) -> TrainingData:
    """Check X and y and assign folds: ``cv=K`` stratified K folds (grouped when ``groups`` is
    given: rows of one group never straddle folds), ``cv=None`` a stratified hillclimb split.
    ``task="regression"``: y is a real target, and the folds are plain (or grouped) K folds."""
    frame = as_frame(X)
    check_features(frame)
    input_columns = tuple(frame.columns)
    y_arr = _check_target(y, frame.shape[0], task)
    frame, dropped = clean_columns(frame)
    frame = canonical_frame(frame)
    if task == "regression":
        data = _prepare_regression(frame, y_arr, cv, groups, hillclimb_fraction, random_state)
        return replace(data, input_columns=input_columns, dropped=dropped)
    classes, y_enc = _encode_classes(y_arr)
    if groups is not None:
        groups = np.asarray(groups)
        if groups.shape != y_arr.shape:
            raise ValueError(f"groups has shape {groups.shape}; it must match y {y_arr.shape}")
    if cv is not None:
        folds = _stratified_folds(y_enc, classes, cv, groups, random_state)
        cal_groups = folds[folds != HOLDOUT]
    else:
        folds, cal_groups = _stratified_holdout(
            y_enc, classes, hillclimb_fraction, groups, random_state
        )
    return TrainingData(
        frame,
        y_enc,
        classes,
        Columns.infer(frame),
        folds,
        cal_groups,
        input_columns=input_columns,
        dropped=dropped,
    )


def _check_target(y, n_rows: int, task: str) -> np.ndarray:
    """``y`` as a 1-D array of ``n_rows`` (a column vector flattened with a warning, as
    scikit-learn does); a classification target without missing labels."""
    y_arr = np.asarray(y)
    if y_arr.ndim == 2 and y_arr.shape[1] == 1:
        warnings.warn(
            "A column-vector y was passed when a 1d array was expected; it was flattened to "
            "shape (n_samples,)",
            DataConversionWarning,
            stacklevel=4,
        )
        y_arr = y_arr.ravel()
    if y_arr.ndim != 1:
        raise ValueError(f"y must be 1-D; got shape {y_arr.shape}")
    if y_arr.shape[0] != n_rows:
        raise ValueError(f"X has {n_rows} rows but y has {y_arr.shape[0]}; they must match")
    if task != "regression" and pd.isna(y_arr).any():
        raise ValueError(
            f"y has missing labels (NaN/None) in {int(pd.isna(y_arr).sum())} of "
            f"{y_arr.size} rows; drop those rows first"
        )
    return y_arr


def _encode_classes(y_arr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(classes, y encoded as class indices)``: at least two classes, each of two rows or
    more (neither K stratified folds nor a stratified held-out split hold a single row)."""
    kind = type_of_target(y_arr) if y_arr.dtype != object else "labels"
    if kind.startswith("continuous"):
        raise ValueError(
            f"Unknown label type: {kind}. y holds real numbers; ensel classifies, so give it "
            "class labels"
        )
    classes, y_enc = np.unique(y_arr, return_inverse=True)
    if classes.size < 2:
        raise ValueError(
            f"y has a single class, 1 class ({_plain(classes[0])!r}); need at least two classes"
        )
    counts = np.bincount(y_enc)
    if counts.min() < 2:
        alone = [_plain(c) for c in classes[counts < 2]]
        raise ValueError(
            f"class(es) {alone[:10]} of y have a single row; every class needs at least 2 "
            "(folds and the hillclimb split are stratified): drop or merge those rows, or, for a "
            "numeric target, use EnsembleSelectionRegressor (or --task regression)"
        )
    return classes, y_enc


def _stratified_folds(y_enc, classes, cv, groups, random_state: int) -> np.ndarray:
    """``cv`` stratified (grouped) folds; every class needs a row in each."""
    counts = np.bincount(y_enc)
    if not isinstance(cv, int | np.integer) or cv < 2:
        raise ValueError(f"cv={cv!r}: use an integer >= 2, or None for a held-out split")
    if counts.min() < cv:
        raise ValueError(
            f"class {_plain(classes[counts.argmin()])!r} has {counts.min()} rows, fewer than "
            f"cv={cv} folds; lower cv or use cv=None"
        )
    return _kfold(y_enc, cv, groups, random_state)


def _stratified_holdout(y_enc, classes, hillclimb_fraction: float, groups, random_state: int):
    """``(folds, calibration groups)`` of a stratified held-out hillclimb split of
    ``hillclimb_fraction`` of the rows, its rows cross-fitted in up to ``CROSS_FIT_GROUPS``."""
    counts = np.bincount(y_enc)
    if not 0.0 < hillclimb_fraction < 1.0:
        raise ValueError(f"hillclimb_fraction={hillclimb_fraction}: use a value in (0, 1)")
    hill = _holdout(y_enc, hillclimb_fraction, groups, random_state)
    folds = np.full(y_enc.size, HOLDOUT, dtype=np.int64)
    folds[hill] = 0
    hill_counts = np.bincount(y_enc[hill], minlength=classes.size)
    k = int(min(CROSS_FIT_GROUPS, hill_counts.min()))
    if k < 2 or (counts - hill_counts).min() < 1:
        raise ValueError(
            f"class {_plain(classes[counts.argmin()])!r} has {counts.min()} rows, too few to "
            f"hold out a stratified hillclimb split of {hillclimb_fraction:.0%}; use more "
            "data or cv"
        )
    hill_groups = None if groups is None else groups[hill]
    if hill_groups is not None:
        k = min(k, np.unique(hill_groups).size)
        if k < 2:
            raise ValueError("the hillclimb split holds fewer than 2 groups; use more groups")
    return folds, _kfold(y_enc[hill], k, hill_groups, random_state)


def _plain(label):
    """A class label as the user wrote it: ``10``, not ``np.int64(10)``, in messages."""
    return label.item() if isinstance(label, np.generic) else label


def _prepare_regression(
    frame: pd.DataFrame, y, cv, groups, hillclimb_fraction: float, random_state: int
) -> TrainingData:
    """``prepare`` for a real target: checked y as float64; ``cv=K`` shuffled K folds (grouped
    K folds with ``groups``), ``cv=None`` a random (or whole-group) hillclimb split whose rows
    are split into ``CROSS_FIT_GROUPS`` parts (kept for the layout; regression calibrates
    nothing)."""
    try:
        y = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(
            f"y must hold numbers for regression; got dtype {np.asarray(y).dtype}. Use "
            "EnsembleSelectionClassifier (or --task classification) for class labels"
        ) from None
    bad = int((~np.isfinite(y)).sum())
    if bad:
        raise ValueError(f"y has {bad} missing or infinite target(s); drop those rows first")
    n = y.size
    if groups is not None:
        groups = np.asarray(groups)
        if groups.shape != y.shape:
            raise ValueError(f"groups has shape {groups.shape}; it must match y {y.shape}")
    units = n if groups is None else np.unique(groups).size
    what = "rows" if groups is None else "groups"
    if cv is not None:
        if not isinstance(cv, int | np.integer) or cv < 2:
            raise ValueError(f"cv={cv!r}: use an integer >= 2, or None for a held-out split")
        if units < cv:
            if n == 1:
                raise ValueError(f"y has 1 sample, fewer than cv={cv} folds; give more rows")
            raise ValueError(f"y has {units} {what}, fewer than cv={cv} folds; lower cv")
        folds = _plain_kfold(n, cv, groups, random_state)
        cal_groups = folds[folds != HOLDOUT]
    else:
        if not 0.0 < hillclimb_fraction < 1.0:
            raise ValueError(f"hillclimb_fraction={hillclimb_fraction}: use a value in (0, 1)")
        if units < 4:
            raise ValueError(f"y has {units} {what}: too few to hold out a hillclimb split")
        splitter = (ShuffleSplit if groups is None else GroupShuffleSplit)(
            1, test_size=hillclimb_fraction, random_state=random_state
        )
        _, hill = next(splitter.split(np.zeros(n), y, groups))
        hill = np.sort(hill)
        folds = np.full(n, HOLDOUT, dtype=np.int64)
        folds[hill] = 0
        hill_groups = None if groups is None else groups[hill]
        hill_units = hill.size if groups is None else np.unique(hill_groups).size
        k = int(min(CROSS_FIT_GROUPS, hill_units))
        if k < 2:
            raise ValueError(f"the hillclimb split holds fewer than 2 {what}; use more data")
        cal_groups = _plain_kfold(hill.size, k, hill_groups, random_state)
    empty = np.array([], dtype=np.float64)
    return TrainingData(frame, y, empty, Columns.infer(frame), folds, cal_groups, "regression")


def _plain_kfold(n: int, k: int, groups, random_state: int) -> np.ndarray:
    """Fold of each of ``n`` rows: shuffled K folds, or grouped K folds (whole groups)."""
    folds = np.empty(n, dtype=np.int64)
    if groups is None:
        splits = KFold(k, shuffle=True, random_state=random_state).split(np.zeros(n))
    else:
        splitter = GroupKFold(k, shuffle=True, random_state=random_state)
        splits = splitter.split(np.zeros(n), groups=groups)
    for i, (_, test) in enumerate(splits):
        folds[test] = i
    return folds


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
