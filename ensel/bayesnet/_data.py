"""Checks and encodes the tasks' data frames: discrete columns only, complete rows, each variable's
states the union over the tasks (with the declared categories of categorical columns, observed or
not), so that every task and every network shares one coding."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["Encoding", "check_frames", "encode_tasks"]


@dataclass
class Encoding:
    """The variables (union over tasks, in first-seen order), their states and, per task, the codes
    (rows x all variables; columns a task lacks hold 0 and are never read) and a mask of the
    variables the task has."""

    variables: list[str]
    states: dict[str, list]
    codes: list[np.ndarray]
    present: list[np.ndarray]

    @property
    def cards(self) -> np.ndarray:
        return np.array([len(self.states[v]) for v in self.variables], dtype=np.int64)

    def encode(self, df: pd.DataFrame, name: str = "data") -> tuple[np.ndarray, np.ndarray]:
        """Codes and variable mask of a new frame under this encoding (states must be known)."""
        _check_frame(df, name)
        index = {v: i for i, v in enumerate(self.variables)}
        unknown = [c for c in df.columns if c not in index]
        if unknown:
            raise ValueError(
                f"{name} has column {unknown[0]!r} that the fitted tasks do not have; "
                f"known variables: {self.variables}"
            )
        codes = np.zeros((len(df), len(self.variables)), dtype=np.int64)
        present = np.zeros(len(self.variables), dtype=bool)
        for col in df.columns:
            j = index[col]
            values = _values(df[col])
            coded = pd.Index(self.states[col]).get_indexer(values)
            if (coded < 0).any():
                bad = values[int(np.flatnonzero(coded < 0)[0])]
                raise ValueError(
                    f"{name}, column {col!r} has state {bad!r} never seen in training; "
                    f"known states: {self.states[col]}"
                )
            codes[:, j] = coded
            present[j] = True
        return codes, present


def _values(series: pd.Series) -> list:
    if isinstance(series.dtype, pd.CategoricalDtype):
        return list(series.astype(object))
    if pd.api.types.is_float_dtype(series.dtype):
        return [int(x) for x in series]
    return list(series)


def _check_frame(df, name: str) -> None:
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"{name} must be a pandas DataFrame, got {type(df).__name__}")
    if df.shape[0] == 0 or df.shape[1] == 0:
        raise ValueError(f"{name} is empty (shape {df.shape}); each task needs rows and columns")
    if df.columns.duplicated().any():
        dup = df.columns[df.columns.duplicated()][0]
        raise ValueError(f"{name} has duplicate column {dup!r}; column names must be unique")
    for col in df.columns:
        s = df[col]
        n_missing = int(s.isna().sum())
        if n_missing:
            raise ValueError(
                f"{name}, column {col!r} has {n_missing} missing values; structure learning "
                "needs complete data: drop or impute those rows first"
            )
        if pd.api.types.is_float_dtype(s.dtype) and not np.all(np.mod(s.to_numpy(), 1) == 0):
            raise ValueError(
                f"{name}, column {col!r} is continuous (non-integer floats); Bayes nets here are "
                "discrete: bin it first (e.g. pandas.cut)"
            )
        if pd.api.types.is_datetime64_any_dtype(s.dtype) or pd.api.types.is_complex_dtype(s.dtype):
            raise ValueError(f"{name}, column {col!r} has dtype {s.dtype}; use discrete values")


def check_frames(dfs, arg: str = "dfs") -> list[pd.DataFrame]:
    """The frames as a list, after the checks (a single DataFrame is refused: pass a list)."""
    if isinstance(dfs, pd.DataFrame) or not isinstance(dfs, list | tuple):
        raise TypeError(
            f"{arg} must be a list of pandas DataFrames (one per task), got {type(dfs).__name__}"
        )
    if len(dfs) == 0:
        raise ValueError(f"{arg} is empty; pass at least one task's DataFrame")
    for t, df in enumerate(dfs):
        _check_frame(df, f"task {t}")
    return list(dfs)


def _sort_states(values) -> list:
    try:
        return sorted(values)
    except TypeError:
        return sorted(values, key=lambda x: (type(x).__name__, str(x)))


def encode_tasks(dfs, arg: str = "dfs") -> Encoding:
    """Check the tasks and code every column as 0..r-1 over the union of its states."""
    dfs = check_frames(dfs, arg)
    variables: list[str] = []
    seen: dict[str, set] = {}
    for df in dfs:
        for col in df.columns:
            if col not in seen:
                variables.append(col)
                seen[col] = set()
            seen[col].update(_values(df[col]))
            if isinstance(df[col].dtype, pd.CategoricalDtype):  # declared states count too
                seen[col].update(df[col].cat.categories)
    if len(dfs) > 1:
        for t, df in enumerate(dfs):
            others = {c for u, d in enumerate(dfs) if u != t for c in d.columns}
            if not set(df.columns) & others:
                raise ValueError(
                    f"task {t} shares no variable with the other tasks; multitask learning "
                    "needs overlapping variables: learn it on its own"
                )
    states = {v: _sort_states(seen[v]) for v in variables}
    enc = Encoding(variables, states, [], [])
    for t, df in enumerate(dfs):
        codes, present = enc.encode(df, f"task {t}")
        enc.codes.append(codes)
        enc.present.append(present)
    return enc
