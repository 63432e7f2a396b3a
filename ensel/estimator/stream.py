"""Scoring a table larger than memory on this machine: the rows of a parquet path are read a
batch at a time (row groups, split where larger than ``batch_rows``), predicted, and appended
to a parquet or CSV file, so memory holds one batch and its predictions."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pandas as pd

from .._imports import optional
from ..library.data.sources import open_parquet, parquet_errors, parquet_files

__all__ = ["BATCH_ROWS", "iter_parquet", "write_batches"]

BATCH_ROWS = 100_000
"""Rows read and predicted at a time."""


def iter_parquet(path, batch_rows: int = BATCH_ROWS) -> Iterator[pd.DataFrame]:
    """The rows of a parquet path (a file, a directory or a glob), ``batch_rows`` at most at
    a time, in order, as pandas frames with the dtypes ``pandas.read_parquet`` gives."""
    for f in parquet_files(path):
        with parquet_errors(f):  # an unreadable file: one line that names it
            batches = open_parquet(f).iter_batches(batch_size=batch_rows)
            for batch in batches:
                yield batch.to_pandas()


def write_batches(
    batches: Iterator[pd.DataFrame], score: Callable[[pd.DataFrame], pd.DataFrame], out
) -> int:
    """Score every batch and append the results to ``out`` (parquet when it ends in
    .parquet, CSV otherwise), written to a temporary name and renamed at the end so that a
    crash leaves no half file under ``out``; the number of rows written."""
    out = Path(out)
    tmp = out.with_name(f".{out.name}.partial")
    parquet = out.suffix.lower() in (".parquet", ".pq", ".parq")
    writer, n = None, 0
    try:
        for batch in batches:
            scored = score(batch)
            if parquet:
                pa = optional("pyarrow", "writing parquet")
                table = pa.Table.from_pandas(scored, preserve_index=False)
                if writer is None:
                    writer = optional("pyarrow.parquet", "writing parquet").ParquetWriter(
                        tmp, table.schema
                    )
                writer.write_table(table.cast(writer.schema))
            else:
                scored.to_csv(tmp, mode="a" if n else "w", header=not n, index=False)
            n += len(scored)
        if writer is not None:
            writer.close()
            writer = None
        if n == 0 and not tmp.exists():
            raise ValueError("the input has no rows to predict")
        os.replace(tmp, out)
    finally:
        if writer is not None:
            writer.close()
        if tmp.exists():
            tmp.unlink()
    return n
