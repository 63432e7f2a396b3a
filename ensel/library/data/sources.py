"""Training data that stays where it is: a parquet path (a file, a directory or a glob) or a
dask DataFrame. The client reads only the labels and a summary of each part (row group or
partition, merged by :mod:`ensel.library.data.partitions` into the checks a pandas frame gets);
the training rows are read by whoever fits: each worker opens the parquet files itself, or
receives the dask DataFrame's partitions, persisted on the cluster, from their workers.

:class:`SourcedData` is the builder's ``TrainingData`` for such input. It pickles as its
source, plan, labels and folds (a small payload); unpickling it (on a worker, once per
build) reads the parts and gives a plain ``TrainingData`` with the same rows, dtypes and
fingerprint as ``prepare`` gives on the whole table in memory.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.utils.validation import _num_samples

from ..._imports import optional
from .partitions import ColumnPlan, apply_plan, merge, row_hashes, summarize
from .training import TrainingData, canonical_frame, prepare

__all__ = [
    "ParquetParts",
    "ParquetTable",
    "SourcedData",
    "is_dask_frame",
    "is_source",
    "n_classes",
    "n_rows",
    "open_parquet",
    "parquet_errors",
    "parquet_files",
    "prepare_source",
    "read_columns",
]

PARQUET_SUFFIXES = (".parquet", ".pq", ".parq")


@dataclass(frozen=True)
class ParquetTable:
    """A parquet path (a file, a directory or a glob) and the columns to read as features
    (None: every column but the label's, when ``y`` names it)."""

    path: str
    columns: tuple[str, ...] | None = None


class _Unreadable(ValueError):
    """The one-line error of :func:`parquet_errors` (kept as it is by an enclosing one)."""


@contextlib.contextmanager
def parquet_errors(path):
    """Inside, what pyarrow cannot read in the parquet file ``path`` (its ``ArrowInvalid`` is a
    ValueError, its I/O errors OSErrors) becomes one ValueError that names the file and says
    what to do: pyarrow's own message ("Parquet magic bytes not found in footer") names none."""
    try:
        yield
    except _Unreadable:
        raise  # said already, by a parquet_errors inside this one
    except (ValueError, OSError) as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise _Unreadable(
            f"{os.fspath(path)} is not a readable parquet file ({reason}); check that it was "
            "written completely as parquet, or give a CSV file"
        ) from None


def open_parquet(path):
    """``pyarrow.parquet.ParquetFile`` of one file; a file pyarrow cannot read is the one-line
    error of :func:`parquet_errors`."""
    pq = optional("pyarrow.parquet", "reading parquet")
    with parquet_errors(path):
        return pq.ParquetFile(path)


def read_columns(path, names: list[str]) -> pd.DataFrame:
    """Only the columns ``names`` of a parquet path (labels, groups: small), a clear error
    naming any that are missing."""
    pq = optional("pyarrow.parquet", "reading parquet")
    files = parquet_files(path)
    have = ParquetParts.open(files).columns
    missing = [n for n in names if n not in have]
    if missing:
        raise ValueError(f"column(s) {missing} are not in {os.fspath(path)}: {list(have)[:20]}")
    frames = []
    for f in files:
        with parquet_errors(f):
            frames.append(pq.read_table(f, columns=list(names)).to_pandas())
    return pd.concat(frames, ignore_index=True)


def is_dask_frame(X) -> bool:
    """Whether X is a dask DataFrame (or Series), without importing dask."""
    return type(X).__module__.startswith("dask.") and hasattr(X, "npartitions")


def _is_parquet_path(X) -> bool:
    if isinstance(X, ParquetTable):
        return True
    if not isinstance(X, str | os.PathLike):
        return False
    text = os.fspath(X)
    return text.lower().endswith(PARQUET_SUFFIXES) or Path(text).is_dir() or glob.has_magic(text)


def is_source(X) -> bool:
    """Whether X is input this module reads in parts: a parquet path or glob, a dask frame."""
    return is_dask_frame(X) or _is_parquet_path(X)


def parquet_files(path) -> list[str]:
    """The parquet files of ``path`` (a file, a directory of them, or a glob), sorted; a clear
    error when there are none."""
    text = path.path if isinstance(path, ParquetTable) else os.fspath(path)
    if Path(text).is_dir():
        files = [str(p) for p in Path(text).rglob("*") if p.suffix.lower() in PARQUET_SUFFIXES]
    elif glob.has_magic(text):
        files = glob.glob(text, recursive=True)
    else:
        files = [text] if Path(text).is_file() else []
    if not files:
        raise FileNotFoundError(
            f"X={text!r}: no parquet file there; give a .parquet file, a directory of them or a "
            "glob such as 'data/*.parquet'"
        )
    return sorted(files)


@dataclass(frozen=True)
class ParquetParts:
    """Row groups of parquet files: ``units[i] = (file, row group)``; ``columns`` are read."""

    units: tuple[tuple[str, int], ...]
    columns: tuple[str, ...]

    @classmethod
    def open(cls, files: list[str], drop: tuple[str, ...] = ()) -> ParquetParts:
        units, names = [], None
        for f in files:
            meta = open_parquet(f)
            schema = [n for n in meta.schema_arrow.names if not n.startswith("__index_level_")]
            if names is None:
                names = schema
            elif schema != names:
                raise ValueError(
                    f"parquet file {f!r} has columns {schema[:10]}, but {files[0]!r} has "
                    f"{names[:10]}; every file of one table must share its columns"
                )
            units += [(f, g) for g in range(meta.num_row_groups)]
        columns = tuple(n for n in names or () if n not in drop)
        return cls(tuple(units), columns)

    def read(self, i: int) -> pd.DataFrame:
        """Row group ``i`` as a pandas frame (the dtypes ``pandas.read_parquet`` gives)."""
        path, group = self.units[i]
        with parquet_errors(path):
            table = open_parquet(path).read_row_group(group, columns=list(self.columns))
        return table.to_pandas(ignore_metadata=False).reset_index(drop=True)

    def __len__(self) -> int:
        return len(self.units)


def _read_summary(parts: ParquetParts, i: int):
    return summarize(parts.read(i))


def _read_hashes(parts: ParquetParts, i: int, plan: ColumnPlan) -> np.ndarray:
    return row_hashes(parts.read(i), plan)


@dataclass(frozen=True)
class SourcedData(TrainingData):
    """``TrainingData`` whose rows are read where it is unpickled (see the module docstring).
    On the client ``X`` is an empty frame of the training columns (their dtypes)."""

    plan: ColumnPlan | None = None
    parts: Any = None  # ParquetParts, or the partitions (futures on the client) of a dask frame
    fingerprint_: dict = field(default_factory=dict)

    in_memory = False
    """The rows are read where the data is unpickled, not held here."""

    @property
    def box(self) -> pd.DataFrame:
        """Rows that span the data's bounding box (see ``ColumnPlan.box``)."""
        return self.plan.box()

    def fingerprint(self) -> dict[str, str]:
        return dict(self.fingerprint_)

    def load(self) -> TrainingData:
        """The plain TrainingData, every row read here (for fits in this process)."""
        return _materialize(self.parts, self.plan, self._fields())

    def _fields(self) -> tuple:
        return (
            self.y,
            self.classes,
            self.columns,
            self.folds,
            self.groups,
            self.task,
            self.input_columns,
            self.dropped,
        )

    def __reduce__(self):
        return _materialize, (self.parts, self.plan, self._fields())


def _materialize(parts, plan: ColumnPlan, fields: tuple) -> TrainingData:
    """The plain TrainingData of a SourcedData: every part read and cleaned by the plan, its
    float columns laid out as ``prepare`` lays out a frame in memory (``canonical_frame``), so
    both compute the same numbers."""
    if isinstance(parts, ParquetParts):
        frames = [apply_plan(parts.read(i), plan) for i in range(len(parts))]
    else:  # a dask frame's partitions, resolved to pandas frames by the executor
        frames = [apply_plan(p, plan) for p in parts]
    X = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    return TrainingData(canonical_frame(X), *fields)


def n_rows(X) -> int:
    """Rows of X (a parquet source's from its metadata, a dask frame's by counting)."""
    if is_dask_frame(X):
        return int(X.shape[0].compute())
    if _is_parquet_path(X):
        return sum(open_parquet(f).metadata.num_rows for f in parquet_files(X))
    return _num_samples(X)  # an array-like without len() too (it has __array__ or a shape)


def n_classes(X, y) -> int:
    """Distinct labels of ``y`` (an array, a dask Series, or the name of a column of X)."""
    if isinstance(y, str) and is_dask_frame(X):
        y = X[y]
    if is_dask_frame(y):
        return int(y.nunique().compute())
    if isinstance(y, str) and _is_parquet_path(X):
        files = parquet_files(X)
        y, _ = _labels_of(ParquetParts.open(files), files, y)
    return int(pd.Series(np.ravel(y)).nunique())


def _labels_of(parts: ParquetParts, files: list[str], y) -> tuple[np.ndarray, ParquetParts]:
    """``(y, parts without the label column)`` when ``y`` names a column of the files."""
    if isinstance(y, str):
        if y not in ParquetParts.open(files[:1]).columns:
            raise ValueError(
                f"y={y!r}: no such column in the parquet files; they have "
                f"{list(parts.columns)[:10]}"
            )
        pq = optional("pyarrow.parquet", "reading parquet")
        labels = []
        for f in files:
            with parquet_errors(f):
                labels.append(pq.read_table(f, columns=[y]).column(y).to_pandas().to_numpy())
        rest = replace(parts, columns=tuple(c for c in parts.columns if c != y))
        return np.concatenate(labels), rest
    return y, parts


def prepare_source(
    X,
    y,
    *,
    cv,
    groups=None,
    hillclimb_fraction: float = 0.2,
    random_state: int = 0,
    task: str = "classification",
    client=None,
) -> TrainingData:
    """``prepare`` for a parquet path or a dask frame: the labels (``y`` an array, a dask
    Series, or the name of a column of X) and folds on this machine, the column checks per
    part on ``client``'s workers (on this machine, one row group at a time, without one). A
    dask frame without a client is computed here and prepared as a pandas frame."""
    options = dict(
        cv=cv,
        groups=groups,
        hillclimb_fraction=hillclimb_fraction,
        random_state=random_state,
        task=task,
    )
    if is_dask_frame(X):
        if isinstance(y, str):
            X, y = X.drop(columns=[y]), X[y]
        if client is None:
            frame = X.compute()
            labels = y.compute() if is_dask_frame(y) else y
            return prepare(frame, np.asarray(labels), **options)
        parts = client.compute(X.to_delayed())  # persisted on the workers, one per partition
        labels = y.compute() if is_dask_frame(y) else y
        summaries = client.gather(client.map(summarize, parts, pure=False))
        plan = merge(summaries)
        hashes = (client.submit(row_hashes, p, plan, pure=False) for p in parts)
        return _sourced(parts, plan, np.asarray(labels), hashes, options)
    files = parquet_files(X)
    parts = ParquetParts.open(files)
    if isinstance(X, ParquetTable) and X.columns is not None:
        missing = [c for c in X.columns if c not in parts.columns]
        if missing:
            raise ValueError(f"column(s) {missing} are not in {X.path}: {list(parts.columns)[:20]}")
        parts = replace(parts, columns=tuple(X.columns))
    labels, parts = _labels_of(parts, files, y)
    units = range(len(parts))
    if client is not None:
        summaries = client.gather(client.map(_read_summary, [parts] * len(parts), units))
        plan = merge(summaries)
        hashes = (client.submit(_read_hashes, parts, i, plan, pure=False) for i in units)
    else:
        plan = merge([_read_summary(parts, i) for i in units])
        hashes = (_Done(_read_hashes(parts, i, plan)) for i in units)
    return _sourced(parts, plan, np.asarray(labels), hashes, options)


class _Done:
    """A computed value with a future's ``result()``."""

    def __init__(self, value) -> None:
        self.value = value

    def result(self):
        return self.value


def _sourced(parts, plan: ColumnPlan, y: np.ndarray, hashes, options: dict) -> SourcedData:
    """The SourcedData of checked parts: folds from the labels alone (``prepare`` on a
    one-column stand-in of as many rows, so the rules for labels, groups and folds are the
    same), the fingerprint from the parts' row hashes in order."""
    if y.ndim == 2 and y.shape[1] == 1:
        y = y.ravel()
    if y.ndim == 1 and y.shape[0] != plan.n_rows:
        raise ValueError(f"X has {plan.n_rows} rows but y has {y.shape[0]}; they must match")
    stand_in = pd.DataFrame({"rows": np.zeros(plan.n_rows, dtype=np.int8)})
    labels = prepare(stand_in, y, **options)
    schema = plan.schema()
    h = hashlib.sha256()
    h.update(repr(list(map(str, schema.columns))).encode())
    h.update(repr([str(t) for t in schema.dtypes]).encode())
    for future in hashes:  # one part's hashes at a time on this machine
        h.update(future.result().tobytes())
    fingerprint = {**labels.fingerprint(), "X": h.hexdigest()[:16]}
    return SourcedData(
        schema,
        labels.y,
        labels.classes,
        plan.columns,
        labels.folds,
        labels.groups,
        labels.task,
        plan.input_columns,
        dict(plan.dropped),
        plan=plan,
        parts=parts,
        fingerprint_=fingerprint,
    )
