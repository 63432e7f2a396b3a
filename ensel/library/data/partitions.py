"""Column checks of a table read in parts (parquet row groups, dask partitions): a small summary
per part, merged into the same decisions, warnings and errors that :mod:`ensel.data` makes on
the whole table in memory (odd cells, infinities, numeric columns with stray text tokens,
all-missing and constant columns, id-like columns, categories), and the plan that turns each
part into the rows a model trains on. The parts never meet on one machine."""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ...data import (
    ID_MIN_ROWS,
    MAX_STRAY_TOKENS,
    Columns,
    _infinite,
    _is_categorical,
    _is_missing,
    _warn_tokens,
    left_out,
    times_as_numbers,
    warn_id,
)

__all__ = ["ColumnPlan", "PartSummary", "apply_plan", "merge", "row_hashes", "summarize"]

log = logging.getLogger(__name__)


@dataclass
class ColumnPart:
    """What one part says about one column (see :func:`summarize`)."""

    n_missing: int
    categorical: bool  # non-numeric or bool dtype (ensel.data's rule)
    integer: bool
    odd: str | None = None  # type name of the first cell that is neither number nor string
    infinite: bool = False
    low: float = np.nan  # numeric range (nan: no value)
    high: float = np.nan
    values: set | None = None  # distinct values of a categorical column
    distinct: bool = False  # every value of the part distinct and present
    ids: np.ndarray | None = None  # an integer column's values when ``distinct``
    # a text column's parse as numbers: None when some cell is not a string or number
    n_failed: int | None = None
    tokens: set | None = None  # None: more than MAX_STRAY_TOKENS distinct tokens
    parsed_low: float = np.nan
    parsed_high: float = np.nan
    parsed_infinite: bool = False  # a cell parses as infinite ("inf")


@dataclass
class PartSummary:
    """One part's rows, empty frame (its dtypes) and column summaries."""

    n_rows: int
    empty: pd.DataFrame
    columns: dict[str, ColumnPart]


def _frame(part: pd.DataFrame) -> pd.DataFrame:
    frame = part.reset_index(drop=True)
    frame.columns = [str(c) for c in frame.columns]
    return times_as_numbers(frame)


def _range(values: np.ndarray) -> tuple[float, float]:
    finite = values[np.isfinite(values)]
    return (float(finite.min()), float(finite.max())) if finite.size else (np.nan, np.nan)


def summarize(part: pd.DataFrame) -> PartSummary:
    """The summary of one part: per column the counts, ranges, distinct values and stray
    tokens that :func:`merge` needs (small, except the categories of text columns)."""
    frame = _frame(part)
    n = len(frame)
    out = {}
    for name in frame.columns:
        col = frame[name]
        n_missing = int(col.isna().sum())
        categorical = _is_categorical(col)
        integer = pd.api.types.is_integer_dtype(col) and not pd.api.types.is_bool_dtype(col)
        c = ColumnPart(n_missing, categorical, integer)
        if col.dtype == object:
            for v in col:
                if not isinstance(v, str | int | float | bool | np.generic) and not _is_missing(v):
                    c.odd = type(v).__name__
                    break
        if c.odd is not None:  # merge raises ensel.data's error for it
            out[name] = c
            continue
        if not categorical:
            values = col.to_numpy(np.float64, na_value=np.nan)
            c.infinite = bool(np.isinf(values).any())
            c.low, c.high = _range(values)
            c.distinct = integer and n_missing == 0 and col.nunique() == n
            if c.distinct:
                c.ids = col.to_numpy()
        else:
            present = col[col.notna()]
            c.values = set(present.unique())
            c.distinct = n_missing == 0 and len(c.values) == n
            if not isinstance(col.dtype, pd.CategoricalDtype) and not pd.api.types.is_bool_dtype(
                col
            ):
                _parse(c, present)
        out[name] = c
    return PartSummary(n, frame.iloc[:0], out)


def _parse(c: ColumnPart, present: pd.Series) -> None:
    """A text column's cells parsed as numbers, as ``ensel.data._stray_tokens`` parses them."""
    if not all(isinstance(v, str | int | float | np.number) for v in present):
        return
    text = present.astype(str).str.strip()
    parsed = pd.to_numeric(text, errors="coerce")
    failed = parsed.isna().to_numpy()
    c.n_failed = int(failed.sum())
    tokens = set(text[failed])
    c.tokens = tokens if len(tokens) <= MAX_STRAY_TOKENS else None
    numbers = parsed.to_numpy(np.float64, na_value=np.nan)
    c.parsed_low, c.parsed_high = _range(numbers)
    c.parsed_infinite = bool(np.isinf(numbers).any())


@dataclass
class ColumnPlan:
    """The merged decisions: the training columns, their kinds and categories, the text
    columns read as numbers, the columns left out, and each numeric column's range."""

    n_rows: int
    input_columns: tuple[str, ...]
    dtypes: dict  # input column -> dtype of the whole table
    coerced: tuple[str, ...]
    dropped: dict[str, str]
    columns: Columns
    low: dict[str, float] = field(default_factory=dict)
    high: dict[str, float] = field(default_factory=dict)

    @property
    def kept(self) -> list[str]:
        return [c for c in self.input_columns if c not in self.dropped]

    def schema(self) -> pd.DataFrame:
        """An empty frame with the training columns and their dtypes."""
        frame = pd.DataFrame({c: pd.Series(dtype=self.dtypes[c]) for c in self.input_columns})
        for c in self.coerced:
            frame[c] = frame[c].astype(np.float64)
        return frame[self.kept]

    def box(self) -> pd.DataFrame:
        """A few rows spanning the data's bounding box: each numeric column's minimum and
        maximum, every category of each categorical column (what the risk detectors'
        background is drawn from)."""
        n = max([2, *(len(c) for c in self.columns.categories)])
        data = {}
        for name in self.kept:
            if name in self.columns.categorical:
                cats = list(self.columns.categories[self.columns.categorical.index(name)])
                data[name] = [cats[i % len(cats)] if cats else None for i in range(n)]
            else:
                lo, hi = self.low.get(name, np.nan), self.high.get(name, np.nan)
                data[name] = np.resize(np.array([lo, hi], dtype=np.float64), n)
        return pd.DataFrame(data, columns=self.kept)


def merge(parts: list[PartSummary], stacklevel: int = 4) -> ColumnPlan:
    """The decisions of ``ensel.data.check_features`` and ``clean_columns`` on the whole table,
    from its parts' summaries: the same errors, warnings and log notes, in the same order."""
    n = sum(p.n_rows for p in parts)
    empty = pd.concat([p.empty for p in parts]) if parts else pd.DataFrame()
    names = tuple(empty.columns)
    if len(names) == 0:
        raise ValueError(f"X has 0 feature(s) (shape={(n, 0)}) while a minimum of 1 is required.")
    if n == 0:
        raise ValueError(
            f"X has 0 sample(s) (shape={(0, len(names))}) while a minimum of 1 is required."
        )
    for name in names:
        odd = next((p.columns[name].odd for p in parts if p.columns[name].odd), None)
        if odd is not None:
            raise TypeError(
                f"X column {name!r} holds a {odd}: argument must be a string or a number"
            )
    infinite = [c for c in names if any(p.columns[c].infinite for p in parts)]
    if infinite:
        raise _infinite(infinite)
    cols = {name: [p.columns[name] for p in parts] for name in names}
    categorical = {name: _is_categorical(empty[name]) for name in names}
    coerced, missing, low, high = [], {}, {}, {}
    for name in names:
        pieces = cols[name]
        missing[name] = sum(c.n_missing for c in pieces)
        if categorical[name]:
            tokens = _stray(pieces, n - missing[name])
            if tokens is not None:
                if any(c.parsed_infinite for c in pieces):  # as coerce_numeric_text refuses it
                    raise _infinite([name])
                n_cells = sum(c.n_failed for c in pieces)
                _warn_tokens(name, sorted(tokens), n_cells, stacklevel=stacklevel)
                coerced.append(name)
                missing[name] += n_cells
                low[name] = np.nanmin([c.parsed_low for c in pieces] + [np.nan]) if n else np.nan
                high[name] = np.nanmax([c.parsed_high for c in pieces] + [np.nan])
                continue
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN slices
                low[name] = float(np.nanmin([c.low for c in pieces]))
                high[name] = float(np.nanmax([c.high for c in pieces]))
    values = {
        name: set().union(*(c.values for c in cols[name]))
        for name in names
        if categorical[name] and name not in coerced
    }
    dropped: dict[str, str] = {}
    for name in names:
        if missing[name] == n:
            dropped[name] = "missing in every row"
        elif missing[name] == 0:
            distinct = len(values[name]) if name in values else _n_distinct_numeric(low, high, name)
            if distinct == 1:
                dropped[name] = "constant"
    dropped = left_out(dropped, len(names), stacklevel=stacklevel - 1)
    kept = [c for c in names if c not in dropped]
    if n >= ID_MIN_ROWS:
        for name in kept:
            if _is_id(cols[name], values.get(name), n, name in coerced):
                warn_id(name, stacklevel=stacklevel - 1)
    cat_names = tuple(c for c in kept if categorical[c] and c not in coerced)
    columns = Columns(
        tuple(c for c in kept if c not in cat_names),
        cat_names,
        tuple(tuple(sorted(values[c], key=str)) for c in cat_names),
    )
    return ColumnPlan(
        n,
        names,
        dict(empty.dtypes),
        tuple(coerced),
        dropped,
        columns,
        {c: low[c] for c in columns.numeric},
        {c: high[c] for c in columns.numeric},
    )


def _n_distinct_numeric(low: dict, high: dict, name: str) -> int:
    """1 when a numeric column holds one value (its range is a point), else 2 (at least)."""
    return 1 if low[name] == high[name] else 2


def _stray(pieces: list[ColumnPart], n_present: int) -> set | None:
    """The stray tokens of a text column that is numeric but for a few of them (the rule of
    ``ensel.data._stray_tokens``), or None."""
    if n_present == 0 or any(c.n_failed is None or c.tokens is None for c in pieces):
        return None
    tokens = set().union(*(c.tokens for c in pieces))
    n_failed = sum(c.n_failed for c in pieces)
    if not tokens or len(tokens) > MAX_STRAY_TOKENS or n_failed / n_present > 0.5:
        return None
    return tokens


def _is_id(pieces: list[ColumnPart], values: set | None, n: int, coerced: bool) -> bool:
    """Whether a column has a distinct value in every row (text, bool or integer columns)."""
    if coerced or not all(c.distinct for c in pieces):
        return False
    if values is not None:
        return len(values) == n
    if not all(c.integer for c in pieces):
        return False
    ids = np.concatenate([c.ids for c in pieces])
    return np.unique(ids).size == n


def apply_plan(part: pd.DataFrame, plan: ColumnPlan) -> pd.DataFrame:
    """One part as the models see it: the whole table's dtypes, text columns with stray tokens
    as numbers (the tokens missing), the left-out columns dropped; the same rows
    ``ensel.data.clean_columns`` gives on the whole table."""
    frame = _frame(part)
    missing = [c for c in plan.input_columns if c not in frame.columns]
    if missing:
        raise ValueError(f"lacks column(s) {missing[:10]} of the table's schema")
    frame = frame[list(plan.input_columns)]
    cast = {
        c: t
        for c, t in plan.dtypes.items()
        if frame[c].dtype != t and c not in plan.coerced and c not in plan.dropped
    }
    if cast:
        frame = frame.astype(cast)
    for name in plan.coerced:
        col = frame[name]
        present = col[col.notna()]
        numbers = pd.Series(np.nan, index=col.index, dtype=np.float64)
        parsed = pd.to_numeric(present.astype(str).str.strip(), errors="coerce")
        numbers[present.index] = parsed.to_numpy(np.float64)
        frame[name] = numbers
    return frame[plan.kept]


def row_hashes(part: pd.DataFrame, plan: ColumnPlan) -> np.ndarray:
    """pandas' row hashes of one part after :func:`apply_plan` (the fingerprint of the whole
    table is the hash of every part's, in order)."""
    return pd.util.hash_pandas_object(apply_plan(part, plan), index=False).to_numpy()
