"""FittedMembers: some members of a built library with the fitted runs behind them, which predict
new rows for those members only. It is what a model keeps of its library (it pickles without the
store); ``Library.predict`` is the case of any members of one library."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..data import as_frame, check_columns

__all__ = ["FittedMembers"]


@dataclass
class FittedMembers:
    """Members ``ids`` of a library, in that order, and what predicts them.

    ``runs`` maps each run id to its fitted run (an object whose ``predict(frame)`` gives
    ``(members of the run, n, C)`` test-time probabilities, e.g. ``runs.FittedRun``), in the
    order the members first name them; member ``i`` is row ``offsets[i]`` of its run
    ``run_of[i]``. ``columns`` and ``categories`` are the training columns and the categories
    seen in training; ``classes`` the class labels; ``task`` classification or regression.

    The contract of :meth:`predict` (callers rely on it; a faster implementation keeps it): it
    takes X as given to the library (a DataFrame or array with the training columns), returns
    exactly these members' test-time probabilities, ``(len(ids), n)`` positive class for binary
    problems and ``(len(ids), n, C)`` otherwise (``(len(ids), n)`` predicted values for
    regression), in the order of ``ids``, equal to what
    ``Library.predict(X, ids)`` returns. How it gets there is free: it may transform each
    preprocessing view once per fold, compute only the stages and calibrations of these
    members, or predict runs in parallel batches."""

    ids: tuple[str, ...]
    runs: dict[str, Any]
    run_of: np.ndarray
    offsets: np.ndarray
    columns: tuple[str, ...]
    categories: dict[str, list[str]]
    classes: np.ndarray
    task: str = "classification"
    _rows: dict[str, np.ndarray] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.run_of = np.asarray(self.run_of, dtype=object)
        self.offsets = np.asarray(self.offsets, dtype=np.int64)
        self._rows = {r: np.flatnonzero(self.run_of == r) for r in self.runs}

    @property
    def n_members(self) -> int:
        return len(self.ids)

    def frame(self, X) -> pd.DataFrame:
        """X as a DataFrame of the training columns in training order: a clear error for
        missing columns, a warning for categories never seen in training."""
        return check_columns(as_frame(X), list(self.columns), self.categories)

    def predict(self, X) -> np.ndarray:
        """Test-time probabilities of these members on the rows of X (see the class docstring
        for the contract): ``(m, n)`` for binary problems, ``(m, n, C)`` otherwise, ``(m, n)``
        values for regression."""
        frame = self.frame(X)
        regression = self.task == "regression"
        out = np.empty((len(self.ids), len(frame), 1 if regression else self.classes.size))
        for run_id, fitted in self.runs.items():
            rows = self._rows[run_id]
            out[rows] = fitted.predict(frame)[self.offsets[rows]]
        if regression:
            return out[..., 0]
        return out[..., 1] if self.classes.size == 2 else out
