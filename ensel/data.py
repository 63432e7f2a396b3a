"""The input layer: user data as a DataFrame with string column names, the kinds of its columns
(numeric or categorical, with their categories), the checks every caller shares (empty data,
odd cell types, infinities, columns and categories unseen in training), and the policy for
messy columns: missing values are allowed everywhere, numeric columns with stray text tokens
are read as numbers, dates and durations are numbers, all-missing and constant columns are
left out, id-like ones are warned. It
imports nothing else of ensel."""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.sparse as sp

__all__ = [
    "Coded",
    "Columns",
    "Schema",
    "Table",
    "as_frame",
    "check_columns",
    "check_features",
    "clean_columns",
    "coerce_numeric_text",
    "named",
    "plan_schema",
    "read_table",
    "schema_key",
    "select_columns",
    "stratified_rows",
    "times_as_numbers",
]

log = logging.getLogger(__name__)


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
    arrays of numbers become numeric columns. A frame whose column names repeat (as strings:
    ``0`` and ``"0"`` are one name) is refused: a name must pick one column."""
    if sp.issparse(X):
        raise TypeError("sparse input is not supported; pass a dense array (X.toarray())")
    if isinstance(X, pd.DataFrame):
        frame = X.reset_index(drop=True)
        frame.columns = [str(c) for c in frame.columns]
        repeated = frame.columns[frame.columns.duplicated()].unique().tolist()
        if repeated:
            raise ValueError(
                f"X has duplicate column name(s) {repeated[:10]} (names compared as strings); "
                "give each column a unique name"
            )
        return times_as_numbers(frame)
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


EPOCH = pd.Timestamp("1970-01-01")


def times_as_numbers(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with its datetime columns as days since 1970-01-01 (in UTC where the column
    has a time zone) and its timedelta columns as seconds, float64 with NaT as missing. Read as
    categories, dates would be levels of their own, and every date after the training rows
    unseen at predict time; as numbers, trees split on them and later dates extrapolate."""
    times = frame.select_dtypes(include=["datetime", "datetimetz", "timedelta"]).columns
    # (one dtype query: a loop over every column cost 2 ms at 200 columns)
    converted = {name: time_as_number(frame[name]) for name in times}
    return frame.assign(**converted) if converted else frame


def is_time(dtype) -> bool:
    """Whether a column of ``dtype`` is a date or a duration (:func:`times_as_numbers`)."""
    return pd.api.types.is_datetime64_any_dtype(dtype) or pd.api.types.is_timedelta64_dtype(dtype)


def time_as_number(col: pd.Series) -> pd.Series:
    """One date column as days since 1970-01-01 (UTC where it has a time zone), or one duration
    column as seconds: float64, NaT missing (see :func:`times_as_numbers`)."""
    if pd.api.types.is_datetime64_any_dtype(col):
        if col.dt.tz is not None:
            col = col.dt.tz_convert("UTC").dt.tz_localize(None)
        return ((col - EPOCH) / pd.Timedelta(days=1)).astype(np.float64)
    return (col / pd.Timedelta(seconds=1)).astype(np.float64)


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
                lambda v: (
                    not isinstance(v, str | int | float | bool | np.generic) and not _is_missing(v)
                )
            )
            if odd.any():
                bad = type(X[col][odd.idxmax()]).__name__
                raise TypeError(
                    f"X column {col!r} holds a {bad}: argument must be a string or a number"
                )
    numeric = X.select_dtypes(include=[np.number], exclude=[bool])
    infinite = [c for c in numeric.columns if np.isinf(numeric[c].to_numpy(float)).any()]
    if infinite:
        raise _infinite(infinite)


def _infinite(columns: list[str]) -> ValueError:
    return ValueError(
        f"X has infinite values in column(s) {columns[:10]}; replace them (by NaN, which "
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
    ("?", "NA", "-") made numeric, its tokens missing; a warning names the column and tokens.
    Text that parses as infinite ("inf") is refused as :func:`check_features` refuses
    infinities in numeric columns."""
    frame = frame.copy()
    for name in frame.columns:
        found = _stray_tokens(frame[name])
        if found is not None:
            numbers, tokens = found
            if np.isinf(numbers.to_numpy()).any():
                raise _infinite([name])
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
    dropped = left_out(dropped, frame.shape[1], stacklevel=3)
    frame = frame.drop(columns=list(dropped))
    if n >= ID_MIN_ROWS:
        for name in frame.columns:
            col = frame[name]
            integer = pd.api.types.is_integer_dtype(col) and not pd.api.types.is_bool_dtype(col)
            if (integer or _is_categorical(col)) and col.nunique(dropna=True) == n:
                warn_id(name, stacklevel=3)
    return frame, dropped


def left_out(dropped: dict[str, str], n_columns: int, stacklevel: int) -> dict[str, str]:
    """The columns ``clean_columns`` leaves out, ``{name: why}``, once said: a warning for those
    missing in every row, a log note for the constant ones; none when all ``n_columns`` would
    go (the caller's other checks then speak). ``stacklevel`` as the caller would warn."""
    if len(dropped) == n_columns:
        return {}
    empty = [c for c, why in dropped.items() if why == "missing in every row"]
    if empty:
        warnings.warn(
            f"column(s) {empty[:10]} are missing in every training row; they are left out",
            UserWarning,
            stacklevel=stacklevel + 1,
        )
    constant = [c for c, why in dropped.items() if why == "constant"]
    if constant:
        log.info("constant column(s) %s are left out", constant[:10])
    return dropped


def warn_id(name: str, stacklevel: int) -> None:
    """The warning for a column with a distinct value in every row (a likely id, kept)."""
    warnings.warn(
        f"column {name!r} has a distinct value in every row: it looks like an id; "
        "drop it unless it carries information (an id that follows the label leaks)",
        UserWarning,
        stacklevel=stacklevel + 1,
    )


def named(X, columns, *, who: str):
    """X as given when it is a DataFrame; any other input as a DataFrame whose columns take the
    training ``columns`` names, in order, after a check that it has as many columns (the
    scikit-learn convention: an array's columns are the training columns by position). ``who``
    names the fitted object in the error, e.g. ``"EnsembleSelectionClassifier"``."""
    if isinstance(X, pd.DataFrame):
        return X
    frame = as_frame(X)
    if frame.shape[1] != len(columns):
        raise ValueError(
            f"X has {frame.shape[1]} features, but {who} is expecting {len(columns)} features "
            "as input"
        )
    frame.columns = list(columns)
    return frame


def select_columns(frame: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """``frame`` reduced to the training ``columns`` in their order; a clear error for missing
    columns (extra columns are ignored)."""
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(
            f"X lacks column(s) {missing[:10]} seen in training; expected columns "
            f"{columns[:10]}{'...' if len(columns) > 10 else ''}"
        )
    return frame[columns]


def check_columns(
    frame: pd.DataFrame, columns: list[str], categories: dict[str, list[str]]
) -> pd.DataFrame:
    """``frame`` reduced to the training ``columns`` in their order; a clear error for missing
    columns, a warning for categories never seen in training (they are encoded as unknown) and
    for numeric columns that arrive as text (their non-numeric tokens become missing values).
    Missing cells are allowed anywhere."""
    frame = select_columns(frame, columns)
    for col in columns:
        if col in categories or is_plain_number(frame[col].dtype):
            continue
        frame = frame.assign(**{col: numbers_from_text(col, frame[col], stacklevel=3)})
    for col, known in categories.items():
        warn_unseen(col, frame[col], known, stacklevel=4)
    return frame


def is_plain_number(dtype) -> bool:
    """Whether a numeric training column of ``dtype`` is read as it is (a numeric dtype, not
    bool); any other is parsed from its text by :func:`numbers_from_text`."""
    return pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)


def numbers_from_text(name: str, values: pd.Series, stacklevel: int = 3) -> np.ndarray:
    """A numeric training column that arrives as text, parsed: float64, its non-numeric tokens
    missing (a warning names the column and the tokens; ``stacklevel`` as ``warnings.warn``'s
    here)."""
    parsed = pd.to_numeric(values.where(values.notna()).astype(str).str.strip(), "coerce")
    failed = parsed.isna() & values.notna()
    tokens = sorted(set(values[failed].astype(str)))
    if tokens:
        _warn_tokens(name, tokens[:10], int(failed.sum()), stacklevel + 1)
    return parsed.to_numpy(np.float64)


def warn_unseen(name: str, values: pd.Series, known, stacklevel: int = 3) -> None:
    """Warn when a categorical column holds categories never seen in training (``known``;
    ``stacklevel`` as ``warnings.warn``'s here)."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        codes = values.cat.codes.to_numpy()
        used = values.cat.categories[np.unique(codes[codes >= 0])]
    else:
        used = pd.unique(values.to_numpy())  # each distinct value once, not each cell
    unseen = sorted({str(v) for v in used if not pd.isna(v)} - set(known))
    if unseen:
        warn_unseen_levels(name, unseen, stacklevel)


def warn_unseen_levels(name: str, unseen: list[str], stacklevel: int) -> None:
    """The warning of :func:`warn_unseen` for the sorted categories ``unseen``."""
    warnings.warn(
        f"column {name!r} has categories never seen in training: {unseen[:5]}; "
        "members treat them as unknown (an all-zero one-hot row, or code -1)",
        UserWarning,
        stacklevel=stacklevel + 1,
    )


@dataclass(frozen=True)
class Schema:
    """What :func:`as_frame` and :func:`check_columns` decide about a frame from its column
    names and dtypes alone, found once per schema so that predicting a few rows pays only for
    what depends on their values. ``at``: the position in the frame of each training column;
    ``reads``: how each is read (``"number"``: its values as float64, ``"text"``: parsed by
    :func:`numbers_from_text`, ``"time"``: a date or duration made a number, ``"cells"``: a
    categorical column's Series as given); ``numeric``: the numeric training columns, in
    training order (the block of a :class:`Table`); ``direct``: the frame positions of those
    read as they are, ``into``: their positions in the block; ``whole``: every column of the
    frame is a plain number, so one ``to_numpy`` reads them all; ``boxed``: every column read
    directly has a numpy dtype, so the frame's one object array holds their numbers exactly
    (pandas selects columns of a mixed frame at far more cost than the few rows' values);
    ``known``: the categories seen in training of each categorical column, as a set."""

    at: dict[str, int]
    reads: dict[str, str]
    numeric: tuple[str, ...]
    direct: tuple[int, ...]
    into: tuple[int, ...]
    whole: bool
    boxed: bool
    known: dict[str, frozenset]


def schema_key(frame: pd.DataFrame) -> tuple:
    """What a :class:`Schema` depends on: the column names and their dtypes (numpy's as they
    are, others by name: a categorical dtype's hash would read its categories)."""
    dtypes = tuple(d if isinstance(d, np.dtype) else str(d) for d in frame.dtypes.tolist())
    return tuple(frame.columns.tolist()), dtypes


def plan_schema(
    frame: pd.DataFrame, columns: list[str], categories: dict[str, list[str]]
) -> Schema | None:
    """The :class:`Schema` of ``frame`` for data trained on ``columns`` (``categories``: the
    categorical ones), or None where the full checks must speak (repeated names, a missing
    training column: they raise there with their own messages)."""
    names = [str(c) for c in frame.columns]
    at = {name: j for j, name in enumerate(names)}
    if len(at) < len(names) or any(c not in at for c in [*columns, *categories]):
        return None
    dtypes = frame.dtypes.tolist()
    reads = {}
    for col in columns:
        dtype = dtypes[at[col]]
        if is_time(dtype):
            reads[col] = "time"
        elif col in categories:
            reads[col] = "cells"
        else:
            reads[col] = "number" if is_plain_number(dtype) else "text"
    numeric = tuple(c for c in columns if c not in categories)
    into = tuple(i for i, c in enumerate(numeric) if reads[c] == "number")
    direct = tuple(at[numeric[i]] for i in into)
    whole = all(is_plain_number(d) for d in dtypes)
    boxed = all(isinstance(dtypes[j], np.dtype) for j in direct)
    known = {col: frozenset(levels) for col, levels in categories.items()}
    return Schema(at, reads, numeric, direct, into, whole, boxed, known)


FEW_CELLS = 16
"""A categorical column of at most this many cells is coded in Python (:meth:`Coded.of`)."""


class Coded:
    """A categorical column of a :class:`Table`: each cell's code into ``text`` (-1: missing)
    and ``text``, the distinct values of the rows as text (the form categories are stored in,
    the text every cell of the column would give). The views look each distinct value up once,
    not each cell, with none of a pandas Categorical's per-call cost."""

    __slots__ = ("codes", "text")

    def __init__(self, codes: np.ndarray, text: list[str]):
        self.codes, self.text = codes, text

    def __len__(self) -> int:
        return len(self.codes)

    def used(self) -> set[str]:
        """The text of the values some cell holds (a pandas Categorical's categories that no
        cell holds are left out, as :func:`warn_unseen` leaves them)."""
        return {self.text[c] for c in np.unique(self.codes[self.codes >= 0])}

    @classmethod
    def of(cls, values) -> Coded:
        """The cells ``values`` (an array or a Series; a pandas Categorical by its codes) coded
        by their distinct values, missing cells (None, NaN, NaT, pd.NA) missing."""
        if isinstance(getattr(values, "dtype", None), pd.CategoricalDtype):
            return cls(values.cat.codes.to_numpy(), [str(c) for c in values.cat.categories])
        cells = np.asarray(values)
        if cells.dtype == object and len(cells) <= FEW_CELLS:
            return cls._few(cells)
        codes, uniques = pd.factorize(cells, use_na_sentinel=True)
        return cls(codes, [str(v) for v in uniques])

    @classmethod
    def _few(cls, cells: np.ndarray) -> Coded:
        """:meth:`of` a few object cells in Python, as ``pd.factorize`` codes them (values
        equal by hash and ``==`` share a code, in the order first seen; a missing cell -1),
        without its per-call set-up, most of its cost on a few cells."""
        codes = np.empty(len(cells), dtype=np.intp)
        first: dict = {}
        for i, value in enumerate(cells):
            codes[i] = -1 if pd.isna(value) else first.setdefault(value, len(first))
        return cls(codes, [str(value) for value in first])


class Table:
    """Checked rows of the training columns, each column read once: the numeric columns as
    one read-only float64 block, the categorical ones :class:`Coded` (the views read the codes
    and the distinct values as text, which each view and fold would otherwise make again from
    every cell). The preprocessing views read it as they read the DataFrame of
    :func:`check_columns` (``len(table)``, ``table[name]`` for a categorical column,
    ``table.numeric(names)``) and compute the same matrices from it, with no per-view pandas
    selection."""

    def __init__(self, n: int, block: np.ndarray, names: tuple, cells: dict[str, Coded]):
        block.flags.writeable = False  # shared by every view of one call
        self.n, self.block, self.cells = n, block, cells
        self.index = {name: j for j, name in enumerate(names)}
        self._numeric: dict[tuple, np.ndarray] = {tuple(names): block}

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, name: str) -> Coded:
        return self.cells[name]

    def numeric(self, names) -> np.ndarray:
        """The float64 ``(n, len(names))`` matrix of these numeric columns, in that order."""
        key = tuple(names)
        if key not in self._numeric:
            self._numeric[key] = self.block[:, [self.index[c] for c in key]]
        return self._numeric[key]


def read_table(frame: pd.DataFrame, schema: Schema, categories: dict[str, list[str]]) -> Table:
    """The :class:`Table` of ``frame`` (of schema ``schema``, planned with ``categories``):
    the values and the warnings of :func:`check_columns` of :func:`as_frame`, each column read
    once (a frame of mixed dtypes as one object array where ``schema.boxed``)."""
    boxed = None if schema.whole or not schema.boxed else frame.to_numpy(dtype=object)
    block = np.empty((len(frame), len(schema.numeric)))
    if schema.direct:
        if schema.whole:
            values = frame.to_numpy(dtype=np.float64, na_value=np.nan)[:, list(schema.direct)]
        elif boxed is not None:
            values = boxed[:, list(schema.direct)].astype(np.float64)
        else:
            values = frame.iloc[:, list(schema.direct)]
            values = values.to_numpy(dtype=np.float64, na_value=np.nan)
        block[:, list(schema.into)] = values
    for i, col in enumerate(schema.numeric):  # as check_columns: these warnings first
        if schema.reads[col] != "number":
            values = frame.iloc[:, schema.at[col]]
            if schema.reads[col] == "time":
                block[:, i] = time_as_number(values).to_numpy(np.float64, na_value=np.nan)
            else:
                block[:, i] = numbers_from_text(col, values, stacklevel=4)
    cells = {}
    for col in categories:
        j = schema.at[col]
        if schema.reads[col] == "time":
            values = time_as_number(frame.iloc[:, j])
        else:
            values = boxed[:, j] if boxed is not None else frame.iloc[:, j]
        coded = cells[col] = Coded.of(values)
        unseen = sorted(coded.used() - schema.known[col])
        if unseen:
            warn_unseen_levels(col, unseen, stacklevel=4)
    return Table(len(frame), block, schema.numeric, cells)


def stratified_rows(y: np.ndarray, n: int, random_state) -> np.ndarray:
    """Sorted indices of ``n`` of the rows of ``y`` (all when there are no more), drawn without
    replacement and stratified, so a model or detector trained on fewer rows (a kernel SVM,
    k-NN, a detector's sample) sees the classes as the whole table has them: each class keeps
    its share (largest remainders round up; a class present keeps a row while ``n`` allows).
    For a real ``y`` (regression) the strata are ten quantile bins. The same ``y``, ``n`` and
    seed give the same rows."""
    y = np.asarray(y)
    if n >= y.size:
        return np.arange(y.size)
    labels = y
    if labels.dtype.kind == "f":
        labels = np.searchsorted(np.quantile(labels, np.linspace(0, 1, 11)[1:-1]), labels)
    strata, codes = np.unique(labels, return_inverse=True)
    counts = np.bincount(codes, minlength=strata.size)
    quota = counts * n / y.size
    take = np.minimum(np.maximum(np.floor(quota).astype(int), 1), counts)
    while take.sum() > n:  # the one row of each stratum may overshoot a tiny n
        take[np.argmax(take)] -= 1
    for j in np.argsort(-(quota - np.floor(quota)), kind="stable"):
        if take.sum() >= n:
            break
        take[j] = min(take[j] + 1, counts[j])
    rng = np.random.default_rng(random_state)
    picked = [
        rng.choice(np.flatnonzero(codes == j), take[j], replace=False) for j in range(strata.size)
    ]
    return np.sort(np.concatenate(picked))
